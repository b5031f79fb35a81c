use crate::discover::{Input, InputSource};
use crate::json_lines::{JsonLinesDecoder, JsonLog};
use crate::limits::{Capped, Counted, ExpansionLimit, CORE_EXPANSION, TEXT_EXPANSION};
use crate::newest_first::{is_newest_first, reversed};
use crate::notebook::NotebookDecoder;
use crate::utf16::{Utf16, Utf16Decoder};
use crate::xz_streams::XzStreams;
use crate::zstd_frames::ZstdFrames;
use coroner_model::InputKind;
use memchr::memmem::Finder;
use std::fs::File;
use std::io::{self, Cursor, Read};
use std::path::Path;
use std::sync::atomic::AtomicU64;
use std::sync::{Arc, LazyLock, Mutex};

/// Bytes looked at to tell what an input is.
const SNIFF_LEN: usize = 8 * 1024;

/// A compression format, recognised by its magic bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Compression {
    /// `1f 8b`
    Gzip,
    /// `28 b5 2f fd`, a skippable frame first (`5? 2a 4d 18`, as pzstd
    /// writes), or a frame of a format before 1.0 (`22 b5 2f fd` to
    /// `27 b5 2f fd`, v0.1's `fd 2f b5 1e`)
    Zstd,
    /// `fd 37 7a 58 5a 00`
    Xz,
}

impl Compression {
    /// Lowercase name for reports.
    pub fn as_str(self) -> &'static str {
        match self {
            Compression::Gzip => "gzip",
            Compression::Zstd => "zstd",
            Compression::Xz => "xz",
        }
    }

    pub(crate) fn sniff(head: &[u8]) -> Option<Compression> {
        if head.starts_with(&[0x1f, 0x8b]) {
            Some(Compression::Gzip)
        } else if crate::zstd_frames::is_zstd(head) {
            Some(Compression::Zstd)
        } else if crate::xz_streams::is_xz(head) {
            Some(Compression::Xz)
        } else {
            None
        }
    }
}

/// An input opened for reading: decompressed, with its kind detected.
pub struct Opened {
    /// The (decompressed) content, from the first byte.
    pub reader: Box<dyn Read + Send>,
    /// How it was compressed.
    pub compression: Option<Compression>,
    /// What the content is.
    pub kind: InputKind,
    /// The UTF-16 text it was decoded from.
    pub utf16: Option<Utf16>,
    /// Whether it is a Jupyter notebook, read as its cells' outputs.
    pub notebook: bool,
    /// The JSON objects, one per line, whose text it was read as.
    pub json_lines: Option<JsonLog>,
    /// Whether some of its lines hold line ends written as `\n` (a string's
    /// `repr`, a JSON value), and are read as the lines they hold.
    pub escaped_breaks: bool,
    /// Whether some of its lines lost their line ends (a paste whose line
    /// ends became spaces), and are read as the lines they were.
    pub lost_breaks: bool,
    /// Whether its lines were listed newest first, and are read reversed.
    pub newest_first: bool,
}

impl Opened {
    /// Whether the content is the input's bytes as they are (past their
    /// compression): only then can a file be read in parts.
    pub fn is_verbatim(&self) -> bool {
        self.compression.is_none()
            && self.utf16.is_none()
            && !self.notebook
            && self.json_lines.is_none()
            && !self.escaped_breaks
            && !self.lost_breaks
            && !self.newest_first
    }

    /// What was undone to read the content as text, for the input's notes.
    pub fn decoding_notes(&self) -> Vec<String> {
        let mut notes = Vec::new();
        if let Some(order) = self.utf16 {
            notes.push(format!("decoded from {}", order.as_str()));
        }
        if self.notebook {
            notes.push("read as a Jupyter notebook: the text its cells' outputs hold".to_owned());
        }
        if let Some(log) = self.json_lines {
            notes.push(format!(
                "read as JSON log lines: the text of each object's `{}`",
                log.key()
            ));
        }
        if self.escaped_breaks {
            notes.push(
                "some lines hold line ends written as `\\n` (a string's repr, a JSON value): \
                 read as the lines they hold"
                    .to_owned(),
            );
        }
        if self.lost_breaks {
            notes.push(
                "some lines lost their line ends (a paste whose line ends became spaces): \
                 cut again before what starts a log's line"
                    .to_owned(),
            );
        }
        if self.newest_first {
            notes.push(
                "its lines are listed newest first (a log view's copy): read in reverse order; \
                 line numbers count from its last line"
                    .to_owned(),
            );
        }
        notes
    }
}

