//! Text whose line ends were lost.
//!
//! A log pasted into a chat, a web form or a one-line field comes back as
//! one long line, its line ends turned into spaces. Such a line is cut
//! again before what starts a line of a training log: a Python
//! traceback's header, its frames, their source lines and its exception,
//! a chained exception's announcement, glog's and PyTorch's C++ headers,
//! a date and time, torchrun's, Ray's and NCCL's line headers, and the last words
//! of a dying process (`terminate called after throwing`, `Segmentation
//! fault`, `Killed`). The spaces before such a start, but the one that
//! stood for the line end, are kept as its indentation.
//!
//! A line is cut so when it is at least [`MIN_LEN`] bytes long, holds at
//! least [`MIN_STARTS`] such starts past its own first, with a strong one
//! among them (seldom found but at a line's start: a frame, a glog or NCCL
//! header) or of at least [`MIN_KINDS`] kinds (a traceback's parts, a
//! header, a process's last words: a message naming three dates or three
//! exceptions is one line), and few carriage returns (a progress bar's
//! redraws are one long line of their own).

use crate::decoded::{line_reader, DecodedReader, LineDecoder};
use nom::branch::alt;
use nom::bytes::complete::{tag, take_while1, take_while_m_n};
use nom::character::complete::{char, digit1, one_of};
use nom::combinator::{opt, recognize, verify};
use nom::{IResult, Parser};
use std::io::Read;

/// Shortest line that is read as several.
const MIN_LEN: usize = 512;
/// Line starts a line must hold past its own first to be read as
/// several: as many strong ones, or as many with a strong one among them
/// or of this many kinds.
const MIN_STARTS: usize = 3;
const MIN_KINDS: usize = 2;
/// Carriage returns a line may hold and still be read as several.
const MAX_RETURNS: usize = 2;
/// Longest file name a frame's may be.
const MAX_PATH: usize = 4096;

/// Whether `head` has a line (the last may be cut) whose line ends were
/// lost.
pub fn sniff(head: &[u8]) -> bool {
    head.split(|&b| b == b'\n')
        .any(|line| !breaks(line).is_empty())
}

/// Where `line` is cut again (each the place the kept part starts), if it
/// is a line whose line ends were lost; none otherwise.
fn breaks(line: &[u8]) -> Vec<usize> {
    if line.len() < MIN_LEN || bytecount::count(line, b'\r') > MAX_RETURNS {
        return Vec::new();
    }
    let mut cuts = Vec::new();
    let mut starts = 0;
    let mut kinds: Vec<Kind> = Vec::new();
    // Where the last start read ends: what it holds starts nothing
    // (`[rank1]: RuntimeError:` is one line), nor does the line's own.
    let mut covered = line_start(line).map_or(0, |(used, _, _)| used);
    let mut strong = 0;
    let mut at = covered.max(1);
    while at < line.len() {
        let before = line.get(at - 1).copied();
        let rest = line.get(at..).unwrap_or_default();
        let start = match before {
            Some(b' ') if at > covered => line_start(rest),
            Some(b' ') => None,
            // `...1.39s/it]Killed`: a progress bar's line, the kill glued on.
            Some(_) => killed_at_end(rest).then_some((rest.len(), Kind::LastWords, false)),
            None => None,
        };
        if let Some((used, kind, is_strong)) = start {
            let spaces = line
                .get(..at)
                .unwrap_or_default()
                .iter()
                .rev()
                .take_while(|&&b| b == b' ')
                .count();
            // The first space stood for the line end; the rest indent.
            let cut = if spaces == 0 { at } else { at - spaces + 1 };
            if cuts.last().is_none_or(|&last| last < cut) {
                cuts.push(cut);
            }
            starts += 1;
            strong += usize::from(is_strong);
            if !kinds.contains(&kind) {
                kinds.push(kind);
            }
            if let Ok((after, _)) = frame(rest) {
                // A frame's source line follows it, indented.
                let indent = after.iter().take_while(|&&b| b == b' ').count();
                if indent >= 2 && after.get(indent).is_some_and(|b| !b.is_ascii_whitespace()) {
                    cuts.push(at + used + 1);
                }
            }
            at += used.max(1);
            covered = at;
            continue;
        }
        at += 1;
    }
    let enough =
        strong >= MIN_STARTS || (starts >= MIN_STARTS && (strong >= 1 || kinds.len() >= MIN_KINDS));
    if !enough {
        cuts.clear();
    }
    cuts
}

