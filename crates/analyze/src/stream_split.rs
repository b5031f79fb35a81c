//! Scanning one stream (standard input, a pipe, a decompressed file) on
//! several cores.
//!
//! A stream cannot be cut where a file is, by seeking: it is read in
//! chunks of about [`CHUNK_LEN`] bytes, each ending where a file scanned
//! in parts is cut ([`cut_after`]), and a wave of chunks, one per core, is
//! scanned at once, each chunk as a part of the input with the next chunk
//! as what follows it. The parts are merged in order as a file's are; a
//! part that ends with a reading open (a traceback, a stack dump) is
//! scanned again together with the next chunk, and at a wave's end it is
//! carried into the next wave. At most a wave and one chunk are held, so
//! memory stays flat however long the stream. A stream no longer than one
//! chunk is scanned whole, as before; so is the rest of a stream from a
//! line too long to cut near.

use crate::findings::FindingTable;
use crate::scan::{scan_part, MetricSampling, Part};
use crate::split::{cut_after, Cut, Merged, Scanned, CUT_WINDOW_MAX};
use coroner_ingest::Input;
use coroner_metrics::MetricCollector;
use coroner_model::{InputKind, InputSummary};
use coroner_rules::RuleSet;
use std::collections::VecDeque;
use std::io::{self, Cursor, Read};

/// Bytes of a stream scanned as one part...
pub(crate) const CHUNK_LEN: usize = 1 << 20;
/// ... after the first part, this long: a stream no longer is scanned
/// whole, as before (a paste's shared indentation and hard wrap are
/// decided on its first lines only when it is read whole).
pub(crate) const FIRST_CHUNK_LEN: usize = 4 << 20;

/// Chunks scanned at once at most: the memory held grows with them.
const MAX_WORKERS: usize = 8;

/// Bytes past a chunk's target read at first to place its cut.
const FIRST_WINDOW: usize = 256 << 10;

/// A run of whole lines of the stream.
struct Chunk {
    /// Where it starts in the stream.
    offset: u64,
    bytes: Vec<u8>,
    /// The error that ended the stream right after it, if one did.
    failed: Option<Failure>,
}

/// A read error, kept to be handed to each scan of the chunk it ended.
#[derive(Clone)]
struct Failure {
    kind: io::ErrorKind,
    message: String,
}

impl Failure {
    fn error(&self) -> io::Error {
        io::Error::new(self.kind, self.message.clone())
    }
}

/// A reader that fails once with the error it holds, then ends.
struct FailOnce(Option<io::Error>);

impl Read for FailOnce {
    fn read(&mut self, _: &mut [u8]) -> io::Result<usize> {
        self.0.take().map_or(Ok(0), Err)
    }
}

/// What the stream gives next.
enum Next {
    Chunk(Chunk),
    /// The stream has ended.
    End,
    /// No cut could be placed near the target: the held bytes, from this
    /// offset, and the rest of the stream are to be scanned as one part.
    Uncut(u64, Vec<u8>),
}

/// The stream, cut into chunks as it is read.
struct Chunks<R> {
    reader: R,
    chunk_len: usize,
    /// Bytes read and not yet handed out, from `offset` in the stream.
    held: Vec<u8>,
    offset: u64,
    ended: bool,
    failed: Option<Failure>,
    /// Buffers of chunks already scanned, to be filled again.
    spare: Vec<Vec<u8>>,
}

/// Buffers kept for reuse at most.
const SPARE_BUFFERS: usize = 2;

impl<R: Read> Chunks<R> {
    fn new(reader: R, chunk_len: usize) -> Self {
        Chunks {
            reader,
            chunk_len,
            held: Vec::new(),
            offset: 0,
            ended: false,
            failed: None,
            spare: Vec::new(),
        }
    }

