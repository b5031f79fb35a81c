//! A Python traceback, read into its parts.

use serde::{Deserialize, Serialize};

/// A Python traceback as the interpreter prints it: one exception, or a
/// chain of exceptions linked by "The above exception was the direct cause
/// of the following exception" or "During handling of the above
/// exception, another exception occurred".
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Traceback {
    /// The exceptions in the order printed: the first is the original
    /// failure, the last the one that ended the program.
    pub exceptions: Vec<PyException>,
}

/// One exception of a traceback.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PyException {
    /// The exception's type as printed (`torch.OutOfMemoryError`).
    pub exception: String,
    /// The first line of its message, when it has one.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub message: String,
    /// The 1-based line of the input where the exception line is.
    pub line: u64,
    /// The frames, outermost first (the last is where it was raised).
    pub frames: Vec<PyFrame>,
    /// Frames left out of `frames` (a very deep or recursive stack keeps
    /// its outermost and innermost frames).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub frames_omitted: u64,
    /// How this exception follows the one before it in the chain.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub follows: Option<ChainLink>,
}

/// How an exception of a chain relates to the one printed before it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ChainLink {
    /// `raise ... from previous`: the previous exception is its direct
    /// cause.
    Cause,
    /// Raised while handling the previous exception.
    Context,
}

/// One frame of a traceback.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PyFrame {
    pub file: String,
    pub line: u64,
    pub function: String,
    /// The source line the interpreter printed under the frame.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub code: Option<String>,
}

impl PyFrame {
    /// `function (file:line)` with the file's base name, as py-spy writes
    /// a frame.
    pub fn label(&self) -> String {
        let base = self.file.rsplit(['/', '\\']).next().unwrap_or(&self.file);
        format!("{} ({base}:{})", self.function, self.line)
    }

    /// Whether the frame is in an installed library or the interpreter
    /// rather than the program's own code.
    pub fn is_library(&self) -> bool {
        let f = self.file.as_str();
        f.contains("/site-packages/")
            || f.contains("/dist-packages/")
            || f.contains("/lib/python3")
            || f.ends_with(".pyx")
            || f.starts_with('<') && f != "<stdin>" && f != "<string>"
    }
}

impl PyException {
    /// The innermost frame in the program's own code, else the innermost.
    pub fn own_frame(&self) -> Option<&PyFrame> {
        self.frames
            .iter()
            .rev()
            .find(|f| !f.is_library())
            .or_else(|| self.frames.last())
    }
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}