impl std::fmt::Debug for Opened {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Opened")
            .field("compression", &self.compression)
            .field("kind", &self.kind)
            .field("utf16", &self.utf16)
            .field("notebook", &self.notebook)
            .field("json_lines", &self.json_lines)
            .field("escaped_breaks", &self.escaped_breaks)
            .field("lost_breaks", &self.lost_breaks)
            .field("newest_first", &self.newest_first)
            .finish_non_exhaustive()
    }
}

/// Opens an input, undoes its compression and detects its kind from the
/// first bytes of content.
pub fn open(input: &Input) -> io::Result<Opened> {
    let raw: Box<dyn Read + Send> = match &input.source {
        InputSource::Stdin => Box::new(io::stdin()),
        InputSource::File(path) => Box::new(open_regular(path)?),
        #[cfg(unix)]
        InputSource::Pipe(path) => Box::new(crate::pipe::open_pipe(path)?),
        #[cfg(not(unix))]
        InputSource::Pipe(path) => Box::new(File::open(path)?),
        InputSource::ZipMember(member) => crate::zip_members::open_member(member)?,
    };
    let live = matches!(input.source, InputSource::Stdin | InputSource::Pipe(_));
    open_stream(raw, if live { Stop::AtLine } else { Stop::Full })
}

/// Opens `path`, which was a regular file when it was found, without
/// waiting: opened non-blocking, so that a FIFO put in its place since
/// cannot hold the run waiting for a writer, and refused unless the opened
/// handle is a regular file.
pub(crate) fn open_regular(path: &Path) -> io::Result<File> {
    let mut options = std::fs::OpenOptions::new();
    options.read(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.custom_flags(libc::O_NONBLOCK);
    }
    let file = options.open(path)?;
    if !file.metadata()?.is_file() {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!(
                "{} is not a regular file (it changed after it was found); not read",
                coroner_model::shown_path(path)
            ),
        ));
    }
    Ok(file)
}

/// [`open`] for bytes from any reader. Decompressed output is capped
/// relative to the compressed bytes the decoder has consumed so far (not
/// counting zstd skippable frames or xz stream padding), at
/// [`TEXT_EXPANSION`] ([`CORE_EXPANSION`] for a core dump): past it,
/// reading fails with an error that says how far it got and which limit
/// stopped it.
pub fn open_reader(raw: Box<dyn Read + Send>) -> io::Result<Opened> {
    open_stream(raw, Stop::Full)
}

