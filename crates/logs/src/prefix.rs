use crate::record::level_word;
use crate::timestamp::ctime_stamp;
use nom::branch::alt;
use nom::bytes::complete::{tag, take_while, take_while1, take_while_m_n};
use nom::character::complete::{anychar, char, digit1, one_of};
use nom::combinator::{map_res, opt, peek, recognize, verify};
use nom::sequence::{delimited, preceded, terminated};
use nom::{IResult, Parser};

/// A line with its launcher prefixes removed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Prefixed<'a> {
    /// The rank a prefix named, if any. `[rankN]:` wins over `[defaultN]:`.
    pub rank: Option<u32>,
    /// The number of a `[rankN]` tag (torchrun's `[rankN]:`, a program's
    /// own `[rankN] `): the job's global rank, unlike a role's local
    /// number or a task label.
    pub global_rank: Option<u32>,
    /// The rest of the line.
    pub rest: &'a str,
}

/// Removes what launchers and log collectors put in front of a program's
/// lines, in this order: the line number of `cat -n` or `nl`, the time
/// Buildkite's agent hides in a control string, the pod and container
/// `kubectl logs --prefix` names (`[pod/train-0/pytorch] `), Docker
/// Compose's service tag (`trainer-1  | `, `trainer_1  | `), the node
/// name pdsh puts in front of a remote
/// command's lines (DeepSpeed's multi-node launcher: `worker-1: `,
/// `10.0.0.3: `), a syslog or `journalctl` header (`Nov 29 21:00:10
/// gpu-node-3 python[4242]: `), a collector's RFC 3339 time (`kubectl
/// logs --timestamps`, `docker logs -t`: `2026-11-29T21:00:10.123456789Z
/// `; with `stderr F ` after it in a container runtime's log file, `01E `
/// in a GitLab job's log; a tab after it in a log store's export; moreutils
/// `ts`'s `Mar 01 10:11:12 `), Airflow's task-log header, or a logging
/// setup's time and level, and the program's own time
/// after it, Ray's worker tag (`(RayTrainWorker pid=1234, ip=10.0.0.1) `,
/// `(VllmWorker rank=0 pid=4716) `, `(raylet) `) with the
/// ` [repeated 3x across cluster]` Ray's log deduplication appends, a
/// Markdown quote marker, vLLM's and SGLang's logging headers, Slurm's
/// task label (`srun --label`: `3: `, the task number; a Ray worker's tag
/// may follow it), Open MPI's `--tag-output` prefix (with
/// `--timestamp-output`'s time), leading `[rankN]:` and `[<role>N]:`
/// prefixes (in any order and number) and the spaces after them, then a
/// program's own `[rankN] ` tag (no colon, a space after it). The rank is the
/// `[rankN]` one, else the label's, the role's, SGLang's `TP` number or
/// the Ray tag's `rank=` (or vLLM's `Worker_TPn`) number.
///
/// Launchers stack: a Ray worker's tag behind torchrun's `[rank0]:`, a pod's
/// log collected with its time in front of both. What is left after the
/// prefixes is read again for more, up to [`STACKED`] times; a rank named
/// further out wins.
pub fn strip_rank_prefix(line: &str) -> Prefixed<'_> {
    let mut found = strip_once(line, true);
    let mut left = line.len();
    for _ in 1..STACKED {
        if found.rest.len() == left {
            break;
        }
        left = found.rest.len();
        let inner = strip_once(found.rest, false);
        if inner.rest.len() == left {
            break;
        }
        found = Prefixed {
            rank: found
                .global_rank
                .or(inner.global_rank)
                .or(found.rank)
                .or(inner.rank),
            global_rank: found.global_rank.or(inner.global_rank),
            rest: inner.rest,
        };
    }
    found
}

/// Most runs of prefixes read off one line.
const STACKED: usize = 3;

/// One run of prefixes, in the order [`strip_rank_prefix`] gives. Only at
/// the start of the line (`outermost`) a bare node name, service tag or
/// task number is a prefix: further in, `0: [tensor]` is a program's list.
fn strip_once(line: &str, outermost: bool) -> Prefixed<'_> {
    let line = if outermost {
        let line = line_number(line).unwrap_or(line);
        let line = buildkite_time(line).unwrap_or(line);
        let line = kubectl_source(line).unwrap_or(line);
        let line = compose_service_tag(line).unwrap_or(line);
        pdsh_node(line).unwrap_or(line)
    } else {
        line
    };
    let line = crate::host::after_syslog_header(line).unwrap_or(line);
    let line = cri_record_header(line)
        .or_else(|| gitlab_record_header(line))
        .unwrap_or(line);
    let line = airflow_header(line).unwrap_or(line);
    // A collector's time, then the program's own (`kubectl logs
    // --timestamps` of a program that prints its time).
    let mut rest = strip_collector_time(strip_collector_time(line));
    // A pod's prefix behind a CI runner's time (`kubectl logs --prefix`
    // run in a job whose log stamps each line).
    if let Some(after) = kubectl_source(rest) {
        rest = strip_collector_time(after);
    }
    if let Some(after) = pytest_explanation(rest) {
        rest = after;
    }
    let mut rank = None;
    let mut role_rank = None;
    if let Some((tag_rank, after)) = ray_tag(rest) {
        role_rank = tag_rank;
        rest = after;
    }
    // A Markdown quote marker a time or a logging setup's prefix put
    // further in (`... - INFO - > building GPT2 tokenizer`): as at the
    // start of a line, it is not the program's text.
    rest = strip_quote_marker(rest);
    if let Some(after) = vllm_header(rest) {
        rest = after;
    }
    if let Some((tp_rank, after)) = sglang_header(rest) {
        role_rank = role_rank.or(tp_rank);
        rest = after;
    }
    if let Ok((after, _)) = clock_before_rank(rest) {
        rest = after;
    }
    if let Some((task, after)) = slurm_label(rest).filter(|_| outermost) {
        role_rank = Some(task);
        rest = after;
        // A Ray cluster started by `srun --label`: the driver's task label,
        // then the tag of the Ray worker whose line the driver relays.
        if let Some((tag_rank, after)) = ray_tag(rest) {
            role_rank = tag_rank.or(role_rank);
            rest = after;
        }
    }
    if let Ok((after, number)) = mpi_tag(rest) {
        role_rank = number.or(role_rank);
        rest = after;
    }
    while let Some((tag, number, after)) = bracket_prefix(rest) {
        if tag == "rank" {
            rank = Some(number);
        } else {
            role_rank = role_rank.or(Some(number));
        }
        rest = after.trim_start_matches(' ');
    }
    if let Some((number, after)) = own_rank_tag(rest) {
        rank = rank.or(Some(number));
        rest = after;
    }
    let global_rank = rank;
    let rank = rank.or(role_rank).or_else(|| c10d_rank(rest));
    Prefixed {
        rank,
        global_rank,
        rest,
    }
}

