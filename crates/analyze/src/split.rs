//! Scanning one large file on several cores.
//!
//! A regular, uncompressed file is cut into parts at line boundaries; each
//! part is scanned on its own thread, counting lines from its start, and
//! the parts' findings are merged in order with their line numbers moved
//! down by the lines of the parts before them. A part reads past its end
//! only to complete the rule windows and evidence contexts open there.

use crate::findings::FindingTable;
use crate::scan::{lead_of, scan_part, MetricSampling, OnFinding, Part, LEAD_MAX};
use coroner_ingest::Input;
use coroner_logs::IGNORED_EXCEPTION;
use coroner_metrics::MetricCollector;
use coroner_model::{InputKind, InputSummary};
use coroner_rules::RuleSet;
use std::fs::File;
use std::io::{self, Read, Seek, SeekFrom};
use std::path::Path;

/// Files smaller than this are not worth splitting.
pub(crate) const SPLIT_MIN_BYTES: u64 = 64 << 20;

/// A file to scan in parts.
pub(crate) struct SplitFile<'a> {
    /// Where it is.
    pub path: &'a Path,
    /// Its size in bytes (it is not compressed).
    pub size: u64,
    /// What its content is.
    pub kind: InputKind,
    /// How many parts, each on its own thread.
    pub parts: usize,
}

/// What one part's scan gave: its findings, its summary, its metrics, and
/// whether a reading (a traceback, a stack dump) was open at its end.
pub(crate) type Scanned = (FindingTable, InputSummary, MetricCollector, bool);

/// Scans `file` in parts into `table` and `summary`, returning the
/// training metrics of the whole file; `Err` when the file cannot be
/// reopened or read.
///
/// A part that ends with a traceback or a stack dump still open (its
/// header in this part, its frames or exception in the next) is scanned
/// again together with the next part, as often as needed, so that what is
/// found never depends on where the cuts fell, and so on the number of
/// cores.
pub(crate) fn scan_split(
    input: &Input,
    file: &SplitFile<'_>,
    rules: &RuleSet,
    table: &mut FindingTable,
    summary: &mut InputSummary,
    on_finding: OnFinding<'_>,
) -> io::Result<MetricCollector> {
    let bounds = line_bounds(file.path, file.size, file.parts)?;
    let table_input = table.input();
    let template = summary.clone();
    let shared = &template;
    // Findings are announced by the first scan of each part, not again
    // when parts are scanned together.
    let scan = |start: u64, end: u64, announce: OnFinding<'_>| -> io::Result<Scanned> {
        scan_range(
            input,
            file,
            rules,
            table_input,
            shared,
            announce,
            start,
            end,
        )
    };
    let first: Vec<io::Result<Scanned>> = std::thread::scope(|scope| {
        let handles: Vec<_> = bounds
            .windows(2)
            .map(|w| {
                let (start, end) = (w[0], w[1]);
                scope.spawn(move || scan(start, end, on_finding))
            })
            .collect();
        handles
            .into_iter()
            .map(|h| {
                h.join()
                    .unwrap_or_else(|_| Err(io::Error::other("a scanning thread panicked")))
            })
            .collect()
    });
    let mut merged = Merged::new(table, summary);
    let mut results = first.into_iter();
    // The part at bounds[i], extended over the next ones while it ends
    // with something open.
    let mut i = 0;
    while let Some(result) = results.next() {
        let mut scanned = result?;
        let start = bounds.get(i).copied().unwrap_or(file.size);
        i += 1;
        while scanned.3 && i + 1 < bounds.len() {
            let _ = results.next();
            i += 1;
            scanned = scan(start, bounds.get(i).copied().unwrap_or(file.size), None)?;
        }
        merged.add(scanned);
    }
    Ok(merged.finish())
}

/// The parts of one input merged in order: their findings with their line
/// numbers moved down by the lines of the parts before them, their lines,
/// bytes, errors and notes, and their training metrics.
pub(crate) struct Merged<'a> {
    table: &'a mut FindingTable,
    summary: &'a mut InputSummary,
    metrics: MetricCollector,
    lines: u64,
    bytes: u64,
}