/// What starts a line of a training log: how long it is, its kind (a
/// Python traceback's part, a header of a logging setup or a launcher, or
/// a process's last words) and whether it is strong, seldom found but at
/// a line's start (a frame, a glog or NCCL header), or weak, also found
/// inside a message (an exception's name, a date, `Killed`).
fn line_start(s: &[u8]) -> Option<(usize, Kind, bool)> {
    let groups: [(StartParser, Kind, bool); 6] = [
        (traceback_strong, Kind::Traceback, true),
        (header_strong, Kind::Header, true),
        (last_words_strong, Kind::LastWords, true),
        (traceback_weak, Kind::Traceback, false),
        (header_weak, Kind::Header, false),
        (last_words_weak, Kind::LastWords, false),
    ];
    groups.into_iter().find_map(|(parser, kind, strong)| {
        let (rest, _) = parser(s).ok()?;
        Some((s.len() - rest.len(), kind, strong))
    })
}

/// Whether `text`, its indentation aside, starts as a line of a training
/// log does.
pub(crate) fn starts_a_line(text: &[u8]) -> bool {
    let text = text.trim_ascii_start();
    line_start(text).is_some() || killed_at_end(text)
}

/// A parser of one group of line starts.
type StartParser = fn(&[u8]) -> IResult<&[u8], &[u8]>;

/// The kinds of line starts.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    Traceback,
    Header,
    LastWords,
}

fn traceback_strong(s: &[u8]) -> IResult<&[u8], &[u8]> {
    alt((
        tag("Traceback (most recent call last):"),
        tag("C++ Traceback (most recent call last):"),
        tag("The above exception was the direct cause"),
        tag("During handling of the above exception"),
        tag("Error Message Summary:"),
        frame,
        ipython_header,
        thread_header,
        gdb_frame,
    ))
    .parse(s)
}

fn traceback_weak(s: &[u8]) -> IResult<&[u8], &[u8]> {
    alt((exception, recognize(source_marks))).parse(s)
}

fn header_strong(s: &[u8]) -> IResult<&[u8], &[u8]> {
    alt((
        glog_header,
        cuda_source_place,
        tagged_level,
        recognize((
            char('['),
            alt((tag("rank"), tag("default"))),
            digit1,
            tag("]:"),
            take_while_m_n(0, 8, |b| b == b' '),
        )),
        nccl_header,
        ray_tag,
    ))
    .parse(s)
}

fn header_weak(s: &[u8]) -> IResult<&[u8], &[u8]> {
    alt((
        date_time,
        recognize((
            alt((tag("slurmstepd"), tag("srun"), tag("sbatch"))),
            opt((
                char('-'),
                take_while1(|b: u8| b.is_ascii_alphanumeric() || b == b'-'),
            )),
            tag(": "),
        )),
        // Python's default logging format, `LEVEL:logger:`.
        recognize((
            alt((
                tag("WARNING"),
                tag("ERROR"),
                tag("INFO"),
                tag("DEBUG"),
                tag("CRITICAL"),
            )),
            char(':'),
            take_while1(|b: u8| b.is_ascii_alphanumeric() || b == b'_' || b == b'.'),
            char(':'),
        )),
    ))
    .parse(s)
}

fn last_words_strong(s: &[u8]) -> IResult<&[u8], &[u8]> {
    alt((
        tag("terminate called after throwing"),
        tag("Root Cause (first observed failure):"),
        tag("Fatal Python error:"),
    ))
    .parse(s)
}

fn last_words_weak(s: &[u8]) -> IResult<&[u8], &[u8]> {
    alt((
        tag("what():"),
        tag("Segmentation fault"),
        tag("Aborted (core dumped)"),
        // glibc's heap checks.
        tag("double free or corruption"),
        tag("free(): "),
        tag("malloc(): "),
        tag("munmap_chunk(): "),
        tag("*** "),
        killed,
    ))
    .parse(s)
}