/// [`open_reader`], the head of a decoded input read up to `decoded`: a
/// pipe's whole first line is enough to go on with (a job that is still
/// running may print nothing more for a while), a file's is read whole.
fn open_stream(raw: Box<dyn Read + Send>, decoded: Stop) -> io::Result<Opened> {
    let decoded_head = |reader| peek(reader, SNIFF_LEN, decoded);
    let (head, raw) = peek(raw, SNIFF_LEN, Stop::AtLine)?;
    let compression = Compression::sniff(&head);
    let packed = Arc::new(AtomicU64::new(0));
    let counted = Counted {
        inner: raw,
        count: Arc::clone(&packed),
    };
    let decoded: Box<dyn Read + Send> = match compression {
        None => counted.inner,
        Some(Compression::Gzip) => Box::new(flate2::read::MultiGzDecoder::new(counted)),
        Some(Compression::Zstd) => Box::new(ZstdFrames::new(counted.inner, Arc::clone(&packed))?),
        Some(Compression::Xz) => Box::new(XzStreams::new(counted.inner, Arc::clone(&packed))),
    };
    let limit = Arc::new(Mutex::new(TEXT_EXPANSION));
    let decoded: Box<dyn Read + Send> = match compression {
        None => decoded,
        Some(_) => Box::new(Capped::new(decoded, packed, Arc::clone(&limit))),
    };
    let (mut head, mut reader) = match compression {
        // The bytes are the content: what was read of them is its head.
        None => (head, decoded),
        Some(_) => peek(decoded, SNIFF_LEN, Stop::AtLine)?,
    };
    let utf16 = Utf16::sniff(&head);
    if let Some(order) = utf16 {
        (head, reader) = decoded_head(Box::new(Utf16Decoder::reader(reader, order)))?;
    }
    let mut kind = detect_kind(&head);
    // Each reading below is told by the head the readings before it left.
    let notebook = kind.is_text() && crate::notebook::sniff(&head);
    if notebook {
        (head, reader) = decoded_head(Box::new(NotebookDecoder::reader(reader)))?;
        kind = detect_kind(&head);
    }
    let json_lines = match kind {
        kind if kind.is_text() => JsonLog::sniff(&head),
        _ => None,
    };
    if let Some(log) = json_lines {
        (head, reader) = decoded_head(Box::new(JsonLinesDecoder::reader(reader, log)))?;
        kind = detect_kind(&head);
    }
    let escaped_breaks = kind.is_text() && crate::escaped::sniff(&head);
    if escaped_breaks {
        (head, reader) = decoded_head(Box::new(crate::escaped::reader(reader)))?;
        kind = detect_kind(&head);
    }
    let lost_breaks = kind.is_text() && crate::flattened::sniff(&head);
    if lost_breaks {
        (head, reader) = decoded_head(Box::new(crate::flattened::reader(reader)))?;
        kind = detect_kind(&head);
    }
    let mut newest_first = false;
    // A head shorter than asked for is the whole input (or a pipe's first
    // lines, which a traceback's header seldom ends).
    if kind.is_text() && is_newest_first(&head, head.len() < SNIFF_LEN) {
        (reader, newest_first) = reversed(reader)?;
        (head, reader) = decoded_head(reader)?;
        kind = detect_kind(&head);
    }
    if matches!(kind, InputKind::ElfCore | InputKind::CudaGpuCore) {
        set_limit(&limit, CORE_EXPANSION);
    }
    Ok(Opened {
        reader,
        compression,
        kind,
        utf16,
        notebook,
        json_lines,
        escaped_breaks,
        lost_breaks,
        newest_first,
    })
}

fn set_limit(shared: &Mutex<ExpansionLimit>, to: ExpansionLimit) {
    *shared.lock().unwrap_or_else(|e| e.into_inner()) = to;
}

/// When [`peek`] stops short of the bytes it asks for.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Stop {
    /// At the first read that brings a whole line: a pipe hands over what
    /// it has, and a whole line is enough to go on with, rather than
    /// waiting for more that may only come later (or never, while a job is
    /// still running).
    AtLine,
    /// Only at the end of the input: a decoder hands out a piece at a
    /// time (a line of a JSON log), which may be too little to tell from.
    Full,
}

/// Reads up to `n` bytes (less where `stop` says) and returns them
/// together with a reader that yields the whole stream again from its
/// first byte.
fn peek(
    mut r: Box<dyn Read + Send>,
    n: usize,
    stop: Stop,
) -> io::Result<(Vec<u8>, Box<dyn Read + Send>)> {
    let mut head = vec![0; n];
    let mut filled = 0;
    while let Some(free) = head.get_mut(filled..).filter(|f| !f.is_empty()) {
        match r.read(free) {
            Ok(0) => break,
            Ok(k) => {
                let new = free.get(..k).unwrap_or_default();
                let line = memchr::memchr(b'\n', new).is_some();
                filled += k.min(new.len());
                if line && stop == Stop::AtLine {
                    break;
                }
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) if filled == 0 => return Err(e),
            Err(e) => {
                // Keep what was read; the error comes after it.
                head.truncate(filled);
                let again = Cursor::new(head.clone()).chain(Failed(Some(e)));
                return Ok((head, Box::new(again)));
            }
        }
    }
    head.truncate(filled);
    let again = Cursor::new(head.clone()).chain(r);
    Ok((head, Box::new(again)))
}