impl<'a> Merged<'a> {
    pub(crate) fn new(table: &'a mut FindingTable, summary: &'a mut InputSummary) -> Self {
        Merged {
            table,
            summary,
            metrics: MetricCollector::new(),
            lines: 0,
            bytes: 0,
        }
    }

    /// Adds the next part.
    pub(crate) fn add(&mut self, scanned: Scanned) {
        let (mut part_table, part_summary, part_metrics, _) = scanned;
        self.metrics.absorb(part_metrics, self.lines);
        part_table.shift_lines(self.lines);
        self.table.merge(part_table);
        if part_summary.last_text_line > 0 {
            self.summary.last_text_line = self.lines + part_summary.last_text_line;
        }
        self.lines += part_summary.lines;
        self.bytes += part_summary.bytes;
        self.summary.errors.extend(part_summary.errors);
        for note in part_summary.notes {
            if !self.summary.notes.contains(&note) {
                self.summary.notes.push(note);
            }
        }
    }

    /// The input's lines and bytes, and the metrics of the whole input.
    pub(crate) fn finish(self) -> MetricCollector {
        self.summary.lines = self.lines;
        self.summary.bytes = self.bytes;
        self.metrics
    }
}

/// Scans the lines from `start` to `end` of `file` on their own.
#[allow(clippy::too_many_arguments)]
fn scan_range(
    input: &Input,
    file: &SplitFile<'_>,
    rules: &RuleSet,
    table_input: usize,
    summary: &InputSummary,
    on_finding: OnFinding<'_>,
    start: u64,
    end: u64,
) -> io::Result<Scanned> {
    let mut part_table = FindingTable::for_input(table_input);
    let mut part_summary = summary.clone();
    // The lines just before the part are read first: its first lines look
    // back to them.
    let lead_from = start.saturating_sub(LEAD_MAX as u64);
    let mut before = vec![0; usize::try_from(start - lead_from).unwrap_or(0)];
    let mut reader = File::open(file.path)?;
    reader.seek(SeekFrom::Start(lead_from))?;
    reader.read_exact(&mut before)?;
    let mut after = File::open(file.path)?;
    after.seek(SeekFrom::Start(end))?;
    let part = Part {
        reader: reader.take(end - start),
        offset: start,
        after: (end < file.size).then_some(after),
        live: false,
        metrics: MetricSampling::Dense,
        lead: lead_of(&before, lead_from == 0),
    };
    let (metrics, open_at_end) = scan_part(
        input,
        file.kind,
        part,
        rules,
        &mut part_table,
        &mut part_summary,
        on_finding,
    );
    Ok((part_table, part_summary, metrics, open_at_end))
}

/// How many indented lines a cut may pass over to reach the start of a
/// record.
const RECORD_LINES: usize = 256;

/// Bytes read before a cut's target to see the start of its line.
const LOOK_BACK: usize = 512;

/// A line this long (or longer) at a cut's target leaves the cut out.
pub(crate) const CUT_LINE_MAX: usize = 2 << 20;

/// Bytes after a cut's target looked at at most to place the cut.
pub(crate) const CUT_WINDOW_MAX: usize = 16 << 20;

/// Where a cut at or after a target falls in some bytes of an input.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Cut {
    /// Before the byte at this index.
    At(usize),
    /// Past the bytes given, which are not the input's end: more are needed
    /// to tell.
    More,
    /// Nowhere near the target: a line at least [`CUT_LINE_MAX`] long, or
    /// the input's end.
    Nowhere,
}

