//! Logs pasted double-spaced: a web page or a chat client that turned each
//! line of a log into a paragraph puts a blank line after every line. Read
//! as it is, such a log has no two lines in a row, and every message that
//! goes on over a second line, every rule that looks at the line before,
//! and every traceback's exception and its message are cut apart.
//!
//! A double-spaced input is read without the blank lines the paste added
//! (a run of several, a blank line of the log itself, is read as one).
//! The readers number the lines they see one after another; what they
//! report is numbered back to the input's own lines here.

use coroner_ingest::clean_line;
use coroner_logs::{DesyncSnapshot, StackDump, StallReport};
use coroner_model::Traceback;

/// Lines looked at to tell whether an input is double-spaced.
const SAMPLE_LINES: usize = 400;
/// Fewest lines with text a double-spaced paste is recognised from.
const MIN_TEXT_LINES: usize = 2;
/// At most one line with text in this many may follow another directly
/// (a line the paste did not split from the next).
const ADJACENT_ONE_IN: usize = 20;
/// Bytes of a double-spaced input read without its added blank lines: a
/// paste is far shorter, and the numbering kept for it stays small.
pub(crate) const SPACED_BYTES: u64 = 2 << 20;

/// Whether the input starting with `bytes` is double-spaced: at least
/// [`MIN_TEXT_LINES`] lines with text among its first [`SAMPLE_LINES`],
/// and nearly none of them directly after another.
pub(crate) fn double_spaced(bytes: &[u8]) -> bool {
    let mut cleaned = Vec::new();
    let mut text_lines = 0;
    let mut adjacent = 0;
    let mut after_text = false;
    for raw in bytes.split(|&b| b == b'\n').take(SAMPLE_LINES) {
        let has_text = !clean_line(raw, &mut cleaned).trim_ascii().is_empty();
        if has_text {
            text_lines += 1;
            adjacent += usize::from(after_text);
            // Past this many, no sample is double-spaced: nearly every
            // log stops here, within its first few dozen lines.
            if adjacent * ADJACENT_ONE_IN > SAMPLE_LINES {
                return false;
            }
        }
        after_text = has_text;
    }
    text_lines >= MIN_TEXT_LINES && adjacent * ADJACENT_ONE_IN <= text_lines
}

/// Where the lines the readers see stand in the input: the blank lines
/// left out before each line.
#[derive(Debug, Default)]
pub(crate) struct Spacing {
    /// `(line, left out before it)`, from each line that follows a line
    /// left out, in order: a line's count holds until the next entry.
    steps: Vec<(u64, u64)>,
    left_out: u64,
    /// Blank lines in the current run.
    run: u64,
}

impl Spacing {
    /// Notes a blank line before the line the readers will see as `next`:
    /// whether it is left out. The first of a run is the paste's; the
    /// second stands for a blank line of the log itself, and is read.
    pub(crate) fn blank(&mut self, next: u64) -> bool {
        self.run += 1;
        if self.run == 2 {
            return false;
        }
        self.left_out += 1;
        match self.steps.last_mut() {
            Some(last) if last.0 == next => last.1 = self.left_out,
            _ => self.steps.push((next, self.left_out)),
        }
        true
    }

    /// Notes a line with text.
    pub(crate) fn text(&mut self) {
        self.run = 0;
    }

    /// Lines left out so far.
    pub(crate) fn left_out(&self) -> u64 {
        self.left_out
    }

    /// The input's number of the line the readers saw as `line`.
    pub(crate) fn input_line(&self, line: u64) -> u64 {
        let i = self.steps.partition_point(|&(from, _)| from <= line);
        line + i.checked_sub(1).map_or(0, |i| self.steps[i].1)
    }

    /// The readers' number of the input's line `line`.
    pub(crate) fn read_line(&self, line: u64) -> u64 {
        let i = self
            .steps
            .partition_point(|&(from, left)| from + left <= line);
        line - i.checked_sub(1).map_or(0, |i| self.steps[i].1)
    }

    /// Numbers `line`, as the readers saw it, back to the input's line.
    fn renumber(&self, line: &mut u64) {
        *line = self.input_line(*line);
    }

    /// Numbers what a traceback reader read back to the input's lines.
    pub(crate) fn renumber_traceback(&self, traceback: &mut Traceback) {
        for e in &mut traceback.exceptions {
            self.renumber(&mut e.line);
        }
    }

    pub(crate) fn renumber_stack_dump(&self, dump: &mut StackDump) {
        self.renumber(&mut dump.line);
        for thread in &mut dump.threads {
            self.renumber(&mut thread.line);
            thread
                .frame_lines
                .iter_mut()
                .for_each(|(line, _)| self.renumber(line));
        }
    }

    pub(crate) fn renumber_desync(&self, snapshot: &mut DesyncSnapshot) {
        self.renumber(&mut snapshot.line);
        snapshot
            .groups
            .iter_mut()
            .for_each(|g| self.renumber(&mut g.line));
    }

    pub(crate) fn renumber_stall(&self, report: &mut StallReport) {
        self.renumber(&mut report.line);
        report
            .entries
            .iter_mut()
            .for_each(|e| self.renumber(&mut e.line));
        report
            .lines
            .iter_mut()
            .for_each(|(line, _)| self.renumber(line));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_paste_with_a_blank_line_after_every_line_is_double_spaced() {
        let paste = "Traceback (most recent call last):\n\n  File \"train.py\", line 3, in <module>\n\n    main()\n\nRuntimeError: CUDA error: out of memory\n\n\n\n\n\nNext\n\nlines\n\n";
        assert!(double_spaced(paste.as_bytes()));
        let crlf = paste.replace('\n', "\r\n");
        assert!(double_spaced(crlf.as_bytes()));
    }

    #[test]
    fn a_log_with_blank_lines_between_its_parts_is_not() {
        let log = "step 1 loss 2.0\nstep 2 loss 1.9\n\nstep 3 loss 1.8\n\nstep 4 loss 1.7\n\nstep 5\n\nstep 6\n\nstep 7\n";
        assert!(!double_spaced(log.as_bytes()));
        assert!(!double_spaced(b"one\n"));
    }

    #[test]
    fn numbers_go_back_to_the_input_lines() {
        // Input lines: 1 a, 2 blank, 3 b, 4 blank, 5 blank (read), 6 blank,
        // 7 c. The readers see a=1, b=2, blank=3, c=4.
        let mut s = Spacing::default();
        s.text();
        assert!(s.blank(2));
        s.text();
        assert!(s.blank(3));
        assert!(!s.blank(3));
        assert!(s.blank(4));
        s.text();
        let seen: Vec<u64> = (1..=4).map(|l| s.input_line(l)).collect();
        assert_eq!(seen, [1, 3, 5, 7]);
        let back: Vec<u64> = [1, 3, 5, 7].iter().map(|&l| s.read_line(l)).collect();
        assert_eq!(back, [1, 2, 3, 4]);
        assert_eq!(s.left_out(), 3);
        // Past the last step, every line keeps the last count.
        assert_eq!(s.input_line(10), 13);
    }
}