/// A reader that fails once with the error it holds, then ends.
struct Failed(Option<io::Error>);

impl Read for Failed {
    fn read(&mut self, _: &mut [u8]) -> io::Result<usize> {
        match self.0.take() {
            Some(e) => Err(e),
            None => Ok(0),
        }
    }
}

/// Tells what content is from its first bytes.
pub fn detect_kind(head: &[u8]) -> InputKind {
    if head.starts_with(b"\x7fELF") {
        let half = |at: usize| {
            head.get(at..at + 2)
                .and_then(|b| b.try_into().ok())
                .map(u16::from_le_bytes)
        };
        let (e_type, e_machine) = (half(16), half(18));
        return match (e_type, e_machine) {
            (Some(4), Some(0xbe)) => InputKind::CudaGpuCore,
            (Some(4), _) => InputKind::ElfCore,
            _ => InputKind::Binary,
        };
    }
    // PyTorch's dumps, by their keys (a pickle, or the flight recorder's
    // JSON form).
    if coroner_dumps::flight::looks_like(head) {
        return InputKind::FlightRecorder;
    }
    if coroner_dumps::snapshot::looks_like(head) {
        return InputKind::MemorySnapshot;
    }
    if looks_binary(head) {
        return InputKind::Binary;
    }
    // The searchers are built once: a directory's every file is detected.
    static NEEDLES: LazyLock<[Finder<'static>; 6]> = LazyLock::new(|| {
        [
            Finder::new(b"NVIDIA-SMI "),
            Finder::new(b"==============NVSMI LOG=============="),
            Finder::new(b" NCCL "),
            Finder::new(b" kernel: "),
            Finder::new(b" NCCL INFO "),
            Finder::new(b" NCCL WARN "),
        ]
    });
    let [smi, smi_log, nccl_word, kernel_tag, nccl_info, nccl_warn] = &*NEEDLES;
    let has = |needle: &Finder| needle.find(head).is_some();
    let text = crate::text::lossy(head);
    if has(smi) || has(smi_log) || is_query_gpu_csv(&text) {
        return InputKind::NvidiaSmi;
    }
    // Most heads name no NCCL at all: then no line needs looking at for it.
    let any_nccl = has(nccl_word);
    let any_kernel_tag = has(kernel_tag);
    let mut lines = 0usize;
    let mut nccl = 0usize;
    let mut kernel = 0usize;
    for line in split_lines(&text).filter(|l| !l.trim().is_empty()) {
        lines += 1;
        let in_line = |needle: &Finder| needle.find(line.as_bytes()).is_some();
        if any_nccl && (in_line(nccl_info) || in_line(nccl_warn)) {
            nccl += 1;
        }
        if is_kernel_line(line, any_kernel_tag) {
            kernel += 1;
        }
    }
    if lines > 0 && nccl * 2 > lines {
        InputKind::NcclDebug
    } else if lines > 0 && kernel * 2 > lines {
        InputKind::KernelLog
    } else {
        InputKind::Log
    }
}

/// The lines of `text`, split at each newline (a CR before it is kept).
fn split_lines(text: &str) -> impl Iterator<Item = &str> {
    let mut start = 0;
    let ends = memchr::memchr_iter(b'\n', text.as_bytes()).chain(std::iter::once(text.len()));
    ends.map(move |end| {
        let line = text.get(start..end).unwrap_or_default();
        start = end + 1;
        line
    })
}

/// Whether the first line is the header of `nvidia-smi --query-gpu=...
/// --format=csv` (a monitoring series): comma-separated property names,
/// each with its unit in brackets or without (`timestamp, index,
/// utilization.gpu [%], memory.used [MiB]`), one of them `utilization.gpu`.
/// (`--format=csv,noheader` output has no such line and stays a log.)
fn is_query_gpu_csv(text: &str) -> bool {
    let Some(first) = text.lines().find(|l| !l.trim().is_empty()) else {
        return false;
    };
    let mut names = 0;
    let mut utilization = false;
    for field in first.trim().split(',') {
        let field = field.trim();
        let name = match field.strip_suffix(']').and_then(|f| f.split_once(" [")) {
            Some((name, unit)) if !unit.is_empty() && !unit.contains(['[', ']']) => name,
            Some(_) => return false,
            None => field,
        };
        let property = name.starts_with(|c: char| c.is_ascii_lowercase())
            && name
                .chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '.' || c == '_');
        if !property {
            return false;
        }
        names += 1;
        utilization |= name == "utilization.gpu";
    }
    names >= 2 && utilization
}