/// Where to cut `bytes` (a run of an input; `ends_input` when it runs to
/// the input's end) at or after `target`: at the start of the first line
/// after the one `target` falls in that is not indented (an indented line
/// continues the record above it: a torchrun summary's `exitcode :` line
/// after its `rank :` line, the frames of a stack, which rules read
/// together), passing over at most [`RECORD_LINES`] indented lines; and
/// never between Python's `Exception ignored in: ...` and the header of
/// the traceback it announces.
pub(crate) fn cut_after(bytes: &[u8], target: usize, ends_input: bool) -> Cut {
    if target >= bytes.len() {
        return if ends_input { Cut::Nowhere } else { Cut::More };
    }
    // The end of the line starting at `from`: `Err` when it cannot be told.
    let line_end = |from: usize| -> Result<usize, Cut> {
        let rest = bytes.get(from..).unwrap_or_default();
        let scope = rest.get(..CUT_LINE_MAX).unwrap_or(rest);
        match memchr::memchr(b'\n', scope) {
            Some(at) => Ok(from + at + 1),
            None if scope.len() == CUT_LINE_MAX || ends_input => Err(Cut::Nowhere),
            None => Err(Cut::More),
        }
    };
    let back = target.saturating_sub(LOOK_BACK);
    let line_start = bytes
        .get(back..target)
        .and_then(|b| memchr::memrchr(b'\n', b))
        .map_or(back, |at| back + at + 1);
    let mut cut = match line_end(target) {
        Ok(end) => end,
        Err(why) => return why,
    };
    let mut last_line = line_start..cut;
    for _ in 0..RECORD_LINES {
        match bytes.get(cut) {
            None if ends_input => break,
            None => return Cut::More,
            Some(b' ' | b'\t') => {}
            Some(_) => break,
        }
        let end = match line_end(cut) {
            Ok(end) => end,
            Err(why) => return why,
        };
        last_line = cut..end;
        cut = end;
    }
    let announced = bytes
        .get(last_line)
        .is_some_and(|l| memchr::memmem::find(l, IGNORED_EXCEPTION.as_bytes()).is_some());
    if announced {
        cut = match line_end(cut) {
            Ok(end) => end,
            Err(why) => return why,
        };
    }
    if cut >= bytes.len() && ends_input {
        Cut::Nowhere
    } else {
        Cut::At(cut)
    }
}

