//! Scanning one stream (standard input, a pipe, a decompressed file) on
//! several cores.
//!
//! A stream cannot be cut where a file is, by seeking: it is read in
//! chunks of whole lines ([`FIRST_CHUNK_LEN`], then [`CHUNK_LEN`] bytes),
//! each ending where a file scanned in parts is cut ([`cut_after`]), and a
//! wave of chunks, one per core, is scanned at once while the next wave is
//! read. Each chunk is scanned as a part of the input followed by the
//! chunks read after it (at least [`AFTER_PART_LINES`] lines of them, or
//! [`LOOKAHEAD_MAX`] bytes), and the parts are merged in order as a file's
//! are. A part that ends with a reading open (a traceback, a stack dump)
//! is scanned again together with the next chunk, and carried into the
//! next wave when it is the last of its wave. Two waves, the chunks after
//! them and a carried part of at most [`CARRY_CHUNKS`] chunks are held, so
//! memory stays flat however long the stream; past a larger carried part,
//! or a line too long to cut near, the rest of the stream is scanned as
//! one part, as it is read. A stream no longer than the first chunk is
//! scanned whole.

use crate::findings::FindingTable;
use crate::scan::{
    lead_of, scan_part, MetricSampling, Part, AFTER_PART_LINES, LEAD_MAX, LINES_BEFORE,
};
use crate::split::{cut_after, Cut, Merged, Scanned, CUT_WINDOW_MAX};
use coroner_ingest::Input;
use coroner_metrics::MetricCollector;
use coroner_model::{InputKind, InputSummary};
use coroner_rules::RuleSet;
use std::collections::VecDeque;
use std::io::{self, Cursor, Read};
use std::sync::atomic::{AtomicU64, Ordering};

/// Bytes of a stream's first chunk: a stream no longer is scanned whole,
/// as before (a paste's shared indentation and hard wrap are decided on
/// its first lines only when it is read whole).
pub(crate) const FIRST_CHUNK_LEN: usize = 4 << 20;
/// Bytes of each later chunk.
pub(crate) const CHUNK_LEN: usize = 1 << 20;

/// Bytes read past a wave at most to give its last part the lines that
/// follow it: as many as a part's scan reads past its end at most
/// ([`AFTER_PART_LINES`] lines of at most 64 KiB).
const LOOKAHEAD_MAX: usize = 16 << 20;

/// Chunks a part carried from wave to wave may span at most (a traceback
/// whose rank never prints its exception stays open to the end): past
/// them the rest of the stream is scanned as one part.
const CARRY_CHUNKS: usize = 8;

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
    /// The lines just before it, which its first lines look back to.
    lead: Vec<u8>,
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

/// A reader over slices one after another.
struct Slices<'a> {
    slices: Vec<&'a [u8]>,
    at: usize,
}

impl Read for Slices<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        while let Some(slice) = self.slices.get_mut(self.at) {
            if slice.is_empty() {
                self.at += 1;
                continue;
            }
            return slice.read(buf);
        }
        Ok(0)
    }
}

/// What the stream gives next.
enum Next {
    Chunk(Chunk),
    /// The stream has ended.
    End,
    /// No cut could be placed near the target: the held bytes and the rest
    /// of the stream are to be scanned as one part.
    Uncut(Chunk),
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
    /// The last lines handed out, the lead of the next chunk.
    lead: Vec<u8>,
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
            lead: Vec::new(),
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