/// Ray's tag of a worker's line, `(RayTrainWorker pid=1234, ip=10.0.0.1) `.
fn ray_tag(s: &[u8]) -> IResult<&[u8], &[u8]> {
    recognize((
        char('('),
        take_while1(|b: u8| b.is_ascii_alphanumeric() || b == b'_'),
        take_while_m_n(0, 64, |b: u8| b != b')' && b != b'('),
        tag(") "),
    ))
    .parse(s)
    .and_then(|(rest, tag_text)| {
        let named = tag_text.windows(5).any(|w| w == b" pid=") || tag_text.starts_with(b"(raylet)");
        if named {
            Ok((rest, tag_text))
        } else {
            Err(nom::Err::Error(nom::error::Error::new(
                s,
                nom::error::ErrorKind::Verify,
            )))
        }
    })
}

/// `File "train.py", line 65, in load_batch`: a traceback's frame, up to
/// the function's name.
fn frame(s: &[u8]) -> IResult<&[u8], &[u8]> {
    recognize((
        tag("File \""),
        // Bounded, so that frames without their closing quote cost no
        // more than their own bytes.
        take_while_m_n(1, MAX_PATH, |b: u8| b != b'"'),
        tag("\", line "),
        digit1,
        opt((tag(", in "), take_while1(|b: u8| !b.is_ascii_whitespace()))),
    ))
    .parse(s)
}

/// IPython's header of a traceback: the exception's name, spaces and
/// `Traceback (most recent call last)`.
fn ipython_header(s: &[u8]) -> IResult<&[u8], &[u8]> {
    recognize((
        take_while1(|b: u8| b.is_ascii_alphanumeric() || b == b'_' || b == b'.'),
        take_while_m_n(2, 80, |b| b == b' '),
        tag("Traceback (most recent call last)"),
    ))
    .parse(s)
}

/// The header of a thread's stack in a dump: faulthandler's `Thread
/// 0x00007f… (most recent call first):` and `Current thread 0x…`,
/// py-spy's `Thread 4242 (idle): "MainThread"`.
fn thread_header(s: &[u8]) -> IResult<&[u8], &[u8]> {
    recognize((
        alt((tag("Current thread "), tag("Thread "))),
        alt((tag("0x"), digit1)),
        take_while1(|b: u8| b.is_ascii_hexdigit()),
    ))
    .parse(s)
}

/// A frame of gdb's backtrace: `#3  0x00007f… in ` (or the function
/// right after the number, for an inlined frame: `#4  initTransportsRank
/// (`).
fn gdb_frame(s: &[u8]) -> IResult<&[u8], &[u8]> {
    recognize((
        char('#'),
        digit1,
        take_while_m_n(1, 4, |b| b == b' '),
        alt((
            recognize((
                tag("0x"),
                take_while1(|b: u8| b.is_ascii_hexdigit()),
                tag(" in "),
            )),
            recognize((
                take_while1(|b: u8| {
                    b.is_ascii_alphanumeric() || matches!(b, b'_' | b':' | b'<' | b'>')
                }),
                tag(" ("),
            )),
        )),
    ))
    .parse(s)
}

/// The place a CUDA kernel's assertion names first:
/// `/pytorch/aten/src/ATen/native/cuda/IndexKernel.cu:142:`.
fn cuda_source_place(s: &[u8]) -> IResult<&[u8], &[u8]> {
    recognize((
        verify(
            take_while1(|b: u8| !b.is_ascii_whitespace() && b != b':'),
            |path: &[u8]| path.ends_with(b".cu") || path.ends_with(b".cuh"),
        ),
        char(':'),
        digit1,
        char(':'),
    ))
    .parse(s)
}

/// A bracketed tag and a level (`[TensorRT] ERROR:`, `[MainProcess]
/// WARNING `).
fn tagged_level(s: &[u8]) -> IResult<&[u8], &[u8]> {
    recognize((
        char('['),
        take_while_m_n(1, 40, |b: u8| {
            b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.' | b' ')
        }),
        tag("] "),
        alt((
            tag("VERBOSE"),
            tag("DEBUG"),
            tag("INFO"),
            tag("WARNING"),
            tag("WARN"),
            tag("ERROR"),
            tag("CRITICAL"),
            tag("FATAL"),
        )),
    ))
    .parse(s)
}