    /// Reads until `want` bytes are held or the stream ends.
    fn fill(&mut self, want: usize) {
        let Some(more) = want.checked_sub(self.held.len()).filter(|&m| m > 0) else {
            return;
        };
        if self.ended {
            return;
        }
        // Read into the buffer's spare room, which need not be zeroed.
        let filled = self.held.len();
        match (&mut self.reader)
            .take(more as u64)
            .read_to_end(&mut self.held)
        {
            Ok(_) if self.held.len() - filled < more => self.ended = true,
            Ok(_) => {}
            Err(e) => {
                self.ended = true;
                self.failed = Some(Failure {
                    kind: e.kind(),
                    message: e.to_string(),
                });
            }
        }
    }

    /// Keeps the buffer of a chunk that was scanned, for a later chunk.
    fn recycle(&mut self, mut bytes: Vec<u8>) {
        if self.spare.len() < SPARE_BUFFERS {
            bytes.clear();
            self.spare.push(bytes);
        }
    }

    fn next(&mut self) -> Next {
        self.next_of(self.chunk_len)
    }

    /// The next chunk, cut at or after `chunk_len` bytes.
    fn next_of(&mut self, chunk_len: usize) -> Next {
        let mut window = FIRST_WINDOW;
        loop {
            self.fill(chunk_len + window);
            if self.held.is_empty() && self.ended && self.failed.is_none() {
                return Next::End;
            }
            match cut_after(&self.held, chunk_len, self.ended) {
                Cut::At(at) => {
                    let mut rest = self.spare.pop().unwrap_or_default();
                    rest.extend_from_slice(self.held.get(at..).unwrap_or_default());
                    self.held.truncate(at);
                    return Next::Chunk(self.take(rest, None));
                }
                Cut::More if window < CUT_WINDOW_MAX => window *= 2,
                Cut::Nowhere if self.ended => {
                    let failed = self.failed.take();
                    return Next::Chunk(self.take(Vec::new(), failed));
                }
                Cut::More | Cut::Nowhere => {
                    let held = std::mem::take(&mut self.held);
                    return Next::Uncut(self.offset, held);
                }
            }
        }
    }

    /// Hands out the held bytes, keeping `rest`.
    fn take(&mut self, rest: Vec<u8>, failed: Option<Failure>) -> Chunk {
        let bytes = std::mem::replace(&mut self.held, rest);
        let offset = self.offset;
        self.offset += bytes.len() as u64;
        Chunk {
            offset,
            bytes,
            failed,
        }
    }
}

