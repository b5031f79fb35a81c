//! Telling Python source from a log by the shape of its lines.
//!
//! A log holds Python too: a traceback quotes the source line of each frame
//! (`    x = model(y)`) under its `File "...", line N` line. What a log never
//! has is statements at the start of a line (`import torch`, `def f(`,
//! `class X:`) with nothing log-like around them, and what source never has
//! is log lines: `Traceback`, `File "..."`, an exception line, a timestamp,
//! a `[rank0]:` tag, a level word.

/// How many lines of each shape a piece of text has.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub(crate) struct LineShapes {
    /// Statements that only source starts a line with: `import`, `from x
    /// import`, `def`, `class`, a decorator, `if __name__`.
    statements: usize,
    /// Other lines source is made of: indented lines, comments, docstrings,
    /// assignments, calls, keywords, closing brackets.
    code: usize,
    /// Lines only a log has.
    log: usize,
    /// Anything else (prose).
    other: usize,
}

impl LineShapes {
    /// Counts the non-blank lines of `text`.
    #[cfg(test)]
    pub(crate) fn of(text: &str) -> LineShapes {
        let mut reader = ShapeReader::default();
        text.lines().for_each(|line| reader.read(line));
        reader.shapes
    }

    /// Whether `texts` (pieces of one file, such as its head and tail)
    /// together are plainly Python source ([`LineShapes::is_python`]).
    /// Stops at the first line after which they cannot be: in a log that
    /// is within its first few lines.
    pub(crate) fn is_python_source(texts: &[&str]) -> bool {
        // At least as many lines as the texts have non-blank ones.
        let bound: usize = texts
            .iter()
            .map(|t| bytecount::count(t.as_bytes(), b'\n') + 1)
            .sum();
        let mut total = LineShapes::default();
        for text in texts {
            let mut reader = ShapeReader::default();
            for line in text.lines() {
                reader.read(line);
                let so_far = total.add(reader.shapes);
                // `is_python` wants code in nine lines of ten and a log
                // line in at most one of fifty, of at most `bound` lines.
                if (so_far.log + so_far.other) * 10 > bound || so_far.log * 50 > bound {
                    return false;
                }
            }
            total = total.add(reader.shapes);
        }
        total.is_python()
    }

    /// Both counts together.
    pub(crate) fn add(self, other: LineShapes) -> LineShapes {
        LineShapes {
            statements: self.statements + other.statements,
            code: self.code + other.code,
            log: self.log + other.log,
            other: self.other + other.other,
        }
    }

    /// Whether the lines are plainly Python source: at least one statement
    /// only source has, nine lines in ten shaped like code, and at most one
    /// line in fifty shaped like a log.
    pub(crate) fn is_python(self) -> bool {
        let total = self.statements + self.code + self.log + self.other;
        self.statements > 0
            && (self.statements + self.code) * 10 >= total * 9
            && self.log * 50 <= total
    }
}

/// Shapes of lines read one at a time.
#[derive(Default)]
struct ShapeReader {
    shapes: LineShapes,
    /// Inside a triple-quoted string.
    in_string: bool,
}

impl ShapeReader {
    fn read(&mut self, line: &str) {
        let line = line.trim_end();
        if line.is_empty() {
            return;
        }
        // A triple-quoted string (a docstring, a usage text) may hold
        // anything: its lines count as code.
        let quotes = if line.contains(['"', '\'']) {
            line.matches("\"\"\"").count() + line.matches("'''").count()
        } else {
            0
        };
        let shapes = &mut self.shapes;
        if self.in_string || quotes > 0 {
            shapes.code += 1;
            self.in_string ^= quotes % 2 == 1;
            return;
        }
        match shape(line) {
            Shape::Statement => shapes.statements += 1,
            Shape::Code => shapes.code += 1,
            Shape::Log => shapes.log += 1,
            Shape::Other => shapes.other += 1,
        }
    }
}

enum Shape {
    Statement,
    Code,
    Log,
    Other,
}

fn shape(line: &str) -> Shape {
    let indented = line.starts_with([' ', '\t']);
    let text = line.trim_start();
    if is_log_line(text, indented) {
        return Shape::Log;
    }
    if indented || text.starts_with('#') {
        return Shape::Code;
    }
    if is_source_only_statement(text) {
        return Shape::Statement;
    }
    if is_statement(text) {
        Shape::Code
    } else {
        Shape::Other
    }
}

/// A line of a traceback, or one with what loggers and launchers put at
/// the start of a line.
fn is_log_line(text: &str, indented: bool) -> bool {
    if text.starts_with("Traceback (most recent call last)")
        || (text.starts_with("File \"") && text.contains("\", line "))
        || text.contains("%|")
    {
        return true;
    }
    if indented {
        return false;
    }
    const LEVELS: [&str; 5] = ["DEBUG:", "INFO:", "WARNING:", "ERROR:", "CRITICAL:"];
    text.starts_with(|c: char| c.is_ascii_digit())
        || (text.starts_with('[') && text.contains(']'))
        || text.starts_with("+ ")
        || LEVELS.iter().any(|level| text.starts_with(level))
        || is_glog_prefix(text)
        || is_exception_line(text)
}

/// `E1129 21:00:10.790000 595 file.py:12] ...`: a level letter and the
/// month and day.
fn is_glog_prefix(text: &str) -> bool {
    let bytes = text.as_bytes();
    matches!(bytes.first(), Some(b'I' | b'W' | b'E' | b'F'))
        && bytes.len() > 5
        && bytes
            .get(1..5)
            .is_some_and(|d| d.iter().all(u8::is_ascii_digit))
        && bytes.get(5) == Some(&b' ')
}