/// What follows the `E` pytest puts in front of each line of a failed
/// test's exception (`E       RuntimeError: CUDA error: ...`): the letter,
/// then at least three spaces (the source's indent; `--tb=short` gives
/// three, `--tb=long` seven). A glog line (`E1207 12:00:00.1 ...`) has no
/// space after the letter.
fn pytest_explanation(s: &str) -> Option<&str> {
    let parsed: IResult<&str, _> = (
        char('E'),
        take_while_m_n(3, 32, |c| c == ' '),
        peek(verify(anychar, |c: &char| !c.is_whitespace())),
    )
        .parse(s);
    parsed.ok().map(|(rest, _)| rest)
}

/// `s` without Markdown quote markers in front (`> `, `> > `; not `>>> `).
pub(crate) fn strip_quote_marker(s: &str) -> &str {
    let mut rest = s;
    while let Some(after) = rest.strip_prefix('>') {
        match after.strip_prefix(' ') {
            Some(after) => rest = after,
            None if after.is_empty() => rest = after,
            None => break,
        }
    }
    rest
}

/// What follows Docker Compose's tag of the service (and its replica) a
/// line came from: `trainer-1  | `, `trainer_1  | ` (Compose v1), the
/// name padded to the longest one in the run.
fn compose_service_tag(s: &str) -> Option<&str> {
    let parsed: IResult<&str, &str> = terminated(
        take_while1(|c: char| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.')),
        (take_while1(|c| c == ' '), char('|')),
    )
    .parse(s);
    let (rest, name) = parsed.ok()?;
    let replica = name.trim_end_matches(|c: char| c.is_ascii_digit());
    let numbered = replica.len() < name.len()
        && replica.len() > 1
        && replica.ends_with(['-', '_'])
        && replica.starts_with(|c: char| c.is_ascii_alphabetic());
    if !numbered {
        return None;
    }
    match rest.strip_prefix(' ') {
        Some(after) => Some(after),
        None => rest.is_empty().then_some(rest),
    }
}

/// What follows the source `kubectl logs --prefix` puts in front of each
/// line: `[pod/NAME/CONTAINER] ` (a pod's container, its name empty where
/// kubectl could not tell it; several pods' lines interleave under `-l`).
/// The names are Kubernetes object names: lower-case letters, digits, `-`
/// and `.`.
fn kubectl_source(s: &str) -> Option<&str> {
    let is_name = |c: char| c.is_ascii_lowercase() || c.is_ascii_digit() || matches!(c, '-' | '.');
    let parsed: IResult<&str, _> = (
        tag("[pod/"),
        take_while1(is_name),
        char('/'),
        take_while(is_name),
        tag("] "),
    )
        .parse(s);
    parsed.ok().map(|(rest, _)| rest)
}

/// What follows the node name pdsh (and DeepSpeed's launcher through it)
/// puts in front of each line of a remote command, `node-name: `. The
/// name is a host name in lower case with a digit in it (`worker-1`,
/// `gpu07`, `c000002`, an IPv4 address, a container's hex id), so that
/// an exception's type, a logger's or a C function's name
/// (`llama_kv_cache_init: `), a shared library (`libcudart.so.11.0: `)
/// or a program's own prefix (`python3: `, `gcc-11: `, `slurmstepd-gpu3: `)
/// is left alone.
fn pdsh_node(s: &str) -> Option<&str> {
    let parsed: IResult<&str, &str> = terminated(
        take_while1(|c: char| {
            c.is_ascii_lowercase() || c.is_ascii_digit() || matches!(c, '-' | '.')
        }),
        tag(": "),
    )
    .parse(s);
    let (rest, name) = parsed.ok()?;
    let programs = [
        "python",
        "pip",
        "gcc",
        "g++",
        "cc1",
        "clang",
        "ld",
        "nvcc",
        "lib",
        "slurmstepd",
        "srun",
        "sbatch",
        "mpirun",
        "prterun",
        "orted",
        "sh",
        "bash",
        "cuda",
    ];
    let named = name.starts_with(|c: char| c.is_ascii_alphanumeric())
        && name.bytes().any(|b| b.is_ascii_digit())
        && !name.bytes().all(|b| b.is_ascii_digit())
        && !name.contains(".so")
        && !programs.iter().any(|p| {
            name.strip_prefix(p).is_some_and(|after| {
                after.is_empty()
                    || after.starts_with(|c: char| c.is_ascii_digit() || c == '-' || c == '.')
            })
        })
        && crate::host::is_host_name(name);
    named.then_some(rest)
}

/// Exactly `n` ASCII digits.
fn digits<'a>(
    n: usize,
) -> impl Parser<&'a str, Output = &'a str, Error = nom::error::Error<&'a str>> {
    take_while_m_n(n, n, |c: char| c.is_ascii_digit())
}

