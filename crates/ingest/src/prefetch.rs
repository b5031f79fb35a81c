//! Reading ahead on a second thread.
//!
//! A pipe or a compressed file costs time to read (the kernel's copy, the
//! decompressor) that a scan on the same thread waits for. [`Prefetch`]
//! moves the reading to its own thread, a few chunks ahead of the
//! consumer, so the two overlap: `cat big.log | coroner analyze -` uses two
//! cores instead of one. Memory stays bounded: at most [`AHEAD`] chunks of
//! [`CHUNK`] bytes are in flight, and their buffers are reused.

use std::io::{self, Read};
use std::sync::mpsc::{sync_channel, Receiver, SyncSender};
use std::thread;

/// Bytes read per chunk.
pub const CHUNK: usize = 1 << 20;
/// Chunks read ahead of the consumer at most.
pub const AHEAD: usize = 4;

/// A reader whose bytes come from `inner`, read on another thread.
pub struct Prefetch {
    chunks: Receiver<io::Result<Chunk>>,
    spare: SyncSender<Vec<u8>>,
    current: Chunk,
    at: usize,
    done: bool,
}

/// A buffer of [`CHUNK`] bytes and how many of them were read (the rest
/// is left as it was, not cleared again for every chunk).
#[derive(Default)]
struct Chunk {
    buffer: Vec<u8>,
    len: usize,
}

impl Chunk {
    fn bytes(&self) -> &[u8] {
        self.buffer.get(..self.len).unwrap_or_default()
    }
}

impl Prefetch {
    pub fn new(mut inner: Box<dyn Read + Send>) -> Prefetch {
        let (send, chunks) = sync_channel::<io::Result<Chunk>>(AHEAD);
        let (spare, buffers) = sync_channel::<Vec<u8>>(AHEAD + 1);
        thread::spawn(move || loop {
            let mut buffer = buffers.try_recv().unwrap_or_default();
            if buffer.len() != CHUNK {
                buffer = vec![0; CHUNK];
            }
            // Fill the chunk (a pipe gives 64 KiB a read) unless the input
            // ends or fails first; a failure after some bytes is sent next.
            let mut len = 0;
            let mut failed = None;
            while len < CHUNK {
                match inner.read(buffer.get_mut(len..).unwrap_or_default()) {
                    Ok(0) => break,
                    Ok(n) => len += n,
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                    Err(e) => {
                        failed = Some(e);
                        break;
                    }
                }
            }
            // The end of the input (or a failure) leaves the chunk short;
            // dropping the sender then tells the reader there is no more.
            if len > 0 && send.send(Ok(Chunk { buffer, len })).is_err() {
                return;
            }
            if let Some(e) = failed {
                let _ = send.send(Err(e));
                return;
            }
            if len < CHUNK {
                return;
            }
        });
        Prefetch {
            chunks,
            spare,
            current: Chunk::default(),
            at: 0,
            done: false,
        }
    }
}

impl Read for Prefetch {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        while self.at >= self.current.len {
            if self.done {
                return Ok(0);
            }
            match self.chunks.recv() {
                Ok(Ok(chunk)) => {
                    let used = std::mem::replace(&mut self.current, chunk);
                    if used.buffer.len() == CHUNK {
                        let _ = self.spare.try_send(used.buffer);
                    }
                    self.at = 0;
                }
                Ok(Err(e)) => {
                    self.done = true;
                    return Err(e);
                }
                Err(_) => self.done = true,
            }
        }
        let rest = self.current.bytes().get(self.at..).unwrap_or_default();
        let n = rest.len().min(buf.len());
        buf.get_mut(..n)
            .unwrap_or_default()
            .copy_from_slice(rest.get(..n).unwrap_or_default());
        self.at += n;
        Ok(n)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::indexing_slicing)]
mod tests {
    use super::*;

    /// Gives its bytes a few at a time, then fails.
    struct Trickle {
        data: Vec<u8>,
        at: usize,
        fail_at_end: bool,
    }

    impl Read for Trickle {
        fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
            if self.at >= self.data.len() {
                return if self.fail_at_end {
                    Err(io::Error::other("cable pulled"))
                } else {
                    Ok(0)
                };
            }
            let n = buf.len().min(7).min(self.data.len() - self.at);
            buf[..n].copy_from_slice(&self.data[self.at..self.at + n]);
            self.at += n;
            Ok(n)
        }
    }

    #[test]
    fn the_bytes_arrive_in_order() {
        let data: Vec<u8> = (0..3 * CHUNK + 17).map(|i| (i % 251) as u8).collect();
        let mut reader = Prefetch::new(Box::new(io::Cursor::new(data.clone())));
        let mut got = Vec::new();
        reader.read_to_end(&mut got).unwrap();
        assert_eq!(got, data);
        let mut small = Prefetch::new(Box::new(Trickle {
            data: data[..1000].to_vec(),
            at: 0,
            fail_at_end: false,
        }));
        let mut got = Vec::new();
        small.read_to_end(&mut got).unwrap();
        assert_eq!(got, data[..1000]);
    }

    #[test]
    fn a_read_error_reaches_the_consumer_after_the_bytes_before_it() {
        let mut reader = Prefetch::new(Box::new(Trickle {
            data: b"line one\nline two\n".to_vec(),
            at: 0,
            fail_at_end: true,
        }));
        let mut got = [0u8; 64];
        let mut total = 0;
        let err = loop {
            match reader.read(&mut got[total..]) {
                Ok(0) => panic!("ended without the error"),
                Ok(n) => total += n,
                Err(e) => break e,
            }
        };
        assert_eq!(&got[..total], b"line one\nline two\n");
        assert_eq!(err.to_string(), "cable pulled");
    }
}
