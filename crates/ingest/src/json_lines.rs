//! Logs kept as one JSON object per line, read as the lines they hold.
//!
//! Docker's `json-file` log driver stores a container's output as
//! `{"log":"<line>\n","stream":"stderr","time":"…"}`, one object per line
//! (`/var/lib/docker/containers/<id>/<id>-json.log`), and log stores export
//! the same way: Elasticsearch and Datadog under `message`, structured
//! loggers under `msg`, `journalctl -o json` under `MESSAGE`, Google Cloud
//! Logging under `textPayload`. Such an input is told by its first lines
//! and read as the program's own lines: each object's text, unescaped (and
//! on the lines after it, what a structured logger keeps under an error's
//! own keys: `error`, `exc_info`, `stacktrace`, …), and the lines that are
//! not such objects as they are. Docker splits a line
//! longer than 16 KiB over several objects, each but the last without a
//! newline at its end; they are joined again.

use crate::decoded::{Decode, DecodedReader};
use serde_json::Value;
use std::io::{self, BufRead, BufReader, Read};

/// The keys that hold a line's text, in the order they are looked for.
const TEXT_KEYS: [&str; 5] = ["log", "message", "msg", "MESSAGE", "textPayload"];
/// The keys structured loggers keep an error's text under besides the
/// message (zap, slog, structlog, python-json-logger, Ray): read on the
/// lines after the message.
const ERROR_KEYS: [&str; 10] = [
    "error",
    "err",
    "exception",
    "exc_info",
    "exc_text",
    "stack",
    "stacktrace",
    "stack_trace",
    "traceback",
    "error.stack",
];
/// Lines of the head looked at to tell such an input.
const SAMPLE_LINES: usize = 50;
/// A line longer than this is passed on as it is, not parsed.
const MAX_PARSED: usize = 16 * 1024 * 1024;

/// Which key an input's objects hold their text under.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct JsonLog {
    key: &'static str,
}

impl JsonLog {
    /// The key's name, for reports.
    pub fn key(self) -> &'static str {
        self.key
    }

    /// Whether `head`'s lines are such objects: four in five of its first
    /// lines with text, and at least two (or its only line), are a JSON
    /// object with text under one of the keys (the same key in each).
    pub fn sniff(head: &[u8]) -> Option<JsonLog> {
        // Whole lines only: the last one may be cut.
        let whole = match memchr::memrchr(b'\n', head) {
            Some(end) => head.get(..end)?,
            None => return None,
        };
        let mut lines = 0;
        let mut counts = [0usize; TEXT_KEYS.len()];
        for line in whole
            .split(|&b| b == b'\n')
            .filter(|l| !l.trim_ascii().is_empty())
            .take(SAMPLE_LINES)
        {
            lines += 1;
            if let Some(k) = text_key(line) {
                if let Some(count) = counts.get_mut(k) {
                    *count += 1;
                }
            }
        }
        let (best, &count) = counts
            .iter()
            .enumerate()
            .max_by_key(|&(k, c)| (c, usize::MAX - k))?;
        (count >= 1 && count * 5 >= lines * 4 && (count >= 2 || count == lines)).then(|| JsonLog {
            key: TEXT_KEYS.get(best).copied().unwrap_or("log"),
        })
    }
}

/// The index in [`TEXT_KEYS`] of the key `line`'s object holds its text
/// under, when `line` is such an object.
fn text_key(line: &[u8]) -> Option<usize> {
    let line = line.trim_ascii();
    if !line.starts_with(b"{") || line.len() > MAX_PARSED {
        return None;
    }
    let value: Value = serde_json::from_slice(line).ok()?;
    TEXT_KEYS
        .iter()
        .position(|k| value.get(k).is_some_and(Value::is_string))
}

/// A decoder of such an input into the text its objects hold.
pub struct JsonLinesDecoder<R> {
    inner: BufReader<R>,
    key: &'static str,
    line: Vec<u8>,
    /// Whether the text handed out last ended inside a line (a Docker
    /// object without a newline at its end).
    open_line: bool,
    done: bool,
}

impl<R: Read> JsonLinesDecoder<R> {
    /// A reader of the text `inner`'s objects hold.
    pub fn reader(inner: R, log: JsonLog) -> DecodedReader<JsonLinesDecoder<R>> {
        DecodedReader::new(JsonLinesDecoder {
            inner: BufReader::with_capacity(256 * 1024, inner),
            key: log.key,
            line: Vec::new(),
            open_line: false,
            done: false,
        })
    }
}

