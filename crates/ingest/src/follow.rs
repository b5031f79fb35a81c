use std::io::{self, Read};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

/// How long to wait before looking again at a file that has no more bytes.
const POLL: Duration = Duration::from_millis(200);

/// Reads a file that is still being written, as `tail -f` does: at its
/// end, waits for more bytes until `stop` is set.
#[derive(Debug)]
pub struct Follow<'a, R> {
    inner: R,
    stop: &'a AtomicBool,
}

impl<'a, R: Read> Follow<'a, R> {
    /// Follows `inner` until `stop` becomes true.
    pub fn new(inner: R, stop: &'a AtomicBool) -> Self {
        Follow { inner, stop }
    }
}

impl<R: Read> Read for Follow<'_, R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        loop {
            let n = self.inner.read(buf)?;
            if n > 0 || buf.is_empty() || self.stop.load(Ordering::Relaxed) {
                return Ok(n);
            }
            std::thread::sleep(POLL);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stops_at_the_end_once_told_to() {
        let stop = AtomicBool::new(true);
        let mut f = Follow::new(&b"abc"[..], &stop);
        let mut out = Vec::new();
        f.read_to_end(&mut out).unwrap_or_default();
        assert_eq!(out, b"abc");
    }
}
