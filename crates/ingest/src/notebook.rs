//! Jupyter notebooks, read as the output their cells printed.
//!
//! A notebook (`.ipynb`, nbformat 4) is one JSON object whose `cells` hold
//! the code and, under `outputs`, what running it printed: streams
//! (`{"output_type": "stream", "name": "stderr", "text": [...]}`), the
//! traceback of an error (`"traceback": [...]`, with the terminal's
//! colours) and results (`"data": {"text/plain": [...]}`). The code is
//! not evidence; the outputs are read, in the cells' order, as the log
//! they were on screen. A notebook that does not parse, or is larger than
//! [`MAX_NOTEBOOK`], is read as it is.

use crate::decoded::{Decode, DecodedReader};
use serde::Deserialize;
use std::io::{self, Read};

/// Largest notebook read as one: a notebook is parsed whole (what is not
/// text, such as images, is passed over without being kept). A larger
/// one is read as it is.
const MAX_NOTEBOOK: u64 = 64 * 1024 * 1024;
/// Bytes handed on at a time when a notebook is read as it is.
const CHUNK: u64 = 1024 * 1024;

/// The parts of a notebook read: its cells' outputs.
#[derive(Deserialize)]
struct Notebook {
    #[serde(default)]
    cells: Vec<Cell>,
}

#[derive(Deserialize)]
struct Cell {
    #[serde(default)]
    outputs: Vec<Output>,
}

#[derive(Deserialize)]
struct Output {
    #[serde(default)]
    output_type: String,
    /// A stream's text.
    text: Option<Text>,
    /// An error's traceback, a line per item without its line end.
    traceback: Option<Vec<String>>,
    /// A result's forms.
    data: Option<Data>,
}

#[derive(Deserialize)]
struct Data {
    #[serde(rename = "text/plain")]
    plain: Option<Text>,
}

/// Text, whole or as a list of lines each with its line end.
#[derive(Deserialize)]
#[serde(untagged)]
enum Text {
    Whole(String),
    Lines(Vec<String>),
}

/// Whether `head` starts a notebook: a JSON object whose first key is
/// `cells` (as Jupyter writes them, keys sorted) or `nbformat`.
pub fn sniff(head: &[u8]) -> bool {
    let head = head.trim_ascii_start();
    let Some(rest) = head.strip_prefix(b"{") else {
        return false;
    };
    let rest = rest.trim_ascii_start();
    let key = |k: &[u8]| {
        rest.strip_prefix(k)
            .map(|after| after.trim_ascii_start().starts_with(b":"))
            .unwrap_or(false)
    };
    key(b"\"cells\"") || key(b"\"nbformat\"")
}

/// A decoder of a notebook into the text of its outputs.
pub struct NotebookDecoder<R> {
    inner: R,
    state: State,
}

/// How far a [`NotebookDecoder`] is.
#[derive(Clone, Copy, PartialEq, Eq)]
enum State {
    /// Nothing read yet.
    Start,
    /// Too large to parse, or not a notebook after all: the bytes are
    /// handed on as they are.
    AsItIs,
    Done,
}

impl<R: Read> NotebookDecoder<R> {
    /// A reader of the outputs of the notebook `inner` holds.
    pub fn reader(inner: R) -> DecodedReader<NotebookDecoder<R>> {
        DecodedReader::new(NotebookDecoder {
            inner,
            state: State::Start,
        })
    }
}

impl<R: Read> Decode for NotebookDecoder<R> {
    fn fill(&mut self, out: &mut Vec<u8>) -> io::Result<bool> {
        match self.state {
            State::Done => return Ok(false),
            State::AsItIs => {
                (&mut self.inner).take(CHUNK).read_to_end(out)?;
                return Ok(!out.is_empty());
            }
            State::Start => {}
        }
        let mut raw = Vec::new();
        (&mut self.inner)
            .take(MAX_NOTEBOOK + 1)
            .read_to_end(&mut raw)?;
        let parsed = (raw.len() as u64 <= MAX_NOTEBOOK)
            .then(|| serde_json::from_slice::<Notebook>(&raw).ok())
            .flatten();
        match parsed {
            Some(notebook) => {
                outputs(&notebook, out);
                self.state = State::Done;
            }
            // Read as it is, like any other text.
            None => {
                *out = raw;
                self.state = State::AsItIs;
            }
        }
        Ok(!out.is_empty())
    }
}

/// Appends the text of `notebook`'s outputs to `out`.
fn outputs(notebook: &Notebook, out: &mut Vec<u8>) {
    for output in notebook.cells.iter().flat_map(|cell| &cell.outputs) {
        let before = out.len();
        let text = match output.output_type.as_str() {
            "stream" => output.text.as_ref(),
            "execute_result" | "display_data" => {
                output.data.as_ref().and_then(|d| d.plain.as_ref())
            }
            "error" => {
                for line in output.traceback.iter().flatten() {
                    out.extend_from_slice(line.as_bytes());
                    out.push(b'\n');
                }
                None
            }
            _ => None,
        };
        match text {
            Some(Text::Whole(s)) => out.extend_from_slice(s.as_bytes()),
            Some(Text::Lines(lines)) => {
                for line in lines {
                    out.extend_from_slice(line.as_bytes());
                }
            }
            None => {}
        }
        if out.len() > before && !out.ends_with(b"\n") {
            out.push(b'\n');
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(input: &[u8]) -> String {
        crate::decoded::read_all(NotebookDecoder::reader(input))
    }

    #[test]
    fn a_notebook_reads_as_its_outputs() {
        let notebook = r#"{
 "cells": [
  {"cell_type": "code", "execution_count": 1, "metadata": {},
   "source": ["raise RuntimeError('CUDA out of memory')\n"],
   "outputs": [
    {"name": "stderr", "output_type": "stream", "text": ["Loading shards: 100%\n", "Killed"]},
    {"output_type": "execute_result", "data": {"text/plain": ["tensor([1.])"]}, "metadata": {}, "execution_count": 1},
    {"output_type": "error", "ename": "OutOfMemoryError", "evalue": "CUDA out of memory.",
     "traceback": ["\u001b[0;31m----------\u001b[0m", "\u001b[0;31mOutOfMemoryError\u001b[0m: CUDA out of memory."]}
   ]},
  {"cell_type": "markdown", "metadata": {}, "source": ["illegal memory access"]}
 ],
 "metadata": {},
 "nbformat": 4,
 "nbformat_minor": 5
}"#;
        assert!(sniff(notebook.as_bytes()));
        assert_eq!(
            read(notebook.as_bytes()),
            "Loading shards: 100%\nKilled\ntensor([1.])\n\u{1b}[0;31m----------\u{1b}[0m\n\u{1b}[0;31mOutOfMemoryError\u{1b}[0m: CUDA out of memory.\n"
        );
    }

    #[test]
    fn other_json_and_broken_notebooks() {
        assert!(!sniff(br#"{"log": "x"}"#));
        assert!(!sniff(b"cells: 3"));
        let cut = br#"{"cells": [{"outputs": [{"output_type": "stream", "text": "Kil"#;
        assert!(sniff(cut));
        assert_eq!(read(cut), String::from_utf8_lossy(cut));
    }
}