/// A run of `^` or `~` under a source line (Python 3.11's markers).
fn source_marks(s: &[u8]) -> IResult<&[u8], &[u8]> {
    verify(take_while1(|b: u8| b == b'^' || b == b'~'), |m: &[u8]| {
        m.len() >= 3
    })
    .parse(s)
}

/// An exception's name and its colon: a dotted name whose last part
/// starts with a capital and ends with `Error`, `Exception`, `Interrupt`,
/// `Exit`, `Warning` or `Failure` (`torch.OutOfMemoryError:`).
fn exception(s: &[u8]) -> IResult<&[u8], &[u8]> {
    let (rest, name) =
        take_while1(|b: u8| b.is_ascii_alphanumeric() || b == b'_' || b == b'.').parse(s)?;
    let last = name.rsplit(|&b| b == b'.').next().unwrap_or_default();
    let capital = last.first().is_some_and(u8::is_ascii_uppercase);
    let kind = [
        &b"Error"[..],
        b"Exception",
        b"Interrupt",
        b"Exit",
        b"Warning",
        b"Failure",
    ]
    .iter()
    .any(|k| last.ends_with(k));
    if !(capital && kind) {
        return Err(nom::Err::Error(nom::error::Error::new(
            s,
            nom::error::ErrorKind::Verify,
        )));
    }
    recognize(tag(":")).parse(rest)
}

/// glog's header: `E1104 10:22:31.124100 ` (level, month and day, time).
fn glog_header(s: &[u8]) -> IResult<&[u8], &[u8]> {
    recognize((one_of("IWEF"), digits(4), char(' '), clock)).parse(s)
}

/// A date and a time of day, bracketed or not (`2024-03-01 10:11:12`,
/// `[2024-03-01T10:11:12`).
fn date_time(s: &[u8]) -> IResult<&[u8], &[u8]> {
    recognize((
        opt(char('[')),
        digits(4),
        char('-'),
        digits(2),
        char('-'),
        digits(2),
        one_of(" T"),
        clock,
    ))
    .parse(s)
}

/// Exactly `n` ASCII digits.
fn digits<'a>(
    n: usize,
) -> impl Parser<&'a [u8], Output = &'a [u8], Error = nom::error::Error<&'a [u8]>> {
    take_while_m_n(n, n, |b: u8| b.is_ascii_digit())
}

/// `10:11:12`.
fn clock(s: &[u8]) -> IResult<&[u8], &[u8]> {
    recognize((digits(2), char(':'), digits(2), char(':'), digits(2))).parse(s)
}