/// Scans the text `reader` gives, as `input` of `kind`, into `table` and
/// `summary` on `workers` threads (at most [`MAX_WORKERS`]), in a first
/// chunk of `first_len` bytes and then chunks of `chunk_len`, and returns
/// its training metrics.
#[allow(clippy::too_many_arguments)]
pub(crate) fn scan_stream(
    input: &Input,
    kind: InputKind,
    reader: impl Read,
    workers: usize,
    (first_len, chunk_len): (usize, usize),
    rules: &RuleSet,
    table: &mut FindingTable,
    summary: &mut InputSummary,
) -> MetricCollector {
    let mut chunks = Chunks::new(reader, chunk_len);
    let first = chunks.next_of(first_len);
    let scanner = PartScanner {
        input,
        kind,
        rules,
        table_input: table.input(),
        template: summary.clone(),
    };
    let mut held: VecDeque<Chunk> = VecDeque::new();
    match first {
        Next::Chunk(chunk) if chunks.ended && chunks.held.is_empty() => {
            // The whole stream in one chunk: scanned as it always was.
            let (part_table, part_summary, metrics, _) = scanner.scan(&[&chunk], None);
            table.merge(part_table);
            *summary = part_summary;
            return metrics;
        }
        Next::Chunk(chunk) => held.push_back(chunk),
        Next::End => {}
        Next::Uncut(offset, bytes) => {
            let (part_table, part_summary, metrics, _) =
                scanner.scan_rest(offset, bytes, chunks.reader);
            table.merge(part_table);
            *summary = part_summary;
            return metrics;
        }
    }
    let workers = workers.clamp(1, MAX_WORKERS);
    let mut merged = Merged::new(table, summary);
    let mut feed = Feed {
        chunks,
        drained: false,
        uncut: None,
    };
    while !held.is_empty() {
        // A wave, and the chunk after it.
        while held.len() <= workers && feed.has_more() {
            feed.read_into(&mut held);
        }
        let wave = held.len().min(workers);
        let held_ref = &held;
        let scanner_ref = &scanner;
        let mut ahead = VecDeque::new();
        let results: Vec<Scanned> = std::thread::scope(|scope| {
            let handles: Vec<_> = (0..wave)
                .map(|i| {
                    scope.spawn(move || {
                        scanner_ref.scan(
                            &held_ref.range(i..=i).collect::<Vec<_>>(),
                            held_ref.get(i + 1),
                        )
                    })
                })
                .collect();
            // The next wave is read while this one is scanned.
            while ahead.len() < wave && feed.has_more() {
                feed.read_into(&mut ahead);
            }
            handles
                .into_iter()
                .map(|h| h.join().unwrap_or_else(|_| scanner_ref.panicked()))
                .collect()
        });
        let mut results = results.into_iter();
        let mut i = 0;
        let mut carried = None;
        while let Some(mut scanned) = results.next() {
            let start = i;
            // Extended over the next chunks of the wave while it ends
            // with something open.
            while scanned.3 && i + 1 < wave {
                let _ = results.next();
                i += 1;
                let parts: Vec<&Chunk> = held.range(start..=i).collect();
                scanned = scanner.scan(&parts, held.get(i + 1));
            }
            if scanned.3 && i + 1 == wave && i + 1 < held.len() {
                // Open at the wave's end, with more to come: scanned again
                // with the next wave.
                carried = Some(start);
                break;
            }
            merged.add(scanned);
            i += 1;
        }
        let mut done: Vec<Chunk> = held.drain(..wave).collect();
        let scanned = carried.unwrap_or(done.len());
        for chunk in done.drain(..scanned) {
            feed.chunks.recycle(chunk.bytes);
        }
        if carried.is_some() {
            let offset = done.first().map_or(0, |c| c.offset);
            let mut bytes: Vec<u8> = done.into_iter().flat_map(|c| c.bytes).collect();
            if let Some(next) = held.pop_front() {
                bytes.extend_from_slice(&next.bytes);
                held.push_front(Chunk {
                    offset,
                    bytes,
                    failed: next.failed,
                });
            }
        }
        held.extend(ahead);
    }
    if let Some((offset, bytes)) = feed.uncut {
        merged.add(scanner.scan_rest(offset, bytes, feed.chunks.reader));
    }
    merged.finish()
}

/// The chunks of a stream after the first, handed out in order.
struct Feed<R> {
    chunks: Chunks<R>,
    /// The stream has ended.
    drained: bool,
    /// What is left of the stream past the last chunk, when it could not
    /// be cut: the bytes held (from this offset), then the reader's rest.
    uncut: Option<(u64, Vec<u8>)>,
}

impl<R: Read> Feed<R> {
    fn has_more(&self) -> bool {
        !self.drained && self.uncut.is_none()
    }

    /// Adds the next chunk to `to`, or notes that there is none.
    fn read_into(&mut self, to: &mut VecDeque<Chunk>) {
        match self.chunks.next() {
            Next::Chunk(chunk) => to.push_back(chunk),
            Next::End => self.drained = true,
            Next::Uncut(offset, bytes) => self.uncut = Some((offset, bytes)),
        }
    }
}

/// Scans runs of a stream as parts of one input.
struct PartScanner<'a> {
    input: &'a Input,
    kind: InputKind,
    rules: &'a RuleSet,
    table_input: usize,
    template: InputSummary,
}