/// `RuntimeError: ...`, `torch.OutOfMemoryError: ...`: an exception's
/// dotted name ending as exceptions do, then its message.
fn is_exception_line(text: &str) -> bool {
    let Some((name, _)) = text.split_once(':') else {
        return false;
    };
    let dotted = !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '.');
    const ENDINGS: [&str; 5] = ["Error", "Exception", "Warning", "Interrupt", "Exit"];
    dotted && ENDINGS.iter().any(|end| name.ends_with(end))
}

/// A statement no log starts a line with.
fn is_source_only_statement(text: &str) -> bool {
    let class = text
        .strip_prefix("class ")
        .is_some_and(|rest| rest.ends_with(':') || rest.contains('('));
    let import =
        text.starts_with("import ") || (text.starts_with("from ") && text.contains(" import "));
    let decorator = text
        .strip_prefix('@')
        .is_some_and(|rest| rest.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_'));
    import
        || class
        || decorator
        || text.starts_with("def ")
        || text.starts_with("async def ")
        || text.starts_with("if __name__")
}

/// A statement at the start of a line: a keyword, an assignment, a call, a
/// string, a closing bracket or a continued line.
fn is_statement(text: &str) -> bool {
    const KEYWORDS: [&str; 17] = [
        "return", "for ", "while ", "if ", "elif ", "else:", "try:", "except", "finally:", "with ",
        "raise", "assert ", "global ", "del ", "pass", "async ", "await ",
    ];
    if KEYWORDS.iter().any(|k| text.starts_with(k))
        || text.starts_with([')', ']', '}', '"', '\''])
        || text.ends_with([',', '(', '[', '{', '\\', ':'])
    {
        return true;
    }
    // `name = ...`, `name.attr += ...`, `name: int = 0`, `name(...)`.
    let name_len = text
        .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == '.'))
        .unwrap_or(text.len());
    let (name, rest) = text.split_at(name_len);
    let rest = rest.trim_start();
    !name.is_empty()
        && !name.starts_with(|c: char| c.is_ascii_digit())
        && (rest.starts_with('(')
            || rest.starts_with(':')
            || (rest.starts_with('=') && !rest.starts_with("=="))
            || ["+=", "-=", "*=", "/=", "|=", "&="]
                .iter()
                .any(|op| rest.starts_with(op)))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Whether `text` is Python, by the early-stopping reading; the full
    /// count must agree with it on every text and on every cut into head
    /// and tail.
    fn python(text: &str) -> bool {
        let full = LineShapes::of(text).is_python();
        assert_eq!(LineShapes::is_python_source(&[text]), full, "{text:?}");
        for (at, _) in text.match_indices('\n') {
            let (head, tail) = text.split_at(at + 1);
            let together = LineShapes::of(head).add(LineShapes::of(tail)).is_python();
            assert_eq!(LineShapes::is_python_source(&[head, tail]), together);
        }
        full
    }

    const TRAIN_PY: &str = r#""""Train a model.

Usage: torchrun --nproc-per-node 8 train.py --batch-size 64
If you see "CUDA out of memory", lower --batch-size.
"""
import argparse
from pathlib import Path

import torch
import torch.distributed as dist

BATCH = 64


@torch.no_grad()
def evaluate(model, loader):
    model.eval()
    for x, y in loader:
        out = model(x.cuda())
    return out


class Trainer:
    def __init__(self, model):
        self.model = model  # RuntimeError: an illegal memory access was encountered


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--batch-size", type=int, default=BATCH)
    main(parser.parse_args())
"#;

    #[test]
    fn python_source_is_python() {
        assert!(python(TRAIN_PY));
        assert!(python(
            "import torch\nx = torch.zeros(1 << 40, device='cuda')\n"
        ));
        assert!(python(
            "#!/usr/bin/env python\n# a comment\nfrom os import path\n\n\ndef f(\n    a,\n):\n    pass\n"
        ));
    }

    #[test]
    fn a_traceback_is_a_log() {
        let traceback = r#"Traceback (most recent call last):
  File "/work/train.py", line 3, in <module>
    import foo
  File "/work/train.py", line 40, in main
    x = model(y)
    ^^^^^^^^^^^^
torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB.
"#;
        assert!(!python(traceback));
        let shapes = LineShapes::of(traceback);
        assert_eq!(shapes.statements, 0);
        assert!(shapes.log >= 3, "{shapes:?}");
    }

    #[test]
    fn logs_are_not_python() {
        for log in [
            "step 1 loss 0.5\nstep 2 loss 0.4\n",
            "[rank0]: import torch\n[rank0]: RuntimeError: CUDA error\n",
            "2026-11-29 18:18:49,123 INFO import done\n",
            "INFO:root:import torch\nINFO:root:def f(\n",
            "E1129 21:00:10.790000 595 api.py:12] failed\n",
            "Epoch 1: 100%|##########| 10/10 [00:01<00:00]\n",
            "",
        ] {
            assert!(!python(log), "{log:?}");
        }
    }

    #[test]
    fn a_log_that_echoes_its_script_first_is_still_a_log() {
        let mut text = TRAIN_PY.to_owned();
        for step in 0..40 {
            text.push_str(&format!("[rank0]: step {step} loss 0.5\n"));
        }
        assert!(!python(&text));
    }

    #[test]
    fn prose_is_not_python() {
        assert!(!python(
            "import torch first, then the model.\nThe run failed with CUDA out of memory.\nWe lowered the batch size.\n"
        ));
    }
}