/// A dmesg line (`[   12.345678] text`, or with `dmesg -T` `[Sun Nov 29
/// 21:00:10 2026] text`) or a syslog/journal kernel line.
fn is_kernel_line(line: &str, any_kernel_tag: bool) -> bool {
    let t = line.trim_start();
    if let Some(rest) = t.strip_prefix('[') {
        if let Some(close) = rest.find(']') {
            let stamp = rest[..close].trim();
            let seconds =
                !stamp.is_empty() && stamp.chars().all(|c| c.is_ascii_digit() || c == '.');
            return seconds || is_ctime(stamp);
        }
    }
    any_kernel_tag && line.contains(" kernel: ")
}

/// `Sun Nov 29 21:00:10 2026`: weekday, month, day, time, year.
fn is_ctime(stamp: &str) -> bool {
    // Its five parts and the spaces between them: 23 bytes at least.
    if stamp.len() < 23 {
        return false;
    }
    let mut parts = stamp.split_whitespace();
    let (Some(weekday), Some(month), Some(day), Some(time), Some(year), None) = (
        parts.next(),
        parts.next(),
        parts.next(),
        parts.next(),
        parts.next(),
        parts.next(),
    ) else {
        return false;
    };
    let word = |w: &str| w.len() == 3 && w.chars().all(|c| c.is_ascii_alphabetic());
    let digits = |w: &str, n: std::ops::RangeInclusive<usize>| {
        n.contains(&w.len()) && w.chars().all(|c| c.is_ascii_digit())
    };
    word(weekday)
        && word(month)
        && digits(day, 1..=2)
        && time.len() == 8
        && time.split(':').all(|p| digits(p, 2..=2))
        && digits(year, 4..=4)
}

/// More than 1% NUL bytes, or more than 10% other control bytes.
fn looks_binary(head: &[u8]) -> bool {
    if head.is_empty() {
        return false;
    }
    // Bytes below 0x20, less those text has (tab, newline, CR, form feed,
    // backspace, escape for colours) and NUL (counted apart): each a
    // count that runs on vectors.
    let nul = bytecount::count(head, 0);
    let below_space = count_below_space(head);
    let text_controls: usize = [b'\t', b'\n', b'\r', 0x0c, 0x08, 0x1b]
        .iter()
        .map(|&c| bytecount::count(head, c))
        .sum();
    let control = below_space.saturating_sub(text_controls + nul);
    nul * 100 > head.len() || control * 10 > head.len()
}