    /// Whether the stream has been handed out to its end (a read error
    /// with it).
    fn is_spent(&self) -> bool {
        self.ended && self.held.is_empty() && self.failed.is_none()
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
                    return Next::Uncut(self.take(Vec::new(), None));
                }
            }
        }
    }

    /// Hands out the held bytes, keeping `rest`.
    fn take(&mut self, rest: Vec<u8>, failed: Option<Failure>) -> Chunk {
        let bytes = std::mem::replace(&mut self.held, rest);
        let offset = self.offset;
        self.offset += bytes.len() as u64;
        // A chunk of fewer lines than a lead takes lines from the one before;
        // lines further back than the last LEAD_MAX bytes are never taken.
        let next_lead = if bytes.len() >= LEAD_MAX
            || memchr::memrchr_iter(b'\n', &bytes)
                .nth(LINES_BEFORE)
                .is_some()
        {
            lead_of(&bytes, true)
        } else {
            let mut joined = self.lead.clone();
            joined.extend_from_slice(&bytes);
            lead_of(&joined, true)
        };
        Chunk {
            offset,
            bytes,
            failed,
            lead: std::mem::replace(&mut self.lead, next_lead),
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
    lens: (usize, usize),
    rules: &RuleSet,
    table: &mut FindingTable,
    summary: &mut InputSummary,
) -> MetricCollector {
    scan_stream_counted(input, kind, reader, workers, lens, rules, table, summary).0
}

/// [`scan_stream`], and the bytes of the chunks it scanned (more than the
/// stream's where parts were scanned again; the rest scanned as one part
/// not counted).
#[allow(clippy::too_many_arguments)]
fn scan_stream_counted(
    input: &Input,
    kind: InputKind,
    reader: impl Read,
    workers: usize,
    (first_len, chunk_len): (usize, usize),
    rules: &RuleSet,
    table: &mut FindingTable,
    summary: &mut InputSummary,
) -> (MetricCollector, u64) {
    let mut chunks = Chunks::new(reader, chunk_len);
    let first = chunks.next_of(first_len);
    let scanner = PartScanner {
        input,
        kind,
        rules,
        table_input: table.input(),
        template: summary.clone(),
        scanned: AtomicU64::new(0),
    };
    let mut held: VecDeque<Chunk> = VecDeque::new();
    match first {
        Next::Chunk(chunk) if chunks.is_spent() => {
            // The whole stream in one chunk: scanned as it always was.
            let (part_table, part_summary, metrics, _) =
                scanner.scan(&[&chunk], std::iter::empty());
            table.merge(part_table);
            *summary = part_summary;
            return (metrics, scanner.scanned.into_inner());
        }
        Next::Chunk(chunk) => held.push_back(chunk),
        Next::End => {}
        Next::Uncut(chunk) => {
            let feed = Feed {
                chunks,
                uncut: Some(chunk),
            };
            let (part_table, part_summary, metrics, _) = scanner.scan_rest(VecDeque::new(), feed);
            table.merge(part_table);
            *summary = part_summary;
            return (metrics, scanner.scanned.into_inner());
        }
    }
    let workers = workers.clamp(1, MAX_WORKERS);
    let mut merged = Merged::new(table, summary);
    let mut feed = Feed {
        chunks,
        uncut: None,
    };
    // Whether the rest of the stream, from the first chunk held, is to be
    // scanned as one part.
    let mut rest_whole = false;
    while !held.is_empty() {
        // A wave, and the lines after it.
        while feed.has_more() && (held.len() <= workers || lacks_lines(&held, workers)) {
            feed.read_into(&mut held);
        }
        if feed.uncut.is_some() {
            rest_whole = true;
            break;
        }
        let wave = held.len().min(workers);
        let held_ref = &held;
        let scanner_ref = &scanner;
        let mut ahead = VecDeque::new();
        let results: Vec<Scanned> = std::thread::scope(|scope| {
            let handles: Vec<_> = (0..wave)
                .map(|i| {
                    scope.spawn(move || {
                        let parts: Vec<&Chunk> = held_ref.range(i..=i).collect();
                        scanner_ref.scan(&parts, held_ref.range(i + 1..))
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
                scanned = scanner.scan(&parts, held.range(i + 1..));
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
            let lead = done.first_mut().map(|c| std::mem::take(&mut c.lead));
            let mut bytes: Vec<u8> = done.into_iter().flat_map(|c| c.bytes).collect();
            if let Some(next) = held.pop_front() {
                bytes.extend_from_slice(&next.bytes);
                rest_whole = bytes.len() > CARRY_CHUNKS * feed.chunks.chunk_len;
                held.push_front(Chunk {
                    offset,
                    bytes,
                    failed: next.failed,
                    lead: lead.unwrap_or_default(),
                });
            }
        }
        held.extend(ahead);
        if rest_whole || feed.uncut.is_some() {
            rest_whole = true;
            break;
        }
    }
    if rest_whole {
        merged.add(scanner.scan_rest(held, feed));
    }
    (merged.finish(), scanner.scanned.into_inner())
}

/// Whether the chunks held after the first `wave` hold fewer than
/// [`AFTER_PART_LINES`] lines and fewer than [`LOOKAHEAD_MAX`] bytes: the
/// lines the wave's last part may need to complete what is open at its end.
fn lacks_lines(held: &VecDeque<Chunk>, wave: usize) -> bool {
    let mut lines = 0;
    let mut bytes = 0;
    for chunk in held.range(wave.min(held.len())..) {
        // Counted only as far as needed: most chunks hold thousands.
        lines += memchr::memchr_iter(b'\n', &chunk.bytes)
            .take(AFTER_PART_LINES - lines)
            .count();
        bytes += chunk.bytes.len();
        if lines >= AFTER_PART_LINES || bytes >= LOOKAHEAD_MAX {
            return false;
        }
    }
    true
}

/// The chunks of a stream after the first, handed out in order.
struct Feed<R> {
    chunks: Chunks<R>,
    /// What is left of the stream past the last chunk, when it could not
    /// be cut: the bytes held (from this offset), then the reader's rest.
    uncut: Option<Chunk>,
}

impl<R: Read> Feed<R> {
    fn has_more(&self) -> bool {
        !self.chunks.is_spent() && self.uncut.is_none()
    }

    /// Adds the next chunk to `to`, or notes that there is none.
    fn read_into(&mut self, to: &mut VecDeque<Chunk>) {
        match self.chunks.next() {
            Next::Chunk(chunk) => to.push_back(chunk),
            Next::End => {}
            Next::Uncut(chunk) => self.uncut = Some(chunk),
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
    /// Bytes of the chunks scanned.
    scanned: AtomicU64,
}

impl PartScanner<'_> {
    /// Scans `parts`, consecutive chunks, as one part followed by the
    /// chunks `after`.
    fn scan<'c>(&self, parts: &[&Chunk], after: impl Iterator<Item = &'c Chunk>) -> Scanned {
        let offset = parts.first().map_or(0, |c| c.offset);
        let len: usize = parts.iter().map(|c| c.bytes.len()).sum();
        self.scanned.fetch_add(len as u64, Ordering::Relaxed);
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
        let after: Vec<&[u8]> = after.map(|c| c.bytes.as_slice()).collect();
        let after = (!after.is_empty()).then_some(Slices {
            slices: after,
            at: 0,
        });
        let lead = parts.first().map(|c| c.lead.clone()).unwrap_or_default();
        self.run(offset, lead, reader, after)
    }

    /// Scans the chunks `held`, then what is left of the stream `feed`
    /// reads, as one part.
    fn scan_rest<R: Read>(&self, mut held: VecDeque<Chunk>, feed: Feed<R>) -> Scanned {
        let mut chunks = feed.chunks;
        held.extend(feed.uncut);
        let offset = held.front().map_or(chunks.offset, |c| c.offset);
        let lead = match held.front_mut() {
            Some(first) => std::mem::take(&mut first.lead),
            None => std::mem::take(&mut chunks.lead),
        };
        let mut failed = None;
        let mut bytes = Vec::new();
        for chunk in held {
            bytes.extend_from_slice(&chunk.bytes);
            failed = chunk.failed.or(failed);
        }
        let rest = Cursor::new(chunks.held)
            .chain(FailOnce(chunks.failed.or(failed).map(|f| f.error())))
            .chain(chunks.reader);
        self.run(
            offset,
            lead,
            Cursor::new(bytes).chain(rest),
            None::<Cursor<&[u8]>>,
        )
    }

    fn run(
        &self,
        offset: u64,
        lead: Vec<u8>,
        reader: impl Read,
        after: Option<impl Read>,
    ) -> Scanned {
        let mut part_table = FindingTable::for_input(self.table_input);
        let mut part_summary = self.template.clone();
        let part = Part {
            reader,
            offset,
            after,
            live: false,
            metrics: MetricSampling::Dense,
            lead,
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
    use crate::test_support::{
        builtin_rules, contexts_before, deep_traceback, frames_without_header, log_input, scanned,
        step_lines, xorshift,
    };
    use coroner_rules::RuleSources;

    /// What scanning `reader` whole gives: the findings' digest and the
    /// summary.
    fn whole(text: impl Read, rules: &RuleSet) -> (Vec<String>, InputSummary) {
        let (table, summary) = scanned(text, rules);
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
        let (table, summary) = chunked_table(text, rules, workers, lens);
        (table.digest(rules), summary)
    }

    /// The finding table and the summary of `text` scanned in chunks.
    fn chunked_table(
        text: impl Read,
        rules: &RuleSet,
        workers: usize,
        lens: (usize, usize),
    ) -> (FindingTable, InputSummary) {
        let mut table = FindingTable::for_input(0);
        let mut summary = InputSummary::new("log", InputKind::Log);
        scan_stream(
            &log_input(),
            InputKind::Log,
            text,
            workers,
            lens,
            rules,
            &mut table,
            &mut summary,
        );
        (table, summary)
    }

    /// Fails unless `text` scanned in chunks on each (workers, chunk
    /// length) of `runs` gives `want`, what it gives whole.
    fn assert_chunks_give(
        text: &str,
        rules: &RuleSet,
        want: &(Vec<String>, InputSummary),
        runs: &[(usize, usize)],
    ) {
        for &(workers, chunk_len) in runs {
            let got = chunked(text.as_bytes(), rules, workers, chunk_len);
            let how = format!("{workers} workers, {chunk_len}-byte chunks");
            assert_same(&got, want, &how);
        }
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
        let rules = builtin_rules();
        let text = log();
        let want = whole(text.as_bytes(), &rules);
        assert!(want.0.len() > 2, "{:?}", want.0);
        let runs = [
            (1, 4 << 10),
            (2, 4 << 10),
            (3, 5 << 10),
            (2, 31 << 10),
            (4, 64 << 10),
        ];
        assert_chunks_give(&text, &rules, &want, &runs);
    }

    /// A chunk's first line looks back to the lines before the chunk,
    /// taken from the chunks before it when the one before holds fewer
    /// lines than are looked back to.
    #[test]
    fn a_chunk_looks_back_past_its_cut() {
        let rules = builtin_rules();
        let filler = step_lines(2000);
        let frames = frames_without_header(300);
        let text = format!("{filler}{frames}");
        let want = whole(text.as_bytes(), &rules);
        assert!(
            want.0
                .iter()
                .any(|d| d.contains("\"raised_in\": \"step_0\"")),
            "{:?}",
            want.0
        );
        // The first chunk is cut just before the first exception line.
        let first = filler.len() + frames.find("ValueError").unwrap_or(0) - 10;
        let got = chunked_after(text.as_bytes(), &rules, 2, (first, 4 << 10));
        assert_same(&got, &want, "first chunk cut before the exception");
        // The lines shown before the exception line are the whole stream's.
        let (table, _) = chunked_table(text.as_bytes(), &rules, 2, (first, 4 << 10));
        let (whole_table, _) = scanned(text.as_bytes(), &rules);
        let shown = contexts_before(whole_table, &rules);
        assert!(
            shown.iter().any(|c| c.len() == 2 && c[1].contains("File")),
            "{shown:?}"
        );
        assert_eq!(contexts_before(table, &rules), shown);
        // Chunks of one or two lines: each exception line starts one, and
        // the chunk before it holds fewer lines than are looked back to.
        let frames_only = whole(frames.as_bytes(), &rules);
        assert_chunks_give(&frames, &rules, &frames_only, &[(2, 1), (3, 1), (2, 60)]);
    }

    /// A traceback longer than several chunks, and than the lines read
    /// past a part's end: only the chunks scanned together complete it.
    #[test]
    fn a_traceback_longer_than_chunks_is_kept_whole() {
        let rules = builtin_rules();
        let filler = step_lines(2000);
        let deep = deep_traceback(400);
        let text = format!("{filler}{deep}{filler}");
        let want = whole(text.as_bytes(), &rules);
        assert!(
            want.0.iter().any(|d| d.contains("(2802, 64)")),
            "{:?}",
            want.0
        );
        assert_chunks_give(
            &text,
            &rules,
            &want,
            &[(2, 4 << 10), (2, 16 << 10), (3, 9 << 10)],
        );
    }

    /// Streams put together at random from lines of many shapes
    /// (tracebacks, indented records, announcements of ignored
    /// exceptions, CRLF, invalid UTF-8, long lines, no final newline),
    /// scanned in chunks of random lengths on 1 to 4 workers, give what
    /// they give scanned whole.
    #[test]
    fn random_streams_scanned_in_chunks_give_what_they_give_whole() {
        let rules = builtin_rules();
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
        let mut next = xorshift(0x9e37_79b9_7f4a_7c15);
        for round in 0..24 {
            let mut text = Vec::new();
            let lines = 200 + (next() % 3000) as usize;
            for _ in 0..lines {
                let piece = pieces[(next() % pieces.len() as u64) as usize];
                text.extend_from_slice(piece);
                if next().is_multiple_of(500) {
                    text.extend(std::iter::repeat_n(b'x', (next() % 40_000) as usize));
                    text.push(b'\n');
                }
            }
            if next().is_multiple_of(2) {
                text.extend_from_slice(b"no final newline");
            }
            // Read a random number of bytes at a time, failing at the end
            // one time in three.
            let step = 1 + (next() % 5000) as usize;
            let fails = next().is_multiple_of(3);
            let reader = || Stepped {
                text: text.as_slice(),
                step,
                fails,
            };
            let want = whole(reader(), &rules);
            let workers = 1 + (next() % 4) as usize;
            let chunk_len = 1 + (next() % 20_000) as usize;
            let first_len = chunk_len + (next() % 20_000) as usize;
            let got = chunked_after(reader(), &rules, workers, (first_len, chunk_len));
            assert_same(
                &got,
                &want,
                &format!(
                    "round {round}: {workers} workers, chunks of {first_len} then {chunk_len}"
                ),
            );
        }
    }

    /// Lines of training metrics from `from` on, `bytes` of them.
    fn steps(from: usize, bytes: usize) -> String {
        let mut text = String::new();
        let mut n = from;
        while text.len() < bytes {
            text.push_str(&format!("step {n} | loss 2.{n:04} | lr 3.0e-04\n"));
            n += 1;
        }
        text
    }

    /// A message whose rule needs a line that comes later
    /// (`loky-worker-killed`), and that line.
    const KILLED: &str = "joblib.externals.loky.process_executor.TerminatedWorkerError: A worker process managed by the executor was unexpectedly terminated. This could be caused by a segmentation fault.\n";
    const EXIT_CODES: &str = "The exit codes of the workers are {SIGKILL(-9)}\n";

    /// A rule window open at a chunk's end is completed by the lines of
    /// the chunks after it, even when the next chunk is one long line.
    #[test]
    fn a_window_open_at_a_chunk_end_reads_past_a_one_line_chunk() {
        let rules = builtin_rules();
        let long = "x".repeat(5000);
        let text = format!(
            "{}{KILLED}{long}\n{EXIT_CODES}{}",
            steps(0, 4000),
            steps(500, 20000)
        );
        let want = whole(text.as_bytes(), &rules);
        assert!(
            want.0.iter().any(|d| d.starts_with("loky-worker-killed")),
            "{:?}",
            want.0
        );
        let got = chunked(text.as_bytes(), &rules, 2, 4 << 10);
        assert_same(&got, &want, "a one-line chunk after an open window");
    }

    /// Before a line too long to cut near, an open window and an open
    /// traceback are completed: the rest is scanned from the chunk they
    /// are in.
    #[test]
    fn what_is_open_before_a_line_too_long_to_cut_near_is_completed() {
        let rules = builtin_rules();
        let long = "x".repeat(crate::split::CUT_LINE_MAX + (8 << 10));
        let text = format!(
            "{}{KILLED}{long}\n{EXIT_CODES}{}",
            steps(0, 4000),
            steps(500, 20000)
        );
        let want = whole(text.as_bytes(), &rules);
        assert!(
            want.0.iter().any(|d| d.starts_with("loky-worker-killed")),
            "{:?}",
            want.0
        );
        assert_same(
            &chunked(text.as_bytes(), &rules, 2, 4 << 10),
            &want,
            "window",
        );
        // A traceback whose header is at the first chunk's cut target.
        let mut head = steps(0, 3900);
        head.push_str(&"z".repeat(4090 - head.len() - 1));
        head.push('\n');
        let mut traceback = String::from("Traceback (most recent call last):\n");
        for f in 0..3 {
            traceback.push_str(&format!(
                "  File \"m.py\", line {f}, in f{f}\n    x = f(x)\n"
            ));
        }
        traceback.push_str("RuntimeError: CUDA error: an illegal memory access was encountered\n");
        let text = format!("{head}{traceback}{long}\n{}", steps(500, 20000));
        let mut chunks = Chunks::new(text.as_bytes(), 4 << 10);
        assert!(matches!(chunks.next(), Next::Chunk(_)));
        assert!(
            matches!(chunks.next(), Next::Uncut(..)),
            "the long line was cut near"
        );
        let want = whole(text.as_bytes(), &rules);
        assert!(
            want.0.iter().any(|d| d.contains("(121, 3)")),
            "{:?}",
            want.0
        );
        assert_same(
            &chunked(text.as_bytes(), &rules, 2, 4 << 10),
            &want,
            "traceback",
        );
    }

    /// A rank's traceback that never reaches its exception, while other
    /// ranks go on printing, stays open to the stream's end: it is carried
    /// over a few chunks, then the rest is scanned as one part.
    #[test]
    fn a_traceback_open_to_the_end_is_carried_a_few_chunks_at_most() {
        let rules = builtin_rules();
        let mut text = steps(0, 10_000);
        text.push_str("[rank3]: Traceback (most recent call last):\n");
        let mut n = 0;
        while text.len() < 2_000_000 {
            text.push_str(&format!("[rank0]: step {n} | loss 2.{n:04} | lr 3.0e-04\n"));
            n += 1;
        }
        let want = whole(text.as_bytes(), &rules);
        let mut table = FindingTable::for_input(0);
        let mut summary = InputSummary::new("log", InputKind::Log);
        let chunk_len = 16 << 10;
        let (_, scanned) = scan_stream_counted(
            &log_input(),
            InputKind::Log,
            text.as_bytes(),
            2,
            (chunk_len, chunk_len),
            &rules,
            &mut table,
            &mut summary,
        );
        assert_same(
            &(table.digest(&rules), summary),
            &want,
            "a traceback open to the end",
        );
        // Carried to the end, each wave would scan it again from its start:
        // hundreds of times the stream. Here the chunks before it, and
        // the carried part a few times over.
        let bound = 10_000 + (CARRY_CHUNKS + 2) * (CARRY_CHUNKS + 2) * chunk_len;
        assert!(
            scanned < bound as u64,
            "{scanned} bytes scanned, bound {bound}"
        );
    }

    /// A user rule whose window spans lines too many and too long for the
    /// next chunk: the chunks after it are read until the lines a part's
    /// scan reads past its end are there.
    #[test]
    fn a_long_window_is_completed_by_the_chunks_read_after_it() {
        let dir = std::env::temp_dir().join(format!("coroner-window-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap_or_else(|e| panic!("{e}"));
        std::fs::write(
            dir.join("long-window.toml"),
            r#"
id = "long-window"
title = "A long window"
category = "hang"
severity = "error"
message = "a long window"

[match]
literals = ["opening line"]
any = ["opening line"]
all = ["closing line"]
window = 200

[[examples]]
fires = true
input = """
opening line
closing line
"""

[[examples]]
fires = false
input = """
opening line
"""
"#,
        )
        .unwrap_or_else(|e| panic!("{e}"));
        let rules = RuleSet::load(&RuleSources {
            builtin: false,
            dirs: vec![dir.clone()],
            builtin_names: false,
        });
        let _ = std::fs::remove_dir_all(&dir);
        let rules = rules.unwrap_or_else(|e| panic!("{e:?}"));
        let wide = format!("{}\n", "w".repeat(40 << 10));
        let text = format!(
            "{}opening line\n{}closing line\n{}",
            steps(0, 4000),
            wide.repeat(150),
            steps(500, 20000)
        );
        let want = whole(text.as_bytes(), &rules);
        assert!(
            want.0.iter().any(|d| d.starts_with("long-window")),
            "{:?}",
            want.0
        );
        let got = chunked(text.as_bytes(), &rules, 2, 4 << 10);
        assert_same(&got, &want, "a 200-line window over 6 MB");
    }

    /// A reader that gives `text` `step` bytes at a time, then fails if
    /// `fails`.
    struct Stepped<'a> {
        text: &'a [u8],
        step: usize,
        fails: bool,
    }

    impl Read for Stepped<'_> {
        fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
            if self.text.is_empty() {
                return match self.fails {
                    true => Err(io::Error::other("corrupt frame")),
                    false => Ok(0),
                };
            }
            let n = buf.len().min(self.text.len()).min(self.step);
            buf[..n].copy_from_slice(&self.text[..n]);
            self.text = &self.text[n..];
            Ok(n)
        }
    }

    /// A stream longer than the first chunk, in the chunk lengths streams
    /// get.
    #[test]
    fn a_long_stream_in_the_chunks_streams_get_gives_what_it_gives_whole() {
        let rules = builtin_rules();
        let text = log().repeat(2 + FIRST_CHUNK_LEN / log().len() + 3 * CHUNK_LEN / log().len());
        assert!(text.len() > FIRST_CHUNK_LEN + 2 * CHUNK_LEN);
        let want = whole(text.as_bytes(), &rules);
        let got = chunked_after(text.as_bytes(), &rules, 2, (FIRST_CHUNK_LEN, CHUNK_LEN));
        assert_same(&got, &want, "4 MiB, then 1 MiB chunks");
    }

    #[test]
    fn a_read_error_is_told_where_it_was_met_and_what_came_before_is_read() {
        let rules = builtin_rules();
        let text = log();
        let cut = text.len() * 2 / 3;
        let want = whole(
            Stepped {
                text: &text.as_bytes()[..cut],
                step: 1000,
                fails: true,
            },
            &rules,
        );
        assert_eq!(want.1.errors.len(), 1, "{:?}", want.1.errors);
        assert_eq!(want.1.errors[0].offset, Some(cut as u64));
        for chunk_len in [4 << 10, 50 << 10] {
            let got = chunked(
                Stepped {
                    text: &text.as_bytes()[..cut],
                    step: 1000,
                    fails: true,
                },
                &rules,
                2,
                chunk_len,
            );
            assert_same(&got, &want, &format!("{chunk_len}-byte chunks"));
        }
    }

    /// Each chunk's lead is the last lines of the stream before it, however
    /// few lines the chunks before it hold.
    #[test]
    fn each_chunk_leads_with_the_lines_before_it() {
        let text: String = (0..40)
            .map(|n| match n % 5 {
                0 => format!("step {n} | loss 2.{n:04} | lr 3.0e-04 | tokens/s 1234567\n"),
                1 => "\n".to_owned(),
                _ => format!("line {n}\n"),
            })
            .collect();
        for chunk_len in [1, 20, 70] {
            let mut chunks = Chunks::new(text.as_bytes(), chunk_len);
            let mut seen = 0;
            while let Next::Chunk(chunk) = chunks.next() {
                let before = &text.as_bytes()[..chunk.offset as usize];
                let lines: Vec<&[u8]> = before.split_inclusive(|&b| b == b'\n').collect();
                let want: Vec<u8> = lines[lines.len().saturating_sub(LINES_BEFORE)..].concat();
                assert_eq!(
                    String::from_utf8_lossy(&chunk.lead),
                    String::from_utf8_lossy(&want),
                    "{chunk_len}-byte chunks, at {}",
                    chunk.offset
                );
                seen += 1;
            }
            assert!(seen > 4, "{chunk_len}-byte chunks: {seen}");
        }
    }

    /// A line too long to cut near leaves the rest of the stream to one
    /// part, read as it is read whole.
    #[test]
    fn a_line_too_long_to_cut_near_is_read_with_the_rest() {
        let rules = builtin_rules();
        let head = log();
        let long = "x".repeat(2 * crate::split::CUT_LINE_MAX + 10);
        let text = format!("{head}{long}\n{head}");
        let chunk_len = 64 << 10;
        let mut chunks = Chunks::new(text.as_bytes(), chunk_len);
        let mut cut = 0;
        loop {
            match chunks.next() {
                Next::Chunk(c) => cut += c.bytes.len(),
                Next::Uncut(..) => break,
                Next::End => panic!("the long line was cut near"),
            }
        }
        // Chunks were cut before the long line.
        assert!(cut > 0 && cut <= head.len(), "{cut}");
        let want = whole(text.as_bytes(), &rules);
        let got = chunked(text.as_bytes(), &rules, 2, chunk_len);
        assert_same(&got, &want, "one long line");
    }
}