/// NCCL's line header: `host:pid:tid [device] NCCL `.
fn nccl_header(s: &[u8]) -> IResult<&[u8], &[u8]> {
    recognize((
        take_while1(|b: u8| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.')),
        char(':'),
        digit1,
        char(':'),
        digit1,
        tag(" ["),
        digit1,
        tag("] NCCL "),
    ))
    .parse(s)
}

/// The shell's report of a killed job: `Killed` as the last word, or
/// zsh's `[1]  60190 killed     python train.py`.
fn killed(s: &[u8]) -> IResult<&[u8], &[u8]> {
    alt((
        recognize((
            char('['),
            digit1,
            char(']'),
            take_while1(|b| b == b' '),
            digit1,
            tag(" killed "),
        )),
        verify(tag("Killed"), |_: &[u8]| killed_at_end(s)),
    ))
    .parse(s)
}

/// Whether `s` is `Killed` with nothing but spaces after it.
fn killed_at_end(s: &[u8]) -> bool {
    s.strip_prefix(b"Killed")
        .is_some_and(|rest| rest.iter().all(u8::is_ascii_whitespace))
}

/// A reader of `inner` with its lost line ends put back.
pub fn reader<R: Read>(inner: R) -> DecodedReader<LineDecoder<R>> {
    line_reader(inner, decode_line)
}

/// Puts `line` in `out`, cut again where it lost its line ends.
fn decode_line(line: &[u8], out: &mut Vec<u8>) {
    let mut from = 0;
    for cut in breaks(line) {
        let piece = line.get(from..cut).unwrap_or_default();
        // The space that stood for the line end goes.
        let piece = piece.strip_suffix(b" ").unwrap_or(piece);
        out.extend_from_slice(piece);
        out.push(b'\n');
        from = cut;
    }
    out.extend_from_slice(line.get(from..).unwrap_or_default());
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(input: &[u8]) -> String {
        crate::decoded::read_all(reader(input))
    }

    const LOG: &str = "[2024-03-01 10:11:12,123] INFO loading the model from /data/checkpoints/step-1000 with 8 shards over 8 ranks\n\
        Traceback (most recent call last):\n  File \"/home/user/train.py\", line 65, in <module>\n    main()\n    ^^^^^^\n  File \"/home/user/train.py\", line 40, in main\n    loss = model(batch)\n\
        torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 79.10 GiB of which 1.20 GiB is free.\n\
        E1104 10:22:31.124100 4242 ProcessGroupNCCL.cpp:577] [Rank 7] Some NCCL operations have failed or timed out.\n\
        gpu-node07:21433:21890 [3] NCCL INFO comm 0x1 rank 3 nranks 8 - Abort COMPLETE\n\
        [rank1]: RuntimeError: NCCL communicator was aborted on rank 1.\n\
        Killed";

    #[test]
    fn a_log_whose_line_ends_became_spaces_reads_as_its_lines() {
        let flat = LOG.replace('\n', " ");
        assert!(sniff(flat.as_bytes()));
        assert_eq!(read(flat.as_bytes()), LOG);
        // A line that starts with nothing known stays with the one before.
        let flat = LOG
            .replacen('\n', " Loading checkpoint shards: 100%\n", 1)
            .replace('\n', " ");
        assert!(read(flat.as_bytes()).starts_with("[2024-03-01 10:11:12,123] INFO loading the model from /data/checkpoints/step-1000 with 8 shards over 8 ranks Loading checkpoint shards: 100%\nTraceback"));
    }

    #[test]
    fn ordinary_lines_stay_as_they_are() {
        assert!(!sniff(LOG.as_bytes()));
        assert_eq!(read(LOG.as_bytes()), LOG);
        // Long, but not a log's lines run together.
        let config = format!("config: {}", "lr=0.1 batch=32 model=gpt2 ".repeat(40));
        assert!(!sniff(config.as_bytes()));
        // A message that names three dates, or three exceptions after a
        // rank's prefix (its own start, and no cut).
        let dates = format!(
            "INFO resuming: {}",
            (1..8)
                .map(|i| format!("step-{i}000 saved 2024-03-0{i} 10:11:12 size 4.2 GiB"))
                .collect::<Vec<_>>()
                .join(", ")
        );
        let errors = format!(
            "[rank1]: RuntimeError: retry failed after ValueError: bad shard {} and after KeyError: 'shard_7' {}",
            "x".repeat(300),
            "y".repeat(200)
        );
        for line in [dates, errors] {
            assert!(!sniff(line.as_bytes()), "{line}");
        }
        // A progress bar's redraws.
        let bar = format!(
            "{}Killed",
            "Epoch 1: 10% ValueError: x Traceback (most recent call last): \r".repeat(20)
        );
        assert!(!sniff(bar.as_bytes()));
    }

    #[test]
    fn a_kill_glued_to_a_progress_bar_is_its_own_line() {
        let flat = format!(
            "{} Traceback (most recent call last): RuntimeError: x ValueError: y 29/30 [00:35<00:01,  1.39s/it]Killed",
            "step 1 loss 2.3 ".repeat(40)
        );
        assert!(read(flat.as_bytes()).ends_with("1.39s/it]\nKilled"));
    }

    #[test]
    fn hostile_lines_cost_their_length() {
        let started = std::time::Instant::now();
        for piece in [" File \"x", " Killed", " [rank1]: ", " #1 0x1 in ", " a"] {
            let line = piece.repeat((1 << 20) / piece.len());
            let _ = read(line.as_bytes());
        }
        assert!(started.elapsed().as_secs() < 20, "{:?}", started.elapsed());
    }

    #[test]
    fn any_cut_of_a_flattened_log_reads_without_panic() {
        let flat = LOG.replace('\n', " ");
        for cut in 0..flat.len() {
            let _ = read(flat.as_bytes().get(..cut).unwrap_or_default());
        }
    }
}