/// What follows vLLM's logging header: the level, the month and day, the
/// time and the place (`ERROR 05-01 12:00:00 [core.py:123] `; before 0.6
/// without the opening bracket, `INFO 05-01 12:00:00 llm_engine.py:73] `).
fn vllm_header(s: &str) -> Option<&str> {
    let place = (
        opt(char('[')),
        take_while1(|c: char| c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-')),
        char(':'),
        digit1,
        tag("] "),
    );
    let parsed: IResult<&str, _> = (
        level_word,
        char(' '),
        (digits(2), char('-'), digits(2), char(' ')),
        (digits(2), char(':'), digits(2), char(':'), digits(2)),
        opt((char('.'), digit1)),
        char(' '),
        place,
    )
        .parse(s);
    parsed.ok().map(|(rest, _)| rest)
}

/// What follows SGLang's logging header, a bracketed date and time with the
/// process's parallel ranks (`[2025-01-01 12:00:00 TP3] `, `[2025-01-01
/// 12:00:00 DP0 TP3] `), and the tensor-parallel rank it names in the
/// first data-parallel replica and pipeline stage.
fn sglang_header(s: &str) -> Option<(Option<u32>, &str)> {
    let group = preceded(
        char(' '),
        (
            take_while_m_n(2, 4, |c: char| c.is_ascii_uppercase()),
            rank_number,
        ),
    );
    let parsed: IResult<&str, _> = delimited(
        char('['),
        preceded(
            (
                (
                    digits(4),
                    char('-'),
                    digits(2),
                    char('-'),
                    digits(2),
                    char(' '),
                ),
                (digits(2), char(':'), digits(2), char(':'), digits(2)),
            ),
            nom::multi::many1(group),
        ),
        tag("] "),
    )
    .parse(s);
    let (rest, groups) = parsed.ok()?;
    // In a later data-parallel replica or pipeline stage the global rank
    // depends on sizes the header does not give.
    let first_stage = groups
        .iter()
        .all(|&(name, n)| !matches!(name, "DP" | "PP") || n == 0);
    let tp = groups
        .iter()
        .find(|(name, _)| *name == "TP")
        .map(|&(_, n)| n)
        .filter(|_| first_stage);
    Some((tp, rest))
}

/// A time of day in front of a rank prefix (`18:19:06.687 [rank2]:`), as
/// some collectors print: removed.
fn clock_before_rank(s: &str) -> IResult<&str, &str> {
    terminated(
        recognize((
            digit1,
            char(':'),
            digit1,
            char(':'),
            digit1,
            opt((char('.'), digit1)),
        )),
        (char(' '), peek(tag("[rank"))),
    )
    .parse(s)
}

/// Open MPI's `--tag-output` prefix, `[1,3]<stdout>:` (job, rank, stream),
/// with the time `--timestamp-output` puts in front of it (C's `ctime`,
/// `Mon Sep 11 14:31:16 2017[1,37]<stderr>:`), or that time and the
/// stream alone when only `--timestamp-output` is given
/// (`Mon Sep 11 14:31:16 2017<stderr>:`): removed, the rank kept.
fn mpi_tag(s: &str) -> IResult<&str, Option<u32>> {
    // SageMaker's launcher names the rank and the host too:
    // `[1,mpirank:3,algo-1]<stderr>:`.
    let host = (
        char(','),
        take_while1(|c: char| c.is_ascii_alphanumeric() || matches!(c, '-' | '.' | '_')),
    );
    let job_and_rank = delimited(
        (char('['), digit1, char(','), opt(tag("mpirank:"))),
        map_res(digit1, str::parse::<u32>),
        (opt(host), char(']')),
    );
    let stream = || (char('<'), alt((tag("stdout"), tag("stderr"))), tag(">:"));
    let tagged = (opt(ctime_stamp), job_and_rank, stream()).map(|(_, rank, _)| Some(rank));
    let timed = (ctime_stamp, stream()).map(|_| None);
    alt((tagged, timed)).parse(s)
}

/// The rank PyTorch's distributed C++ code names inside its own lines,
/// after the glog header or inside the exception that carries them:
/// `[E ProcessGroupNCCL.cpp:916] [Rank 1] ...`, `[PG ID 0 PG GUID
/// 0(default_pg) Rank 2] ...`, `what():  [PG 1 Rank 1] Process group
/// watchdog thread terminated ...`, `DistBackendError: [Rank 3] ...`.
/// Only the first 200 bytes are looked at. The line is kept whole.
fn c10d_rank(s: &str) -> Option<u32> {
    let mut cut = s.len().min(200);
    while !s.is_char_boundary(cut) {
        cut -= 1;
    }
    let head = s.get(..cut)?;
    let after = match head.find("[Rank ") {
        Some(i) => head.get(i + 6..)?,
        None => {
            let pg = head.get(head.find("[PG ")?..)?;
            pg.get(pg.find(" Rank ")? + 6..)?
        }
    };
    let mut number = map_res(digit1::<&str, nom::error::Error<&str>>, str::parse::<u32>);
    let (rest, number) = number.parse(after).ok()?;
    rest.starts_with(']').then_some(number)
}

/// `s` without the times collectors and logging setups put in front of
/// every line (a container runtime's record header, a collector's time, a
/// program's own time and level): what is left of a launcher's prefix once
/// the parts that change from line to line are gone.
pub(crate) fn without_times(s: &str) -> &str {
    let s = cri_record_header(s)
        .or_else(|| gitlab_record_header(s))
        .unwrap_or(s);
    let s = airflow_header(s).unwrap_or(s);
    strip_collector_time(strip_collector_time(s))
}

/// `s` without the time a collector or a logging setup puts in front of
/// every line, followed by a space (or ` - `, ` | `): an RFC 3339 time
/// (`2026-11-29T21:00:10.123Z`), or a date and a time of day, bracketed or
/// not (`2026-11-29 21:00:10,123`, `[2026-11-29 21:00:10]`), and then a
/// level word, bracketed or not (`INFO`, `[ERROR]`), with its separator.
fn strip_collector_time(s: &str) -> &str {
    if let Some(rest) = hydra_header(s) {
        return rest;
    }
    let clock = || {
        (
            digits(2),
            char(':'),
            digits(2),
            char(':'),
            digits(2),
            opt((one_of(".,"), digit1)),
        )
    };
    // Rich's `[12/03/24 15:05:33]` and a bare `[15:05:33]`.
    let slashed_date = (
        digits(2),
        char('/'),
        digits(2),
        char('/'),
        alt((digits(4), digits(2))),
        char(' '),
    );
    let stamp = alt((
        recognize(delimited(char('['), date_time("T ", false), char(']'))),
        date_time("T ", false),
        month_day_clock,
        recognize(delimited(
            char('['),
            (opt(slashed_date), clock()),
            char(']'),
        )),
    ));
    // A log store's export parts the time from the text with a tab.
    let separator = || alt((tag(" - "), tag(" | "), tag(": "), tag(" "), tag("\t")));
    // Loguru pads the level (`ERROR    | `) and names the place after it
    // (`train:main:42 - `).
    let level = terminated(
        alt((
            recognize(delimited(char('['), level_word, char(']'))),
            recognize(level_word),
        )),
        (
            take_while_m_n(0, 8, |c| c == ' '),
            alt((tag("- "), tag("| "), tag(": "), tag(""))),
        ),
    );
    let place = terminated(
        verify(
            take_while1(|c: char| {
                c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | ':' | '<' | '>')
            }),
            |p: &str| {
                p.rsplit_once(':').is_some_and(|(_, line)| {
                    !line.is_empty() && line.bytes().all(|b| b.is_ascii_digit())
                })
            },
        ),
        tag(" - "),
    );
    let parsed: IResult<&str, &str> =
        recognize((stamp, separator(), opt((level, opt(place))))).parse(s);
    match parsed {
        Ok((rest, _)) => rest,
        Err(_) => s,
    }
}