/// How many bytes of `bytes` are below 0x20: counted in runs short enough
/// for a byte-wide tally, which runs on vectors.
fn count_below_space(bytes: &[u8]) -> usize {
    bytes
        .chunks(255)
        .map(|run| {
            let tally = run.iter().fold(0u8, |n, &b| n + u8::from(b < 0x20));
            usize::from(tally)
        })
        .sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn opened(bytes: &[u8]) -> Opened {
        open_reader(Box::new(Cursor::new(bytes.to_vec()))).unwrap_or_else(|e| panic!("{e}"))
    }

    #[test]
    fn a_short_first_line_does_not_cut_the_head() {
        let nccl =
            b"\nvm:1:1 [0] NCCL INFO Bootstrap\nvm:1:1 [0] NCCL INFO x\nvm:1:1 [0] NCCL WARN y\n";
        assert_eq!(opened(nccl).kind, InputKind::NcclDebug);
        // A decoder's first piece is one line: more is read to tell from.
        let docker = concat!(
            r#"{"log":"ok\n","stream":"stdout","time":"2024-03-01T10:11:12Z"}"#,
            "\n",
            r#"{"log":"vm:1:1 [0] NCCL INFO Bootstrap\n","stream":"stdout","time":"2024-03-01T10:11:12Z"}"#,
            "\n",
            r#"{"log":"vm:1:1 [0] NCCL WARN x\n","stream":"stdout","time":"2024-03-01T10:11:12Z"}"#,
            "\n",
        );
        assert_eq!(opened(docker.as_bytes()).kind, InputKind::NcclDebug);
    }

    #[test]
    fn kinds_from_content() {
        assert_eq!(detect_kind(b"step 1 loss 0.3\n"), InputKind::Log);
        assert_eq!(
            detect_kind(b"vm:1:1 [0] NCCL INFO Bootstrap\nvm:1:1 [0] NCCL INFO x\n"),
            InputKind::NcclDebug
        );
        assert_eq!(
            detect_kind(b"[    1.000000] NVRM: loading\n[    2.5] x\n"),
            InputKind::KernelLog
        );
        assert_eq!(
            detect_kind(b"[Sun Nov 29 21:00:10 2026] python invoked oom-killer\n[Sun Nov 29 21:00:10 2026] x\n"),
            InputKind::KernelLog
        );
        assert_eq!(
            detect_kind(b"[rank0] step 1\n[rank1] step 1\n"),
            InputKind::Log
        );
        let mut core = b"\x7fELF\x02\x01\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00".to_vec();
        core.extend_from_slice(&[4, 0, 0xbe, 0]);
        assert_eq!(detect_kind(&core), InputKind::CudaGpuCore);
        core[18] = 0x3e;
        assert_eq!(detect_kind(&core), InputKind::ElfCore);
        assert_eq!(detect_kind(&[0u8; 64]), InputKind::Binary);
    }

    #[test]
    fn control_bytes_make_binary_but_text_controls_do_not() {
        // One byte in five a control byte text never has: binary.
        let mut data = b"abcd\x01".repeat(100);
        assert_eq!(detect_kind(&data), InputKind::Binary);
        // One in twenty: still text.
        data = b"abcdefghijklmnopqrs\x01".repeat(100);
        assert_eq!(detect_kind(&data), InputKind::Log);
        // Tabs, CRs, form feeds, backspaces and colour escapes are text.
        let log = b"\x1b[31mstep\t1\x08\x0c\r\n".repeat(100);
        assert_eq!(detect_kind(&log), InputKind::Log);
        // NUL bytes count apart: one in fifty is binary.
        let mut nuls = b"x".repeat(4900);
        nuls.extend_from_slice(&[0; 100]);
        assert_eq!(detect_kind(&nuls), InputKind::Binary);
    }

    #[test]
    fn control_bytes_are_counted_past_a_tallys_run() {
        let bytes: Vec<u8> = (0..2000u32).map(|i| (i % 64) as u8).collect();
        let naive = bytes.iter().filter(|&&b| b < 0x20).count();
        assert_eq!(count_below_space(&bytes), naive);
        assert_eq!(count_below_space(&[0x1f; 1000]), 1000);
        assert_eq!(count_below_space(b""), 0);
    }

    #[test]
    fn ctime_stamps_with_a_padded_day() {
        assert!(is_ctime("Sun Nov  9 21:00:10 2026"));
        assert!(is_ctime("Sun Nov 9 21:00:10 2026"));
        assert!(!is_ctime("Sun Nov 9 21:00:10 26"));
        assert!(!is_ctime("rank0"));
    }

    #[test]
    fn nvidia_smi_query_gpu_csv() {
        let csv = b"timestamp, index, utilization.gpu [%], utilization.memory [%], memory.used [MiB], memory.total [MiB], power.draw [W]\n2026/11/29 20:39:48.123, 0, 1 %, 0 %, 912 MiB, 143771 MiB, 123.79 W\n";
        assert_eq!(detect_kind(csv), InputKind::NvidiaSmi);
        assert_eq!(
            detect_kind(b"index, utilization.gpu, memory.used\n0, 1, 912\n"),
            InputKind::NvidiaSmi
        );
        // No header (`noheader`), no utilisation column, or prose.
        assert_eq!(detect_kind(b"0, 1 %, 912 MiB\n"), InputKind::Log);
        assert_eq!(
            detect_kind(b"index, memory.used [MiB]\n0, 912 MiB\n"),
            InputKind::Log
        );
        assert_eq!(
            detect_kind(b"step 1: utilization.gpu is low, memory.used high\n"),
            InputKind::Log
        );
        assert_eq!(
            detect_kind(b"step 1 loss 0.3\nindex, utilization.gpu\n"),
            InputKind::Log
        );
    }

    #[test]
    fn one_nul_byte_in_a_log_is_still_text() {
        let mut log = b"ERROR: Unexpected segmentation fault encountered in worker.\n".repeat(40);
        log.push(0);
        assert_eq!(detect_kind(&log), InputKind::Log);
    }

    /// A zstd frame of `blocks` RLE blocks, each 128 KiB of `a` from 4
    /// bytes.
    fn zstd_rle_bomb(blocks: usize) -> Vec<u8> {
        let mut frame = vec![0x28, 0xb5, 0x2f, 0xfd, 0x00, 0x38];
        for i in 0..blocks {
            let header = (128u32 << 10) << 3 | 1 << 1 | u32::from(i + 1 == blocks);
            frame.extend_from_slice(&header.to_le_bytes()[..3]);
            frame.push(b'a');
        }
        frame
    }

    #[test]
    fn a_decompression_bomb_stops_past_the_floor() {
        // 640 MiB from 20 KiB, then from 40 KiB in zstd's format v0.7.
        let legacy = crate::test_support::legacy_frame(7, b"", 5 * 1024);
        for bomb in [zstd_rle_bomb(5 * 1024), legacy] {
            let opened = open_reader(Box::new(Cursor::new(bomb))).unwrap_or_else(|e| panic!("{e}"));
            assert_eq!(opened.compression, Some(Compression::Zstd));
            let mut counted = opened.reader.take(u64::MAX);
            let err = io::copy(&mut counted, &mut io::sink()).err();
            let message = err.map(|e| e.to_string()).unwrap_or_default();
            assert!(message.contains("decompression bomb"), "{message}");
            assert!(message.contains("1000:1"), "{message}");
        }
    }

    #[test]
    fn compressed_text_within_the_limit_reads_whole() {
        let text = b"step 1 loss 0.5\n".repeat(10_000);
        let packed = zstd::encode_all(&text[..], 19).unwrap_or_default();
        let mut opened =
            open_reader(Box::new(Cursor::new(packed))).unwrap_or_else(|e| panic!("{e}"));
        let mut out = Vec::new();
        opened
            .reader
            .read_to_end(&mut out)
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(out, text);
        assert_eq!(opened.kind, InputKind::Log);
    }

    #[cfg(unix)]
    #[test]
    fn a_file_turned_fifo_is_refused_without_waiting() {
        let dir = std::env::temp_dir().join(format!("coroner-fifo-{}", std::process::id()));
        let _ = std::fs::create_dir_all(&dir);
        let fifo = dir.join("was-a-file.log");
        let made = std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .is_ok_and(|s| s.success());
        if made {
            // Found as a regular file by the walk, then replaced.
            let input = crate::discover::file_input(&fifo, false);
            let err = open(&input)
                .err()
                .map(|e| e.to_string())
                .unwrap_or_default();
            assert!(err.contains("not a regular file"), "{err}");
            let mapped = crate::Mapped::open(&fifo).err().map(|e| e.to_string());
            assert!(mapped.is_some_and(|e| e.contains("not a regular file")));
        }
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn compression_by_magic() {
        assert_eq!(
            Compression::sniff(&[0x1f, 0x8b, 8]),
            Some(Compression::Gzip)
        );
        assert_eq!(
            Compression::sniff(&[0x28, 0xb5, 0x2f, 0xfd]),
            Some(Compression::Zstd)
        );
        for legacy in [[0xfd, 0x2f, 0xb5, 0x1e], [0x27, 0xb5, 0x2f, 0xfd]] {
            assert_eq!(Compression::sniff(&legacy), Some(Compression::Zstd));
        }
        assert_eq!(Compression::sniff(b"\xfd7zXZ\x00"), Some(Compression::Xz));
        assert_eq!(Compression::sniff(b"plain"), None);
    }
}
