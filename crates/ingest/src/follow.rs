use crate::discover::{Input, InputSource};
use std::io::{self, Read};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

/// How long to wait before looking again at a file that has no more bytes.
const POLL: Duration = Duration::from_millis(200);

/// Reads a file that is still being written, as `tail -F` does: at its
/// end, waits for more bytes until `stop` is set. A followed file that
/// shrinks (truncated by `>` or `truncate`) or is replaced (logrotate's
/// rename and create, an editor's save) is read again from its first
/// byte, and `notice` is told.
pub struct Follow<'a, R> {
    inner: R,
    stop: &'a AtomicBool,
    watched: Option<Watched<'a>>,
}

struct Watched<'a> {
    input: Input,
    identity: Option<(u64, u64)>,
    read: u64,
    notice: &'a (dyn Fn(&str) + Sync),
}

impl<R> std::fmt::Debug for Follow<'_, R> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Follow")
            .field("watched", &self.watched.as_ref().map(|w| &w.input.display))
            .finish()
    }
}

impl<'a, R: Read> Follow<'a, R> {
    /// Follows `inner` until `stop` becomes true.
    pub fn new(inner: R, stop: &'a AtomicBool) -> Self {
        Follow {
            inner,
            stop,
            watched: None,
        }
    }
}

impl<'a> Follow<'a, Box<dyn Read + Send>> {
    /// Follows the file of `input`, read through `inner`, reopening it
    /// when it is truncated or replaced.
    pub fn file(
        inner: Box<dyn Read + Send>,
        input: &Input,
        stop: &'a AtomicBool,
        notice: &'a (dyn Fn(&str) + Sync),
    ) -> Self {
        let identity = match &input.source {
            InputSource::File(path) => identity(path),
            InputSource::Stdin | InputSource::Pipe(_) | InputSource::ZipMember(_) => None,
        };
        Follow {
            inner,
            stop,
            watched: Some(Watched {
                input: input.clone(),
                identity,
                read: 0,
                notice,
            }),
        }
    }

    /// At the end of the file: whether it was truncated or replaced, in
    /// which case it is reopened from its start.
    fn reopened(&mut self) -> bool {
        let Some(w) = &mut self.watched else {
            return false;
        };
        let InputSource::File(path) = &w.input.source else {
            return false;
        };
        let Ok(meta) = std::fs::metadata(path) else {
            return false;
        };
        let now = identity(path);
        let why = if now.is_some() && now != w.identity {
            "was replaced"
        } else if meta.len() < w.read {
            "was truncated"
        } else {
            return false;
        };
        let Ok(opened) = crate::open(&w.input) else {
            return false;
        };
        (w.notice)(&format!(
            "{} {why}; reading it again from the start",
            w.input.display
        ));
        self.inner = opened.reader;
        w.identity = now;
        w.read = 0;
        true
    }
}

/// The device and inode of `path`, where the platform has them.
fn identity(path: &PathBuf) -> Option<(u64, u64)> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        std::fs::metadata(path).ok().map(|m| (m.dev(), m.ino()))
    }
    #[cfg(not(unix))]
    {
        let _ = path;
        None
    }
}

impl Read for Follow<'_, Box<dyn Read + Send>> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        loop {
            let n = self.inner.read(buf)?;
            if let Some(w) = &mut self.watched {
                w.read += n as u64;
            }
            if n > 0 || buf.is_empty() {
                return Ok(n);
            }
            if self.reopened() {
                continue;
            }
            if self.stop.load(Ordering::Relaxed) {
                return Ok(0);
            }
            std::thread::sleep(POLL);
        }
    }
}

impl Read for Follow<'_, &[u8]> {
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