/// What follows the header of Hydra's job logging (its default format,
/// `[%(asctime)s][%(name)s][%(levelname)s] - `): `[2024-03-01
/// 10:11:12,123][trainer][ERROR] - `.
fn hydra_header(s: &str) -> Option<&str> {
    let bracketed_name = delimited(
        char('['),
        take_while1(|c: char| c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-')),
        char(']'),
    );
    let parsed: IResult<&str, _> = (
        delimited(char('['), date_time("T ", false), char(']')),
        bracketed_name,
        delimited(char('['), level_word, char(']')),
        tag(" - "),
    )
        .parse(s);
    parsed.ok().map(|(rest, _)| rest)
}

/// moreutils `ts`'s default time, `Mar 01 10:11:12` (a month's name, the
/// day and the time of day, with a fraction where `%.S` asks for one).
fn month_day_clock(s: &str) -> IResult<&str, &str> {
    const MONTHS: [&str; 12] = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ];
    recognize((
        verify(
            take_while_m_n(3, 3, |c: char| c.is_ascii_alphabetic()),
            |m: &str| MONTHS.contains(&m),
        ),
        char(' '),
        alt((digits(2), preceded(char(' '), digits(1)))),
        char(' '),
        digits(2),
        char(':'),
        digits(2),
        char(':'),
        digits(2),
        opt((char('.'), digit1)),
    ))
    .parse(s)
}

/// What follows the line number `cat -n` and `nl` put in front of each
/// line: the number, right-aligned, and a tab. (A pasted block's shared
/// indentation may be gone already, and with it the alignment; a table's
/// first column, `12\t0.52`, is taken for one too, which costs its
/// matching nothing.)
fn line_number(s: &str) -> Option<&str> {
    let parsed: IResult<&str, _> = (
        take_while_m_n(0, 8, |c| c == ' '),
        take_while_m_n(1, 9, |c: char| c.is_ascii_digit()),
        char('\t'),
    )
        .parse(s);
    parsed.ok().map(|(rest, _)| rest)
}

/// What follows the time Buildkite's agent hides in front of each line of
/// a job's log, an application program command (`ESC _bk;t=<ms>BEL`; its
/// `ESC` may be gone, taken as an escape of its own).
fn buildkite_time(s: &str) -> Option<&str> {
    let parsed: IResult<&str, _> =
        (opt(char('\u{1b}')), tag("_bk;t="), digit1, char('\u{7}')).parse(s);
    parsed.ok().map(|(rest, _)| rest)
}

/// What follows the header of a line in a GitLab job's log with the
/// runner's times (GitLab 17 and later): an RFC 3339 time, the stream's
/// number in hex and `O` or `E` (standard output or error), `+` where the
/// line goes on from the record before, and a space
/// (`2024-03-01T10:11:12.123456Z 01E `).
fn gitlab_record_header(s: &str) -> Option<&str> {
    let parsed: IResult<&str, _> = (
        date_time("T", true),
        char(' '),
        take_while_m_n(2, 2, |c: char| c.is_ascii_hexdigit()),
        one_of("OE"),
        opt(char('+')),
        char(' '),
    )
        .parse(s);
    parsed.ok().map(|(rest, _)| rest)
}

/// What follows the header of a line of an Airflow task's log
/// (`[%(asctime)s] {%(filename)s:%(lineno)d} %(levelname)s - `): the
/// bracketed time, which starts with the date (`[2024-03-01, 10:11:12
/// UTC]`; before 2.3 `[2021-06-01 10:11:12,123]`, since 2.6
/// `[2024-03-01T10:11:12.123+0000]`), the place in braces and the level
/// (`{subprocess.py:93} INFO - `).
fn airflow_header(s: &str) -> Option<&str> {
    let stamp = delimited(
        char('['),
        recognize((
            digits(4),
            char('-'),
            digits(2),
            char('-'),
            digits(2),
            take_while_m_n(0, 32, |c: char| c != ']'),
        )),
        char(']'),
    );
    let place = delimited(
        char('{'),
        take_while_m_n(1, 96, |c: char| c != '}' && c != ' '),
        char('}'),
    );
    let parsed: IResult<&str, _> =
        (stamp, char(' '), place, char(' '), level_word, tag(" - ")).parse(s);
    parsed.ok().map(|(rest, _)| rest)
}

/// The header of a record in a container runtime's log file (CRI, as
/// containerd and CRI-O write `/var/log/containers/*.log`): an RFC 3339
/// time with its zone, the stream and the record's tag, each followed by
/// one space (`2026-11-29T21:00:10.123456789Z stderr F `). A partial
/// record (`P`, a line the runtime split) is read as a line of its own.
fn cri_record_header(s: &str) -> Option<&str> {
    let parsed: IResult<&str, _> = (
        date_time("T", true),
        char(' '),
        alt((tag("stdout"), tag("stderr"))),
        char(' '),
        one_of("FP"),
        char(' '),
    )
        .parse(s);
    parsed.ok().map(|(rest, _)| rest)
}

/// A date and a time of day (`2026-11-29T21:00:10.123456789+00:00`), the
/// date and time parted by one of `separators`, with its fraction and its
/// zone (`Z`, `+01:00`), the zone required where `zoned`.
fn date_time<'a>(
    separators: &'static str,
    zoned: bool,
) -> impl Parser<&'a str, Output = &'a str, Error = nom::error::Error<&'a str>> {
    let zone = alt((
        recognize(char('Z')),
        recognize((one_of("+-"), digits(2), opt(char(':')), digits(2))),
    ));
    recognize((
        (
            digits(4),
            char('-'),
            digits(2),
            char('-'),
            digits(2),
            one_of(separators),
        ),
        (digits(2), char(':'), digits(2), char(':'), digits(2)),
        opt((one_of(".,"), digit1)),
        verify(opt(zone), move |z: &Option<&str>| z.is_some() || !zoned),
    ))
}