impl PartScanner<'_> {
    /// Scans `parts`, consecutive chunks, as one part followed by `after`.
    fn scan(&self, parts: &[&Chunk], after: Option<&Chunk>) -> Scanned {
        let offset = parts.first().map_or(0, |c| c.offset);
        let failed = parts.last().and_then(|c| c.failed.as_ref());
        let joined: Vec<u8>;
        let bytes: &[u8] = match parts {
            [one] => &one.bytes,
            _ => {
                joined = parts.iter().flat_map(|c| c.bytes.iter().copied()).collect();
                &joined
            }
        };
        let reader = Cursor::new(bytes).chain(FailOnce(failed.map(Failure::error)));
        let after = after.map(|c| Cursor::new(c.bytes.as_slice()));
        self.run(offset, reader, after)
    }

    /// Scans `held`, from `offset`, and the rest of `reader` as one part.
    fn scan_rest(&self, offset: u64, held: Vec<u8>, reader: impl Read) -> Scanned {
        self.run(
            offset,
            Cursor::new(held).chain(reader),
            None::<Cursor<&[u8]>>,
        )
    }

    fn run(&self, offset: u64, reader: impl Read, after: Option<impl Read>) -> Scanned {
        let mut part_table = FindingTable::for_input(self.table_input);
        let mut part_summary = self.template.clone();
        let part = Part {
            reader,
            offset,
            after,
            live: false,
            metrics: MetricSampling::Dense,
        };
        let (metrics, open_at_end) = scan_part(
            self.input,
            self.kind,
            part,
            self.rules,
            &mut part_table,
            &mut part_summary,
            None,
        );
        (part_table, part_summary, metrics, open_at_end)
    }

    /// What a part whose thread panicked gives: an error, and nothing found.
    fn panicked(&self) -> Scanned {
        let mut part_summary = self.template.clone();
        part_summary.errors.push(coroner_model::InputError {
            message: "a scanning thread panicked; part of the input was not analysed".to_owned(),
            offset: None,
        });
        (
            FindingTable::for_input(self.table_input),
            part_summary,
            MetricCollector::new(),
            false,
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scan::scan_text;
    use coroner_ingest::InputSource;
    use coroner_rules::RuleSources;

    fn input() -> Input {
        Input {
            display: "-".to_owned(),
            source: InputSource::Stdin,
            rank: None,
            explicit: true,
            loadable_elf: None,
        }
    }

    fn rules() -> RuleSet {
        RuleSet::load(&RuleSources {
            builtin: true,
            dirs: Vec::new(),
            builtin_names: false,
        })
        .unwrap_or_else(|e| panic!("{e:?}"))
    }

    /// What scanning `reader` whole gives: the findings' digest and the
    /// summary.
    fn whole(text: impl Read, rules: &RuleSet) -> (Vec<String>, InputSummary) {
        let mut table = FindingTable::for_input(0);
        let mut summary = InputSummary::new("-", InputKind::Log);
        scan_text(
            &input(),
            InputKind::Log,
            text,
            rules,
            &mut table,
            &mut summary,
        );
        (table.digest(rules), summary)
    }

    fn chunked(
        text: impl Read,
        rules: &RuleSet,
        workers: usize,
        chunk_len: usize,
    ) -> (Vec<String>, InputSummary) {
        chunked_after(text, rules, workers, (chunk_len, chunk_len))
    }

    fn chunked_after(
        text: impl Read,
        rules: &RuleSet,
        workers: usize,
        lens: (usize, usize),
    ) -> (Vec<String>, InputSummary) {
        let mut table = FindingTable::for_input(0);
        let mut summary = InputSummary::new("-", InputKind::Log);
        let input = input();
        scan_stream(
            &input,
            InputKind::Log,
            text,
            workers,
            lens,
            rules,
            &mut table,
            &mut summary,
        );
        (table.digest(rules), summary)
    }

    fn assert_same(
        got: &(Vec<String>, InputSummary),
        want: &(Vec<String>, InputSummary),
        how: &str,
    ) {
        assert_eq!(got.0, want.0, "{how}");
        assert_eq!(got.1.lines, want.1.lines, "{how}");
        assert_eq!(got.1.bytes, want.1.bytes, "{how}");
        assert_eq!(got.1.last_text_line, want.1.last_text_line, "{how}");
        assert_eq!(got.1.errors, want.1.errors, "{how}");
    }

    /// A log with tracebacks, torchrun summaries and rank-prefixed errors
    /// among step lines, so that many chunks end inside one of them.
    fn log() -> String {
        let block = "Root Cause (first observed failure):\n[0]:\n  time      : 2026-11-29_15:17:28\n  host      : localhost\n  rank      : 1 (local_rank: 1)\n  exitcode  : -9 (pid: 2038)\n  error_file: <N/A>\n  traceback : Signal 9 (SIGKILL) received by PID 2038\n";
        let mut traceback = String::from("Traceback (most recent call last):\n");
        for f in 0..30 {
            traceback.push_str(&format!(
                "  File \"/opt/train/model.py\", line {f}, in layer_{f}\n    x = self.layer_{f}(x)\n"
            ));
        }
        traceback.push_str("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 79.10 GiB of which 1.06 GiB is free.\n");
        let mut text = String::new();
        for n in 0..6000 {
            if n % 211 == 0 {
                text.push_str(&traceback);
            } else if n % 97 == 0 {
                text.push_str(block);
            } else if n % 13 == 0 {
                text.push_str("[rank3]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 3 has a total capacity of 79.10 GiB of which 1.06 GiB is free.\n");
            } else if n % 89 == 0 {
                text.push_str("Exception ignored in: <function Prefetcher.__del__ at 0x7f3da34bd620>\nTraceback (most recent call last):\n  File \"ign.py\", line 10, in __del__\nRuntimeError: CUDA error: an illegal memory access was encountered\n");
            } else {
                text.push_str(&format!("step {n} | loss 2.{n:04} | lr 3.0e-04\n"));
            }
        }
        text
    }

    #[test]
    fn a_stream_scanned_in_chunks_gives_what_it_gives_whole() {
        let rules = rules();
        let text = log();
        let want = whole(text.as_bytes(), &rules);
        assert!(want.0.len() > 2, "{:?}", want.0);
        for (workers, chunk_len) in [
            (2, 4 << 10),
            (3, 5 << 10),
            (2, 31 << 10),
            (4, 64 << 10),
            (2, 1 << 20),
        ] {
            let got = chunked(text.as_bytes(), &rules, workers, chunk_len);
            assert_same(
                &got,
                &want,
                &format!("{workers} workers, {chunk_len}-byte chunks"),
            );
        }
    }

    /// A traceback longer than several chunks, and than the lines read
    /// past a part's end: only the chunks scanned together complete it.
    #[test]
    fn a_traceback_longer_than_chunks_is_kept_whole() {
        let rules = rules();
        let filler: String = (0..2000)
            .map(|n| format!("step {n} | loss 2.{n:04} | lr 3.0e-04\n"))
            .collect();
        let mut deep = String::from("Traceback (most recent call last):\n");
        for f in 0..400 {
            deep.push_str(&format!(
                "  File \"/opt/train/deep.py\", line {f}, in call_{f}\n    return call_{}(x)\n",
                f + 1
            ));
        }
        deep.push_str("RuntimeError: CUDA error: an illegal memory access was encountered\n");
        let text = format!("{filler}{deep}{filler}");
        let want = whole(text.as_bytes(), &rules);
        assert!(
            want.0.iter().any(|d| d.contains("(2802, 64)")),
            "{:?}",
            want.0
        );
        for (workers, chunk_len) in [(2, 4 << 10), (2, 16 << 10), (3, 9 << 10)] {
            let got = chunked(text.as_bytes(), &rules, workers, chunk_len);
            assert_same(
                &got,
                &want,
                &format!("{workers} workers, {chunk_len}-byte chunks"),
            );
        }
    }

    /// Streams put together at random from lines of many shapes
    /// (tracebacks, indented records, announcements of ignored
    /// exceptions, CRLF, invalid UTF-8, long lines, no final newline),
    /// scanned in chunks of random lengths on 1 to 4 workers, give what
    /// they give scanned whole.
    #[test]
    fn random_streams_scanned_in_chunks_give_what_they_give_whole() {
        let rules = rules();
        let pieces: [&[u8]; 12] = [
            b"step 7 | loss 2.1 | lr 3.0e-04\n",
            b"Traceback (most recent call last):\n",
            b"  File \"train.py\", line 10, in <module>\n",
            b"    main()\n",
            b"torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 79.10 GiB of which 1.06 GiB is free.\n",
            b"Exception ignored in: <function Prefetcher.__del__ at 0x7f3da34bd620>\n",
            b"[rank2]: RuntimeError: CUDA error: an illegal memory access was encountered\r\n",
            b"  exitcode  : -9 (pid: 2038)\n",
            b"gpu01:2038:2100 [0] NCCL INFO NET/IB : No device found.\n",
            b"\xff\xfe bytes that are not UTF-8 \xc3\n",
            b"\t\tindented with tabs\n",
            b"\n",
        ];
        let mut seed: u64 = 0x9e37_79b9_7f4a_7c15;
        let mut next = move || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        for round in 0..24 {
            let mut text = Vec::new();
            let lines = 200 + (next() % 3000) as usize;
            for _ in 0..lines {
                let piece = pieces[(next() % pieces.len() as u64) as usize];
                text.extend_from_slice(piece);
                if next() % 500 == 0 {
                    text.extend(std::iter::repeat_n(b'x', (next() % 40_000) as usize));
                    text.push(b'\n');
                }
            }
            if next() % 2 == 0 {
                text.extend_from_slice(b"no final newline");
            }
            let want = whole(text.as_slice(), &rules);
            let workers = 1 + (next() % 4) as usize;
            let chunk_len = 1 + (next() % 20_000) as usize;
            let first_len = chunk_len + (next() % 20_000) as usize;
            let got = chunked_after(text.as_slice(), &rules, workers, (first_len, chunk_len));
            assert_same(
                &got,
                &want,
                &format!(
                    "round {round}: {workers} workers, chunks of {first_len} then {chunk_len}"
                ),
            );
        }
    }

    /// A reader that gives `text` and then fails.
    struct Failing<'a> {
        text: &'a [u8],
    }

    impl Read for Failing<'_> {
        fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
            if self.text.is_empty() {
                return Err(io::Error::other("corrupt frame"));
            }
            let n = buf.len().min(self.text.len()).min(1000);
            buf[..n].copy_from_slice(&self.text[..n]);
            self.text = &self.text[n..];
            Ok(n)
        }
    }

    #[test]
    fn a_read_error_is_told_where_it_was_met_and_what_came_before_is_read() {
        let rules = rules();
        let text = log();
        let cut = text.len() * 2 / 3;
        let want = whole(
            Failing {
                text: &text.as_bytes()[..cut],
            },
            &rules,
        );
        assert_eq!(want.1.errors.len(), 1, "{:?}", want.1.errors);
        assert_eq!(want.1.errors[0].offset, Some(cut as u64));
        for chunk_len in [4 << 10, 50 << 10] {
            let got = chunked(
                Failing {
                    text: &text.as_bytes()[..cut],
                },
                &rules,
                2,
                chunk_len,
            );
            assert_same(&got, &want, &format!("{chunk_len}-byte chunks"));
        }
    }

    /// A line too long to cut near leaves the rest of the stream to one
    /// part, read as it is read whole.
    #[test]
    fn a_line_too_long_to_cut_near_is_read_with_the_rest() {
        let rules = rules();
        let head = log();
        let long = "x".repeat(2 * crate::split::CUT_LINE_MAX + 10);
        let text = format!("{head}{long}\n{head}");
        let chunk_len = 64 << 10;
        let mut chunks = Chunks::new(text.as_bytes(), chunk_len);
        let mut cut = 0;
        let uncut_at = loop {
            match chunks.next() {
                Next::Chunk(c) => cut += c.bytes.len(),
                Next::Uncut(offset, _) => break offset,
                Next::End => panic!("the long line was cut near"),
            }
        };
        assert_eq!(uncut_at as usize, cut);
        assert!(cut > 0 && cut <= head.len(), "{cut}");
        let want = whole(text.as_bytes(), &rules);
        let got = chunked(text.as_bytes(), &rules, 2, chunk_len);
        assert_same(&got, &want, "one long line");
    }
}