/// Offsets cutting the file into `parts` runs of whole lines: 0, where
/// [`cut_after`] cuts after each `size * k / parts`, and `size`.
fn line_bounds(path: &Path, size: u64, parts: usize) -> io::Result<Vec<u64>> {
    let mut file = File::open(path)?;
    let mut bounds = vec![0];
    let mut window = Vec::new();
    for k in 1..parts as u64 {
        let target = size * k / parts as u64;
        if target <= *bounds.last().unwrap_or(&0) {
            continue;
        }
        let back = target.min(LOOK_BACK as u64);
        let start = target - back;
        let mut ahead = 1 << 20;
        loop {
            let len = (back + ahead).min(size - start);
            window.clear();
            file.seek(SeekFrom::Start(start))?;
            (&mut file).take(len).read_to_end(&mut window)?;
            let ends_input = start + window.len() as u64 >= size;
            match cut_after(&window, back as usize, ends_input) {
                Cut::At(at) => {
                    bounds.push(start + at as u64);
                    break;
                }
                Cut::More if ahead < CUT_WINDOW_MAX as u64 && !ends_input => ahead *= 2,
                Cut::More | Cut::Nowhere => break,
            }
        }
    }
    bounds.push(size);
    bounds.dedup();
    Ok(bounds)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scan::scan_text;
    use crate::test_support::{
        builtin_rules, contexts_before, deep_traceback, frames_without_header, scanned, step_lines,
        xorshift,
    };
    use coroner_ingest::InputSource;
    use std::path::PathBuf;

    fn summary() -> InputSummary {
        InputSummary::new("big.log", InputKind::Log)
    }

    /// `text` written to a file of its own, and the input naming it.
    fn file_input(text: &str, name: &str) -> (PathBuf, Input) {
        let path = std::env::temp_dir().join(format!("coroner-{name}-{}.log", std::process::id()));
        std::fs::write(&path, text).unwrap_or_else(|e| panic!("{e}"));
        let input = Input {
            display: "big.log".to_owned(),
            source: InputSource::File(path.clone()),
            rank: None,
            explicit: true,
            loadable_elf: None,
        };
        (path, input)
    }

    /// The finding table and the summary of the file at `path` (holding
    /// `size` bytes) scanned in `parts` parts.
    fn scanned_in_parts(
        input: &Input,
        path: &Path,
        size: usize,
        rules: &RuleSet,
        parts: usize,
    ) -> (FindingTable, InputSummary) {
        let mut table = FindingTable::for_input(0);
        let mut split_summary = summary();
        let file = SplitFile {
            path,
            size: size as u64,
            kind: InputKind::Log,
            parts,
        };
        scan_split(input, &file, rules, &mut table, &mut split_summary, None)
            .unwrap_or_else(|e| panic!("{e}"));
        (table, split_summary)
    }

    #[test]
    fn a_file_scanned_in_parts_gives_what_it_gives_whole() {
        let rules = builtin_rules();
        // A torchrun Root Cause block spans 8 lines: cut into many parts,
        // some blocks straddle a cut and their windows must still close.
        let block = "Root Cause (first observed failure):\n[0]:\n  time      : 2026-11-29_15:17:28\n  host      : localhost\n  rank      : 1 (local_rank: 1)\n  exitcode  : -9 (pid: 2038)\n  error_file: <N/A>\n  traceback : Signal 9 (SIGKILL) received by PID 2038\n";
        // Python tracebacks of 20 lines: cuts fall inside some of them.
        let traceback = "Traceback (most recent call last):\n  File \"train.py\", line 10, in <module>\n    main()\n  File \"train.py\", line 8, in main\n    step()\n  File \"train.py\", line 5, in step\n    loss.backward()\n  File \"torch/_tensor.py\", line 521, in backward\n    torch.autograd.backward(\n  File \"torch/autograd/__init__.py\", line 289, in backward\n    _engine_run_backward(\n  File \"torch/autograd/graph.py\", line 768, in _engine_run_backward\n    return Variable._execution_engine.run_backward(\n  File \"torch/cuda/memory.py\", line 1, in alloc\n    raise\n  File \"torch/cuda/memory.py\", line 2, in alloc2\n    raise\ntorch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 79.10 GiB of which 1.06 GiB is free.\n";
        let mut text = String::new();
        for n in 0..4000 {
            if n % 89 == 0 {
                text.push_str(traceback);
            } else if n % 97 == 0 {
                text.push_str(block);
            } else if n % 13 == 0 {
                text.push_str("[rank3]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 3 has a total capacity of 79.10 GiB of which 1.06 GiB is free.\n");
            } else {
                text.push_str(&format!("step {n} | loss 2.{n:04} | lr 3.0e-04\n"));
            }
        }
        // Blank lines at the end move the cuts; some then fall inside the
        // torchrun blocks, whose indented lines must stay together.
        for _ in 0..2000 {
            text.push_str("  \n> \n");
        }
        let (path, input) = file_input(&text, "split");
        let mut whole = FindingTable::for_input(0);
        let mut whole_summary = summary();
        scan_text(
            &input,
            InputKind::Log,
            text.as_bytes(),
            &rules,
            &mut whole,
            &mut whole_summary,
        );
        for parts in [2, 3, 5, 7, 31, 64] {
            let (split, split_summary) = scanned_in_parts(&input, &path, text.len(), &rules, parts);
            assert_eq!(split_summary.lines, whole_summary.lines, "{parts} parts");
            assert_eq!(
                split_summary.last_text_line, whole_summary.last_text_line,
                "{parts} parts"
            );
            assert_eq!(split_summary.bytes, whole_summary.bytes, "{parts} parts");
            let mut again = FindingTable::for_input(0);
            let mut again_summary = summary();
            scan_text(
                &input,
                InputKind::Log,
                text.as_bytes(),
                &rules,
                &mut again,
                &mut again_summary,
            );
            assert_eq!(split.digest(&rules), again.digest(&rules), "{parts} parts");
        }
        let _ = std::fs::remove_file(&path);
        assert!(!whole.digest(&rules).is_empty());
    }

    #[test]
    fn a_traceback_across_a_cut_is_kept() {
        let rules = builtin_rules();
        let filler = step_lines(2000);
        let mut traceback = String::from("Traceback (most recent call last):\n");
        for f in 0..20 {
            traceback.push_str(&format!(
                "  File \"/opt/train/model.py\", line {f}, in layer_{f}\n    x = self.layer_{f}(x)\n"
            ));
        }
        traceback.push_str("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 79.10 GiB of which 1.06 GiB is free.\n");
        // The middle of the file, where two parts are cut, falls inside the
        // traceback.
        let text = format!("{filler}{traceback}{filler}");
        let (path, input) = file_input(&text, "cut");
        let mut whole = FindingTable::for_input(0);
        scan_text(
            &input,
            InputKind::Log,
            text.as_bytes(),
            &rules,
            &mut whole,
            &mut summary(),
        );
        let whole = whole.digest(&rules);
        assert!(whole.iter().any(|d| d.contains("(2042, 20)")), "{whole:?}");
        for parts in [2, 3, 4] {
            let (split, _) = scanned_in_parts(&input, &path, text.len(), &rules, parts);
            assert_eq!(split.digest(&rules), whole, "{parts} parts");
        }
        let _ = std::fs::remove_file(&path);
    }

    /// `text` written to a file of its own (see [`file_input`]), after
    /// checking that the cut between two parts of it falls just before
    /// `line_start`, the case a test looks at.
    fn halved_before(text: &str, name: &str, line_start: &str) -> (PathBuf, Input) {
        let (path, input) = file_input(text, name);
        let bounds = line_bounds(&path, text.len() as u64, 2).unwrap_or_else(|e| panic!("{e}"));
        assert!(
            text[bounds[1] as usize..].starts_with(line_start),
            "{bounds:?}"
        );
        (path, input)
    }

    /// A part's first line looks back to the lines before the part: an
    /// exception line just after a cut still takes its frame from the
    /// line above it.
    #[test]
    fn a_part_looks_back_past_its_cut() {
        let rules = builtin_rules();
        let filler = step_lines(2000);
        // The middle of the file falls in the frame's line: the cut
        // between two parts is placed just before the exception line.
        let text = format!("{filler}{}{filler}", frames_without_header(1));
        let (path, input) = halved_before(&text, "lead", "ValueError");
        let (whole, _) = scanned(text.as_bytes(), &rules);
        let whole = whole.digest(&rules);
        assert!(
            whole
                .iter()
                .any(|d| d.contains("\"raised_in\": \"step_0\"")),
            "{whole:?}"
        );
        let (split, _) = scanned_in_parts(&input, &path, text.len(), &rules, 2);
        assert_eq!(split.digest(&rules), whole);
        // The lines shown before the exception line are the whole file's.
        let (whole, _) = scanned(text.as_bytes(), &rules);
        let (split, _) = scanned_in_parts(&input, &path, text.len(), &rules, 2);
        let shown = contexts_before(whole, &rules);
        assert!(
            shown.iter().any(|c| c.len() == 2 && c[1].contains("File")),
            "{shown:?}"
        );
        assert_eq!(contexts_before(split, &rules), shown);
        let _ = std::fs::remove_file(&path);
    }

    /// A message hard-wrapped just before a cut, both of whose lines hold
    /// a rule's literal, is read once: by the part before the cut, which
    /// reads past its end to complete it.
    #[test]
    fn a_message_wrapped_at_a_cut_is_read_once() {
        let rules = builtin_rules();
        let filler = step_lines(2000);
        let wrapped = "torch.distributed.DistBackendError: NCCL error in: ../torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:1970, unhan\ndled system error (run with NCCL_DEBUG=INFO for details), NCCL version 2.20.5\n";
        // The middle of the file falls in the wrapped message's first line.
        let text = format!("{filler}{wrapped}{filler}");
        let (path, input) = halved_before(&text, "wrapped", "dled");
        let (whole, _) = scanned(text.as_bytes(), &rules);
        let whole = whole.digest(&rules);
        assert!(
            whole
                .iter()
                .any(|d| d.starts_with("nccl-unhandled-system-error None x1 @2001 [2001, 2002]")),
            "{whole:?}"
        );
        let (split, _) = scanned_in_parts(&input, &path, text.len(), &rules, 2);
        assert_eq!(split.digest(&rules), whole);
        let _ = std::fs::remove_file(&path);
    }

    /// A file whose last parts hold only blank lines: its last line with
    /// text is in an earlier part, numbered as in the whole file.
    #[test]
    fn the_last_line_with_text_is_found_across_parts() {
        let rules = RuleSet::new(Vec::new()).unwrap_or_else(|e| panic!("{e:?}"));
        let mut text = String::new();
        for n in 0..3000 {
            text.push_str(&format!("step {n} | loss 2.{n:04} | lr 3.0e-04\n"));
        }
        for _ in 0..3000 {
            text.push_str("  \n> \n");
        }
        let (path, input) = file_input(&text, "blank");
        for parts in [1, 2, 5, 16] {
            let (_, split_summary) = scanned_in_parts(&input, &path, text.len(), &rules, parts);
            assert_eq!(split_summary.lines, 9000, "{parts} parts");
            assert_eq!(split_summary.last_text_line, 3000, "{parts} parts");
        }
        let _ = std::fs::remove_file(&path);
    }

    /// Files put together at random from lines of many shapes, scanned in
    /// 2 to 9 parts, give what they give scanned whole.
    #[test]
    fn random_files_scanned_in_parts_give_what_they_give_whole() {
        let rules = builtin_rules();
        let pieces: [&str; 10] = [
            "step 7 | loss 2.1 | lr 3.0e-04\n",
            "Traceback (most recent call last):\n",
            "  File \"train.py\", line 10, in <module>\n",
            "    main()\n",
            "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 79.10 GiB of which 1.06 GiB is free.\n",
            "Exception ignored in: <function Prefetcher.__del__ at 0x7f3da34bd620>\n",
            "[rank2]: RuntimeError: CUDA error: an illegal memory access was encountered\r\n",
            "  exitcode  : -9 (pid: 2038)\n",
            "\t\tindented with tabs\n",
            "\n",
        ];
        let mut next = xorshift(0x2545_f491_4f6c_dd1d);
        // A traceback longer than the lines a part reads past its end.
        let deep = deep_traceback(300);
        for round in 0..12 {
            let mut text = String::new();
            for _ in 0..(500 + next() % 3000) {
                if next().is_multiple_of(400) {
                    text.push_str(&deep);
                }
                text.push_str(pieces[(next() % pieces.len() as u64) as usize]);
            }
            if next().is_multiple_of(2) {
                text.push_str("no final newline");
            }
            let (path, input) = file_input(&text, &format!("random-{round}"));
            let mut whole = FindingTable::for_input(0);
            let mut whole_summary = summary();
            scan_text(
                &input,
                InputKind::Log,
                text.as_bytes(),
                &rules,
                &mut whole,
                &mut whole_summary,
            );
            let whole = whole.digest(&rules);
            let parts = 2 + (next() % 8) as usize;
            let (split, split_summary) = scanned_in_parts(&input, &path, text.len(), &rules, parts);
            assert_eq!(split.digest(&rules), whole, "round {round}, {parts} parts");
            assert_eq!(split_summary.lines, whole_summary.lines, "round {round}");
            assert_eq!(split_summary.bytes, whole_summary.bytes, "round {round}");
            let _ = std::fs::remove_file(&path);
        }
    }

    #[test]
    fn an_ignored_exceptions_announcement_stays_with_its_header() {
        // The middle of the file falls in the announcement's line, past its
        // first words: the cut goes after the header that follows it, not
        // between the two.
        let head = "step 120 | loss 2.41\n".repeat(40);
        let record = "Exception ignored in: <function Prefetcher.__del__ at 0x7f3da34bd620>\nTraceback (most recent call last):\n  File \"ign.py\", line 10, in __del__\n";
        let announced = head.len();
        let header = announced + record.find("Traceback").unwrap_or_default();
        let mut text = format!("{head}{record}");
        while text.len() / 2 < announced + 30 {
            text.push_str("step 121 | loss 2.40\n");
        }
        assert!(text.len() / 2 < header, "the middle is in the announcement");
        let (path, _) = file_input(&text, "ignored-cut");
        let bounds = line_bounds(&path, text.len() as u64, 2).unwrap_or_default();
        let header_end = (header + "Traceback (most recent call last):\n".len()) as u64;
        assert!(
            bounds
                .iter()
                .all(|&b| b <= announced as u64 || b >= header_end),
            "{bounds:?}"
        );
        let _ = std::fs::remove_file(path);
    }
}