/// Ray's tag in front of a worker's, an actor's or the raylet's lines:
/// `(` then words, `key=value` pairs and commas naming a process with a
/// `pid=`, or `raylet`, then `) `. The `rank=` number, when there is one
/// (vLLM's workers), and what follows the tag, without the suffix of Ray's
/// log deduplication.
fn ray_tag(s: &str) -> Option<(Option<u32>, &str)> {
    let parsed: IResult<&str, &str> = delimited(
        char('('),
        take_while_m_n(1, 96, |c: char| {
            c.is_ascii_alphanumeric() || matches!(c, ' ' | ',' | '=' | '_' | '-' | '.' | ':')
        }),
        tag(")"),
    )
    .parse(s);
    let (rest, inner) = parsed.ok()?;
    let mut words = inner.split([' ', ',']).filter(|w| !w.is_empty());
    let names_process = inner == "raylet"
        || inner.starts_with("raylet,")
        || words.clone().any(|w| {
            w.strip_prefix("pid=")
                .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
        });
    if !names_process {
        return None;
    }
    // vLLM's worker processes name their parallel ranks in the process
    // name: `(Worker_TP2 pid=1304)` is rank 2; in a later pipeline stage
    // or data-parallel replica (`Worker_PP1_TP0`) the global rank also
    // depends on sizes the name does not give, so none is taken.
    let tp_rank = |w: &str| {
        let number = |prefix: &str| {
            w.split('_')
                .find_map(|part| part.strip_prefix(prefix)?.parse::<u32>().ok())
        };
        let first_stage = number("PP").unwrap_or(0) == 0 && number("DP").unwrap_or(0) == 0;
        number("TP").filter(|_| first_stage)
    };
    let rank = words
        .clone()
        .find_map(|w| w.strip_prefix("rank=")?.parse::<u32>().ok())
        .or_else(|| words.find_map(tp_rank));
    Some((rank, strip_ray_repeat(rest.trim_start_matches(' '))))
}

/// `s` without the ` [repeated 3x across cluster]` that Ray's log
/// deduplication appends to a line it saw on several workers.
fn strip_ray_repeat(s: &str) -> &str {
    let Some(head) = s.trim_end().strip_suffix(" across cluster]") else {
        return s;
    };
    match head.rfind(" [repeated ") {
        Some(at) => &s[..at],
        None => s,
    }
}

/// Slurm's `srun --label` prefix: the task number, right-aligned, then
/// `: ` (`3: `, ` 3: `, `12: `).
fn slurm_label(s: &str) -> Option<(u32, &str)> {
    let parsed: IResult<&str, _> = (
        take_while_m_n(0, 6, |c| c == ' '),
        map_res(
            take_while_m_n(1, 6, |c: char| c.is_ascii_digit()),
            str::parse::<u32>,
        ),
        tag(": "),
    )
        .parse(s);
    let (rest, (_, task, _)) = parsed.ok()?;
    Some((task, rest))
}

/// `[rank3] ` or Determined's `[rank=3] ` at the start of `s` (after the
/// bracketed time Determined's trial logs put first, `[2022-08-03T22:08:09Z]
/// `, or its empty brackets when the time was cut): the rank and what
/// follows the space.
fn own_rank_tag(s: &str) -> Option<(u32, &str)> {
    let time = terminated(
        delimited(
            char('['),
            take_while_m_n(0, 40, |c: char| {
                c.is_ascii_digit() || matches!(c, '-' | ':' | '.' | 'T' | 'Z' | '+' | ' ')
            }),
            char(']'),
        ),
        char(' '),
    );
    let parsed: IResult<&str, u32> = preceded(
        opt(time),
        delimited(
            tag("[rank"),
            preceded(opt(char('=')), rank_number),
            tag("] "),
        ),
    )
    .parse(s);
    let (rest, rank) = parsed.ok()?;
    Some((rank, rest.trim_start_matches(' ')))
}

/// Parses `[<letters><digits>]:` at the start of `s`.
fn bracket_prefix(s: &str) -> Option<(&str, u32, &str)> {
    let parsed: IResult<&str, _> = (
        char('['),
        take_while1(|c: char| c.is_ascii_alphabetic() || c == '_'),
        rank_number,
        tag("]:"),
    )
        .parse(s);
    let (rest, (_, tag_name, number, _)) = parsed.ok()?;
    Some((tag_name, number, rest))
}