impl<R: Read> Decode for JsonLinesDecoder<R> {
    /// Reads the next line and puts what it holds in `out`.
    fn fill(&mut self, out: &mut Vec<u8>) -> io::Result<bool> {
        if self.done {
            return Ok(false);
        }
        self.line.clear();
        let n = (&mut self.inner)
            .take(MAX_PARSED as u64 + 1)
            .read_until(b'\n', &mut self.line)?;
        if n == 0 {
            self.done = true;
            if self.open_line {
                out.push(b'\n');
                self.open_line = false;
                return Ok(true);
            }
            return Ok(false);
        }
        let text = (self.line.len() <= MAX_PARSED)
            .then(|| serde_json::from_slice::<Value>(self.line.trim_ascii()).ok())
            .flatten()
            .and_then(|v| {
                let Some(Value::String(text)) = v.get(self.key) else {
                    return None;
                };
                let mut text = text.clone();
                for key in ERROR_KEYS {
                    if let Some(Value::String(more)) = v.get(key) {
                        if !text.ends_with('\n') {
                            text.push('\n');
                        }
                        text.push_str(more);
                    }
                }
                Some(text)
            });
        match text {
            Some(text) => {
                out.extend_from_slice(text.as_bytes());
                self.open_line = !text.ends_with('\n');
                // Only Docker's objects go on in the next one; the other
                // stores hold one whole message per object.
                if self.open_line && self.key != "log" {
                    out.push(b'\n');
                    self.open_line = false;
                }
            }
            None => {
                if self.open_line {
                    out.push(b'\n');
                }
                out.extend_from_slice(&self.line);
                self.open_line = !self.line.ends_with(b"\n");
            }
        }
        Ok(true)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(input: &str) -> (Option<JsonLog>, String) {
        let log = JsonLog::sniff(input.as_bytes());
        let mut out = String::new();
        if let Some(log) = log {
            JsonLinesDecoder::reader(input.as_bytes(), log)
                .read_to_string(&mut out)
                .unwrap_or_else(|e| panic!("{e}"));
        }
        (log, out)
    }

    #[test]
    fn dockers_json_file_reads_as_the_containers_lines() {
        let input = concat!(
            r#"{"log":"Traceback (most recent call last):\n","stream":"stderr","time":"2024-03-01T10:11:12.1Z"}"#,
            "\n",
            r#"{"log":"  File \"train.py\", line 3, in \u003cmodule\u003e\n","stream":"stderr","time":"2024-03-01T10:11:12.2Z"}"#,
            "\n",
            r#"{"log":"torch.OutOfMemoryError: CUDA out of memory. \u001b[0m","stream":"stderr","time":"2024-03-01T10:11:12.3Z"}"#,
            "\n",
            r#"{"log":"Tried to allocate 2.00 GiB\n","stream":"stderr","time":"2024-03-01T10:11:12.3Z"}"#,
            "\n",
            "not an object\n",
            r#"{"log":"Killed","stream":"stderr","time":"2024-03-01T10:11:13Z"}"#,
            "\n",
        );
        let (log, out) = read(input);
        assert_eq!(log.map(JsonLog::key), Some("log"));
        assert_eq!(
            out,
            "Traceback (most recent call last):\n  File \"train.py\", line 3, in <module>\n\
             torch.OutOfMemoryError: CUDA out of memory. \u{1b}[0mTried to allocate 2.00 GiB\n\
             not an object\nKilled\n"
        );
    }

    #[test]
    fn exports_of_log_stores_read_as_their_messages() {
        for key in ["message", "msg", "MESSAGE", "textPayload"] {
            let input = format!(
                "{{\"@timestamp\":\"2024-03-01T10:11:12Z\",\"{key}\":\"NCCL WARN Net : Connection closed by remote peer\"}}\n\
                 {{\"@timestamp\":\"2024-03-01T10:11:13Z\",\"{key}\":\"RuntimeError: NCCL error\\nLast error: socket closed\"}}\n"
            );
            let (log, out) = read(&input);
            assert_eq!(log.map(JsonLog::key), Some(key));
            assert_eq!(
                out,
                "NCCL WARN Net : Connection closed by remote peer\nRuntimeError: NCCL error\nLast error: socket closed\n"
            );
        }
    }

    #[test]
    fn broken_objects_and_stray_bytes_are_passed_on_as_they_are() {
        let mut seed = 11u32;
        let pieces: [&[u8]; 9] = [
            b"{\"log\":\"",
            b"\\n",
            b"\"}",
            b"\n",
            b"\xff\xfe",
            b"\\u00",
            b",\"stream\":1",
            b"\"",
            b"x",
        ];
        for _ in 0..200 {
            let mut input = b"{\"log\":\"a\\n\"}\n{\"log\":\"b\\n\"}\n".to_vec();
            for _ in 0..40 {
                seed = seed.wrapping_mul(1_103_515_245).wrapping_add(12_345);
                input.extend_from_slice(pieces[(seed >> 16) as usize % pieces.len()]);
            }
            let log = JsonLog { key: "log" };
            let mut out = Vec::new();
            JsonLinesDecoder::reader(input.as_slice(), log)
                .read_to_end(&mut out)
                .unwrap_or_else(|e| panic!("{e}"));
            assert!(out.starts_with(b"a\nb\n"), "{out:?}");
        }
    }

    #[test]
    fn an_errors_own_fields_are_read_after_its_message() {
        let input = concat!(
            r#"{"time":"t1","level":"info","msg":"step 1"}"#,
            "\n",
            r#"{"time":"t2","level":"error","msg":"training step failed","error":"CUDA out of memory. Tried to allocate 2.00 GiB"}"#,
            "\n",
            r#"{"time":"t3","level":"error","msg":"crashed","exc_info":"Traceback (most recent call last):\n  File \"t.py\", line 1\nRuntimeError: boom"}"#,
            "\n",
        );
        let (log, out) = read(input);
        assert_eq!(log.map(JsonLog::key), Some("msg"));
        assert_eq!(
            out,
            "step 1\ntraining step failed\nCUDA out of memory. Tried to allocate 2.00 GiB\n\
             crashed\nTraceback (most recent call last):\n  File \"t.py\", line 1\nRuntimeError: boom\n"
        );
    }

    #[test]
    fn a_log_with_a_few_json_lines_is_left_as_it_is() {
        for input in [
            "step 1 loss 2.3\n{\"message\": \"eval\"}\nstep 2 loss 2.1\nstep 3\nstep 4\n{\"message\": \"x\"}\n",
            "{\"loss\": 2.3, \"step\": 1}\n{\"loss\": 2.1, \"step\": 2}\n",
            "{\"log\":\"only one line, cut",
            "step 1\n{\"message\": \"one object among other lines\"}\n",
            "",
        ] {
            assert_eq!(read(input).0, None, "{input}");
        }
    }
}