/// One to seven digits: a rank.
fn rank_number(s: &str) -> IResult<&str, u32> {
    map_res(
        take_while_m_n(1, 7, |c: char| c.is_ascii_digit()),
        str::parse::<u32>,
    )
    .parse(s)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pytest_exception_marker() {
        for (line, rest) in [
            (
                "E       RuntimeError: CUDA error: out of memory",
                "RuntimeError: CUDA error: out of memory",
            ),
            (
                "E   jax.errors.JaxRuntimeError: x",
                "jax.errors.JaxRuntimeError: x",
            ),
            (
                "2025-03-01T10:00:00.123Z E       torch.OutOfMemoryError: x",
                "torch.OutOfMemoryError: x",
            ),
            // Not pytest's: glog's level letter, a word, too few spaces.
            (
                "E1207 12:00:00.100 42 nccl.cpp:1] x",
                "E1207 12:00:00.100 42 nccl.cpp:1] x",
            ),
            ("Epoch 3: loss 0.1", "Epoch 3: loss 0.1"),
            ("E  two spaces", "E  two spaces"),
            ("E      ", "E      "),
        ] {
            assert_eq!(strip_rank_prefix(line).rest, rest, "{line}");
        }
    }

    #[test]
    fn pytorch_rank_prefix() {
        let p = strip_rank_prefix("[rank1]: ValueError: shape mismatch");
        assert_eq!(p.rank, Some(1));
        assert_eq!(p.rest, "ValueError: shape mismatch");
    }

    #[test]
    fn torchrun_tee_and_rank_prefix_together() {
        let p = strip_rank_prefix("[default3]:[rank11]:RuntimeError: x");
        assert_eq!(p.rank, Some(11));
        assert_eq!(p.rest, "RuntimeError: x");
        assert_eq!(strip_rank_prefix("[default3]:hello").rank, Some(3));
    }

    #[test]
    fn stacked_launchers_prefixes_are_all_read_off() {
        for (line, rank, rest) in [
            (
                "[rank0]: (Runner pid=16018) Cuda failure 217 'peer access is not supported'",
                Some(0),
                "Cuda failure 217 'peer access is not supported'",
            ),
            (
                "(RayTrainWorker pid=23412, ip=10.0.0.12) (Runner pid=16018) Cuda failure 217",
                None,
                "Cuda failure 217",
            ),
            (
                "2024-03-01T10:11:12.123456789Z [rank3]: (VllmWorker rank=5 pid=4716) CUDA error",
                Some(3),
                "CUDA error",
            ),
            (
                "[1,0]<stderr>:[rank2]: (RayTrainWorker pid=7) RuntimeError: x",
                Some(2),
                "RuntimeError: x",
            ),
            // Further in, a number and a colon are the program's text.
            (
                "[1,0]<stderr>:0: [broadcast.noname.3765]",
                Some(0),
                "0: [broadcast.noname.3765]",
            ),
            (
                "[rank1]: worker-1: connection refused",
                Some(1),
                "worker-1: connection refused",
            ),
        ] {
            let p = strip_rank_prefix(line);
            assert_eq!((p.rank, p.rest), (rank, rest), "{line}");
        }
    }

    #[test]
    fn a_programs_own_rank_tag() {
        let p = strip_rank_prefix("[rank1] step 10: out of memory in forward");
        assert_eq!(
            (p.rank, p.rest),
            (Some(1), "step 10: out of memory in forward")
        );
        let p = strip_rank_prefix("[default0]:[rank0] step 3 loss 0.5");
        assert_eq!((p.rank, p.rest), (Some(0), "step 3 loss 0.5"));
        // Determined's trial logs, with their time or its empty brackets.
        for line in [
            "[rank=2] RuntimeError: CUDA out of memory.",
            "[2022-08-03T22:08:09.581658Z] [rank=2] RuntimeError: CUDA out of memory.",
            "[] [rank=2] RuntimeError: CUDA out of memory.",
        ] {
            let p = strip_rank_prefix(line);
            assert_eq!(
                (p.rank, p.rest),
                (Some(2), "RuntimeError: CUDA out of memory."),
                "{line}"
            );
        }
        // A bracket that is not a time, or no rank after it, stays.
        let p = strip_rank_prefix("[worker] [rank=2] x");
        assert_eq!((p.rank, p.rest), (None, "[worker] [rank=2] x"));
        let p = strip_rank_prefix("[2022-08-03] loss 0.5");
        assert_eq!((p.rank, p.rest), (None, "[2022-08-03] loss 0.5"));
    }

    #[test]
    fn collector_times_and_slurm_labels() {
        let p = strip_rank_prefix(
            "2026-11-29T21:00:10.123456789Z [rank1]: Traceback (most recent call last):",
        );
        assert_eq!(
            (p.rank, p.rest),
            (Some(1), "Traceback (most recent call last):")
        );
        let p = strip_rank_prefix("2026-11-29T21:00:10+01:00 step 3 loss 0.5");
        assert_eq!((p.rank, p.rest), (None, "step 3 loss 0.5"));
        let p = strip_rank_prefix(
            "3: RuntimeError: CUDA error: an illegal memory access was encountered",
        );
        assert_eq!(p.rank, Some(3));
        assert!(p.rest.starts_with("RuntimeError"));
        let p = strip_rank_prefix(" 3: [rank11]: x");
        assert_eq!((p.rank, p.rest), (Some(11), "x"));
        // A logging setup's date and time, with its level, go too.
        for (line, rest) in [
            ("2026-11-29T21:00:10 step 3", "step 3"),
            (
                "2026-11-29 21:00:10,123 - INFO -   File \"x.py\"",
                "  File \"x.py\"",
            ),
            (
                "[2026-11-29 21:00:10] [ERROR] RuntimeError: x",
                "RuntimeError: x",
            ),
            ("2026-11-29 21:00:10.5 | WARNING | Traceback", "Traceback"),
            (
                "2024-05-01 12:00:00.123 | ERROR    | train:main:42 - RuntimeError: x",
                "RuntimeError: x",
            ),
            (
                "2024-05-01 12:00:00.123 | INFO     | __main__:<module>:7 - step 3",
                "step 3",
            ),
            (
                "2024-05-01 12:00:00.123 | ERROR    | not a place - x",
                "not a place - x",
            ),
            ("[15:05:33] RuntimeError: x", "RuntimeError: x"),
            // CRI's stream and tag follow only its own time.
            (
                "[12:00:01] stdout P MemoryError: x",
                "stdout P MemoryError: x",
            ),
            (
                "2026-11-29 21:00:10 - stderr F MemoryError: x",
                "stderr F MemoryError: x",
            ),
            // A container runtime's log file (CRI): the stream and tag go
            // with the time.
            (
                "2026-11-29T21:00:10.123456789Z stderr F [rank1]: Traceback (most recent call last):",
                "Traceback (most recent call last):",
            ),
            (
                "2026-11-29T21:00:10.123456789+00:00 stdout P step 3",
                "step 3",
            ),
            (
                "2024-05-01 12:00:00,123 - INFO - > building GPT2 tokenizer",
                "building GPT2 tokenizer",
            ),
            ("2024-05-01 12:00:00 >>> import torch", ">>> import torch"),
            (
                "2024-05-01T12:00:00.123456789Z 2024-11-20 14:37:16 [rank3]: x",
                "x",
            ),
            ("[12/03/24 15:05:33] ERROR    boom", "boom"),
            ("[15:05:33.120] INFO: x", "x"),
            (
                "[2026-11-29 15:15:02] vm:1709:1709 [0] bootstrap.cc:114 NCCL WARN",
                "vm:1709:1709 [0] bootstrap.cc:114 NCCL WARN",
            ),
        ] {
            assert_eq!(strip_rank_prefix(line).rest, rest, "{line}");
        }
        for line in [
            "12:30 lunch",
            "3:x",
            "1234567: x",
            "2026-11-29 was a Sunday",
            "2026-11-29 21:00 x",
            "[15:05] x",
            "15:05:33 x",
        ] {
            assert_eq!(strip_rank_prefix(line).rest, line, "{line}");
        }
    }

    #[test]
    fn ci_systems_and_log_stores_headers() {
        for (line, rank, rest) in [
            // Airflow 2.3 and later, before 2.3, 2.6 and later.
            (
                "[2024-03-01, 10:11:12 UTC] {subprocess.py:93} INFO - [rank1]: Killed",
                Some(1),
                "Killed",
            ),
            (
                "[2021-06-01 10:11:12,123] {bash_operator.py:128} INFO - RuntimeError: x",
                None,
                "RuntimeError: x",
            ),
            (
                "[2024-03-01T10:11:12.123+0000] {subprocess.py:93} ERROR - Killed",
                None,
                "Killed",
            ),
            // GitLab's runner times, a line going on from the last.
            ("2024-03-01T10:11:12.123456Z 01E Killed", None, "Killed"),
            ("2024-03-01T10:11:12.123456Z 00O+ [rank2]: x", Some(2), "x"),
            // A log store's export: the time, a tab.
            ("2024-03-01T10:11:12.123Z\tKilled", None, "Killed"),
            // moreutils `ts`.
            ("Mar 01 10:11:12 [rank3]: Killed", Some(3), "Killed"),
            ("Mar  1 10:11:12.345678 Killed", None, "Killed"),
            // A syslog time with no host after it is that.
            ("Nov 29 21:00:10 the job is done", None, "the job is done"),
            // `cat -n`, `nl`.
            (
                "     3\tModuleNotFoundError: x",
                None,
                "ModuleNotFoundError: x",
            ),
            ("  1204\t[rank0]: x", Some(0), "x"),
            // Buildkite's hidden time, its escape gone.
            ("_bk;t=1709287872123\u{7}Killed", None, "Killed"),
        ] {
            let p = strip_rank_prefix(line);
            assert_eq!((p.rank, p.rest), (rank, rest), "{line}");
        }
        // Not such headers: a month's name must be one, a place is braced.
        for line in [
            "Foo 01 10:11:12 Killed",
            "[2024-03-01, 10:11:12 UTC] INFO - x",
            "3 apples\tpears",
        ] {
            assert_eq!(strip_rank_prefix(line).rest, line, "{line}");
        }
    }

    #[test]
    fn kubectl_sources() {
        for (line, rank, rest) in [
            (
                "[pod/llama-worker-0/pytorch] MemoryError: Unable to allocate",
                None,
                "MemoryError: Unable to allocate",
            ),
            (
                "[pod/job.x-master-0/trainer] 2024-05-01T12:00:00.123456Z [rank3]: x",
                Some(3),
                "x",
            ),
            ("[pod/train-0/] x", None, "x"),
            // Behind a CI runner's time, and with kubectl's own time after it.
            (
                "2024-05-01T12:00:00.1234567Z [pod/train-0/main] 2024-05-01T12:00:00.000000000Z [rank1]: x",
                Some(1),
                "x",
            ),
            // A program's own brackets are not a source.
            ("[pod/a] x", None, "[pod/a] x"),
            ("[Pod/a/b] x", None, "[Pod/a/b] x"),
            ("[pod/a/b]x", None, "[pod/a/b]x"),
        ] {
            let p = strip_rank_prefix(line);
            assert_eq!((p.rank, p.rest), (rank, rest), "{line}");
        }
    }

    #[test]
    fn compose_tags_and_syslog_headers() {
        for (line, rank, rest) in [
            (
                "vllm-server-1  | ERROR 02-24 boom",
                None,
                "ERROR 02-24 boom",
            ),
            (
                "trainer_1      | [rank3]: RuntimeError: x",
                Some(3),
                "RuntimeError: x",
            ),
            ("app-1  |", None, ""),
            ("tgi-1  | 2024-05-01T12:00:00.123456Z ERROR x", None, "x"),
            (
                "Dec  3 15:05:33 gpu-node1 python[12345]: torch.OutOfMemoryError: x",
                None,
                "torch.OutOfMemoryError: x",
            ),
            (
                "Nov 29 21:00:10 dgx01 kernel: NVRM: Xid (PCI:0000:1b:00): 79",
                None,
                "NVRM: Xid (PCI:0000:1b:00): 79",
            ),
            (
                "2024-05-01T12:00:00Z CUDA Error: unknown error",
                None,
                "CUDA Error: unknown error",
            ),
            (
                "Nov 29 21:00:10 dgx01 python[7]: 2024-11-20 14:37:16 [rank3]: x",
                Some(3),
                "x",
            ),
            (
                "2026-11-29T21:00:10+0000 node7 train.sh[77]: [rank1]: x",
                Some(1),
                "x",
            ),
        ] {
            let p = strip_rank_prefix(line);
            assert_eq!((p.rank, p.rest), (rank, rest), "{line}");
        }
        for (line, rank, rest) in [
            ("ERROR 05-01 12:00:00 [core.py:123] Traceback", None, "Traceback"),
            (
                "INFO 05-01 12:00:00 llm_engine.py:73] Initializing",
                None,
                "Initializing",
            ),
            (
                "(VllmWorker rank=1 pid=4716) ERROR 02-24 00:55:46 [multiproc_executor.py:470] boom",
                Some(1),
                "boom",
            ),
            ("[2025-01-01 12:00:00 TP3] Scheduler hit", Some(3), "Scheduler hit"),
            ("[2025-01-01 12:00:00 DP0 TP2] x", Some(2), "x"),
            ("[2025-01-01 12:00:00 DP1 TP0] x", None, "x"),
            ("shanghai01: x", None, "x"),
            ("worker-1: [rank8]: RuntimeError: x", Some(8), "RuntimeError: x"),
            ("10.10.23.10: NCCL WARN x", None, "NCCL WARN x"),
            ("c000002:   File \"x.py\"", None, "  File \"x.py\""),
            (
                "node1: [2024-01-01 12:00:00,123] [INFO] [engine.py:1] x",
                None,
                "[engine.py:1] x",
            ),
        ] {
            let p = strip_rank_prefix(line);
            assert_eq!((p.rank, p.rest), (rank, rest), "{line}");
        }
        for line in [
            "llama_kv_cache_init: failed",
            "libcudart.so.11.0: cannot open shared object file",
            "python3: can't open file 'x'",
            "gcc-11: error: x",
            "slurmstepd-gpu20-15: error: x",
            "GPU0: NVIDIA",
            "ERROR 05-01 12:00:00 boom",
            "[2025-01-01 12:00:00 tp3] x",
            "RuntimeError: x",
            "main: error",
            "Epoch 1:  50%|#####     | 5/10",
            "total  | 12",
            "1-2  | x",
            "name-1 |x",
            "| GPU  Name |",
        ] {
            assert_eq!(strip_rank_prefix(line).rest, line, "{line}");
        }
    }

    #[test]
    fn ray_worker_tags() {
        let p = strip_rank_prefix(
            "(CommandActor pid=552, ip=10.130.6.168)   File \"/x/api.py\", line 881, in _invoke_run",
        );
        assert_eq!(
            (p.rank, p.rest),
            (None, "File \"/x/api.py\", line 881, in _invoke_run")
        );
        let p = strip_rank_prefix("(Worker_TP2 pid=1304) torch.AcceleratorError: x");
        assert_eq!((p.rank, p.rest), (Some(2), "torch.AcceleratorError: x"));
        let p = strip_rank_prefix("(Worker_PP1_TP0 pid=77) x");
        assert_eq!(p.rank, None);
        let p = strip_rank_prefix("(Worker_PP0_TP3 pid=77) x");
        assert_eq!(p.rank, Some(3));
        let p = strip_rank_prefix("(EngineCore_DP0 pid=9492) x");
        assert_eq!(p.rank, None);
        let p = strip_rank_prefix("(VllmWorker rank=1 pid=4716) ERROR 02-24 00:55:46 boom");
        assert_eq!((p.rank, p.rest), (Some(1), "ERROR 02-24 00:55:46 boom"));
        let p = strip_rank_prefix(
            "(CriticModelRayActor pid=489290) Loading extension module cpu_adam... [repeated 3x across cluster]",
        );
        assert_eq!(p.rest, "Loading extension module cpu_adam...");
        let p = strip_rank_prefix(
            "0: (CommandActor pid=552, ip=10.0.0.2)   File \"/x/api.py\", line 8, in f",
        );
        assert_eq!(
            (p.rank, p.rest),
            (Some(0), "File \"/x/api.py\", line 8, in f")
        );
        let p = strip_rank_prefix("1: (VllmWorker rank=3 pid=4716) ERROR boom");
        assert_eq!((p.rank, p.rest), (Some(3), "ERROR boom"));
        let p = strip_rank_prefix("(pid=1522026) [rank3]: RuntimeError: x");
        assert_eq!((p.rank, p.rest), (Some(3), "RuntimeError: x"));
        assert_eq!(
            strip_rank_prefix("(raylet) [2024-01-01] x").rest,
            "[2024-01-01] x"
        );
        for line in [
            "(most recent call last): x",
            "(pid=) x",
            "(see above) pid=3",
            "(a) [repeated 3x across cluster]",
        ] {
            assert_eq!(strip_rank_prefix(line).rest, line, "{line}");
        }
    }

    #[test]
    fn other_brackets_are_left_alone() {
        for line in [
            "[rank] started pid=2000",
            "[rank1]started",
            "[W1129 15:15:02.540364146 ProcessGroupNCCL.cpp:1575] Warning",
            "[0]:",
            "",
        ] {
            let p = strip_rank_prefix(line);
            assert_eq!(p.rank, None, "{line}");
            assert_eq!(p.rest, line);
        }
    }

    #[test]
    fn sagemakers_mpi_tag_and_hydras_logging_header() {
        let p = strip_rank_prefix(
            "[1,mpirank:3,algo-1]<stderr>:RuntimeError: CUDA error: out of memory",
        );
        assert_eq!(
            (p.rank, p.rest),
            (Some(3), "RuntimeError: CUDA error: out of memory")
        );
        let p = strip_rank_prefix("[1,mpirank:12,algo-2.ec2]<stdout>:Killed");
        assert_eq!((p.rank, p.rest), (Some(12), "Killed"));
        let p = strip_rank_prefix("[2024-03-01 10:11:12,123][trainer][ERROR] - Killed");
        assert_eq!((p.rank, p.rest), (None, "Killed"));
        let p = strip_rank_prefix(
            "[2023-05-10 12:00:00,001][nemo.collections.asr][WARNING] - [rank1]: CUDA error",
        );
        assert_eq!((p.rank, p.rest), (Some(1), "CUDA error"));
        // Not Hydra's header: no level, so nothing is read off.
        let p = strip_rank_prefix("[2024-03-01 10:11:12,123][trainer] Killed");
        assert_eq!(p.rest, "[2024-03-01 10:11:12,123][trainer] Killed");
    }

    #[test]
    fn mpi_tags_clock_times_and_c10d_ranks() {
        let p = strip_rank_prefix("[1,12]<stdout>:node:815:864 [0] NCCL WARN x");
        assert_eq!((p.rank, p.rest), (Some(12), "node:815:864 [0] NCCL WARN x"));
        // With `--timestamp-output`.
        let p = strip_rank_prefix(
            "Mon Sep 11 14:31:16 2017[1,37]<stderr>:F0911 14:31:16.057638  5678 SocketChannel.cpp:54] x",
        );
        assert_eq!(
            (p.rank, p.rest),
            (
                Some(37),
                "F0911 14:31:16.057638  5678 SocketChannel.cpp:54] x"
            )
        );
        let p = strip_rank_prefix("Tue Feb  4 09:01:02 2025[1,5]<stderr>:y");
        assert_eq!((p.rank, p.rest), (Some(5), "y"));
        // With `--timestamp-output` alone.
        let p = strip_rank_prefix("Mon Sep 11 14:31:16 2017<stderr>:F0911 14:31:16.057638 x");
        assert_eq!((p.rank, p.rest), (None, "F0911 14:31:16.057638 x"));
        // A ctime with nothing of Open MPI's after it stays.
        let p = strip_rank_prefix("Mon Sep 11 14:31:16 2017 x");
        assert_eq!((p.rank, p.rest), (None, "Mon Sep 11 14:31:16 2017 x"));
        let p = strip_rank_prefix(
            "18:19:06.687 [rank2]:[F205 18:19:06.383 ProcessGroupNCCL.cpp:1614] x",
        );
        assert_eq!(p.rank, Some(2));
        assert!(p.rest.starts_with("[F205"));
        let p = strip_rank_prefix(
            "[E ProcessGroupNCCL.cpp:916] [Rank 1] NCCL watchdog thread terminated",
        );
        assert_eq!(p.rank, Some(1));
        assert!(p.rest.starts_with("[E ProcessGroupNCCL"));
        let p = strip_rank_prefix(
            "[E1129 17:16:18.664 ProcessGroupNCCL.cpp:689] [PG ID 0 PG GUID 0(default_pg) Rank 3] Timeout",
        );
        assert_eq!(p.rank, Some(3));
        assert_eq!(strip_rank_prefix("[E x.cpp:1] [Rank x] y").rank, None);
        // Inside the exception that carries the message.
        let p = strip_rank_prefix(
            "  what():  [PG ID 0 PG GUID 0(default_pg) Rank 2] Process group watchdog thread terminated with exception: CUDA error: an illegal memory access was encountered",
        );
        assert_eq!(p.rank, Some(2));
        let p = strip_rank_prefix(
            "torch.distributed.DistBackendError: [Rank 3] Watchdog caught collective operation timeout",
        );
        assert_eq!(p.rank, Some(3));
        assert_eq!(
            strip_rank_prefix(&format!("{} [Rank 4] late", "x".repeat(300))).rank,
            None
        );
        assert_eq!(strip_rank_prefix("12:30:01 lunch").rest, "12:30:01 lunch");
    }

    #[test]
    fn a_glog_line_after_the_prefix_is_kept() {
        let p = strip_rank_prefix("[rank0]:[E1129 15:16:05.539395679 ProcessGroupNCCL.cpp:689] x");
        assert_eq!(p.rank, Some(0));
        assert!(p.rest.starts_with("[E1129"));
    }
}
