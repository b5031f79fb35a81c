//! Wall-clock times at the start of log lines.
//!
//! [`line_time`] reads the time a line starts with, in the forms training
//! jobs print:
//!
//! | form | example |
//! | --- | --- |
//! | glog (PyTorch's C++ side, torchrun) | `[E1129 17:16:18.664318040 ProcessGroupNCCL.cpp:689]`, `W1129 20:59:56.364000 595 torch/...` |
//! | ISO 8601, Python logging | `2026-11-29T15:16:05.539Z`, `2026-11-29 18:18:49,123` |
//! | `dmesg -T` | `[Sun Nov 29 21:00:10 2026]` |
//! | syslog, journald | `Nov 29 21:00:10 host kernel: ...` |
//! | torchrun's failure summary | `time      : 2026-11-29_17:20:53` |
//! | nvidia-smi `--query-gpu` | `2026/11/29 20:39:27.588, 0, ...` |
//!
//! glog and syslog print no year; times compare by month, day and time of
//! day, so an incident must not span a new year. Seconds since boot
//! (`[   12.345678]`) are not wall-clock times and are not read.

/// A time of year, to the nanosecond: comparable across the forms.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct LineTime {
    pub month: u8,
    pub day: u8,
    /// Nanoseconds since midnight.
    pub nanos: u64,
    /// The year, when the form prints it (compared last: forms without a
    /// year compare by month, day and time of day).
    pub year: Option<u16>,
}

impl LineTime {
    /// `2026-11-29T17:16:18.664318` (`11-29T...` without a year), to the
    /// microsecond.
    pub fn display(&self) -> String {
        let secs = self.nanos / 1_000_000_000;
        let micros = self.nanos % 1_000_000_000 / 1000;
        let date = match self.year {
            Some(y) => format!("{y:04}-{:02}-{:02}", self.month, self.day),
            None => format!("{:02}-{:02}", self.month, self.day),
        };
        format!(
            "{date}T{:02}:{:02}:{:02}.{micros:06}",
            secs / 3600,
            secs / 60 % 60,
            secs % 60
        )
    }
}

use nom::branch::alt;
use nom::bytes::complete::{tag, take_till, take_while_m_n};
use nom::character::complete::{char, digit0, one_of, satisfy, space0, space1};
use nom::combinator::{eof, map_res, not, opt, peek, verify};
use nom::multi::many0;
use nom::sequence::{preceded, terminated};
use nom::{IResult, Parser};

const MONTHS: [&str; 12] = [
    "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
];

/// The time line `text` (rank prefix already removed) starts with.
pub fn line_time(text: &str) -> Option<LineTime> {
    let t = text.trim_start();
    let t = t.strip_prefix('[').unwrap_or(t);
    alt((glog, iso, ctime, syslog, torchrun_field))
        .parse(t)
        .ok()
        .map(|(_, time)| time)
}

/// `E1129 17:16:18.664318040`; from glog 0.6 with the year in front,
/// `F20221031 10:52:42.193126`.
fn glog(t: &str) -> IResult<&str, LineTime> {
    let year = map_res(
        take_while_m_n(4, 4, |c: char| c.is_ascii_digit()),
        str::parse::<u16>,
    );
    let (rest, (_, year, month, day, _, nanos)) = (
        one_of("IWEF"),
        opt(terminated(year, peek((two_digits, two_digits, char(' '))))),
        two_digits,
        two_digits,
        char(' '),
        clock,
    )
        .parse(t)?;
    valid(rest, t, date(year, month, day, nanos))
}

/// `2026-11-29T15:16:05.539Z`, `2026-11-29 18:18:49,123`, `2026/11/29 20:39:27.588`.
fn iso(t: &str) -> IResult<&str, LineTime> {
    let (rest, (year, sep)) = (
        map_res(
            take_while_m_n(4, 4, |c: char| c.is_ascii_digit()),
            str::parse::<u16>,
        ),
        one_of("-/"),
    )
        .parse(t)?;
    let (rest, (month, _, day, _, nanos)) =
        (two_digits, char(sep), two_digits, one_of("T _"), clock).parse(rest)?;
    valid(rest, t, date(Some(year), month, day, nanos))
}

/// `Sun Nov 29 21:00:10 2026` (`dmesg -T`, with its closing `]`).
fn ctime(t: &str) -> IResult<&str, LineTime> {
    terminated(ctime_stamp, (many0(char(']')), peek(alt((space1, eof))))).parse(t)
}

/// C's `ctime`, `Sun Nov 29 21:00:10 2026`, whatever follows the year:
/// `dmesg -T`'s time and the one Open MPI's `--timestamp-output` puts
/// before its tag (`Mon Sep 11 14:31:16 2017[1,37]<stderr>:`).
pub(crate) fn ctime_stamp(t: &str) -> IResult<&str, LineTime> {
    let (rest, (_, _, month, _, day, _, nanos, _, _, year)) = (
        take_while_m_n(3, 3, |c: char| c.is_ascii_alphabetic()),
        space1,
        month_name,
        space1,
        number,
        space1,
        clock,
        take_till(char::is_whitespace),
        space1,
        map_res(
            take_while_m_n(4, 4, |c: char| c.is_ascii_digit()),
            str::parse::<u16>,
        ),
    )
        .parse(t)?;
    valid(rest, t, date(Some(year), month, day, nanos))
}

/// `Nov 29 21:00:10 host ...`.
fn syslog(t: &str) -> IResult<&str, LineTime> {
    let (rest, (month, _, day, _, nanos)) =
        (month_name, space0, number, char(' '), clock).parse(t)?;
    valid(rest, t, date(None, month, day, nanos))
}

/// `time      : 2026-11-29_17:20:53`.
fn torchrun_field(t: &str) -> IResult<&str, LineTime> {
    preceded((tag("time"), space0, char(':'), space0), iso).parse(t)
}

/// A month's three-letter name, as its number.
fn month_name(t: &str) -> IResult<&str, u32> {
    map_res(
        take_while_m_n(3, 3, |c: char| c.is_ascii_alphabetic()),
        |name: &str| {
            MONTHS
                .iter()
                .position(|m| *m == name)
                .and_then(|i| u32::try_from(i + 1).ok())
                .ok_or(())
        },
    )
    .parse(t)
}

/// `time` when it is a date, else a parse failure at `at`.
fn valid<'a>(rest: &'a str, at: &'a str, time: Option<LineTime>) -> IResult<&'a str, LineTime> {
    match time {
        Some(time) => Ok((rest, time)),
        None => Err(nom::Err::Error(nom::error::Error::new(
            at,
            nom::error::ErrorKind::Verify,
        ))),
    }
}

fn date(year: Option<u16>, month: u32, day: u32, nanos: u64) -> Option<LineTime> {
    ((1..=12).contains(&month) && (1..=31).contains(&day)).then_some(LineTime {
        month: u8::try_from(month).ok()?,
        day: u8::try_from(day).ok()?,
        nanos,
        year,
    })
}

/// `17:16:18`, then an optional fraction after `.` or `,`: nanoseconds
/// since midnight. A digit right after the seconds is not a time.
fn clock(t: &str) -> IResult<&str, u64> {
    let (rest, (hours, _, minutes, _, seconds)) = verify(
        (two_digits, char(':'), two_digits, char(':'), two_digits),
        |&(h, _, m, _, s)| h <= 23 && m <= 59 && s <= 60,
    )
    .parse(t)?;
    let (rest, fraction) = opt(preceded(one_of(".,"), digit0)).parse(rest)?;
    let rest = match fraction {
        Some(_) => rest,
        None => not(satisfy(|c| c.is_ascii_digit())).parse(rest)?.0,
    };
    let mut nanos = 0u64;
    for (i, d) in fraction.unwrap_or("").bytes().take(9).enumerate() {
        nanos += u64::from(d - b'0') * 10u64.pow(8 - u32::try_from(i).unwrap_or(8));
    }
    Ok((
        rest,
        (u64::from(hours) * 3600 + u64::from(minutes) * 60 + u64::from(seconds)) * 1_000_000_000
            + nanos,
    ))
}

/// Two ASCII digits, as a number.
fn two_digits(t: &str) -> IResult<&str, u32> {
    map_res(
        take_while_m_n(2, 2, |c: char| c.is_ascii_digit()),
        str::parse::<u32>,
    )
    .parse(t)
}

/// One to nine ASCII digits, as a number.
fn number(t: &str) -> IResult<&str, u32> {
    map_res(
        take_while_m_n(1, 9, |c: char| c.is_ascii_digit()),
        str::parse::<u32>,
    )
    .parse(t)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shown(text: &str) -> Option<String> {
        line_time(text).map(|t| t.display())
    }

    #[test]
    fn forms_found_in_real_logs() {
        // PyTorch's watchdog, rank prefix removed.
        assert_eq!(
            shown("[E1129 17:16:18.664318040 ProcessGroupNCCL.cpp:689] [Rank 0] Watchdog caught"),
            Some("11-29T17:16:18.664318".into())
        );
        // torchrun's own log lines.
        assert_eq!(
            shown("E1129 21:00:10.790000 595 torch/distributed/elastic/multiprocessing/api.py:986] failed"),
            Some("11-29T21:00:10.790000".into())
        );
        // glog 0.6 and later, with the year.
        assert_eq!(
            shown("F20221031 10:52:42.193126 106986 eager_nccl_comm_manager.cpp:75] Check failed"),
            Some("2022-10-31T10:52:42.193126".into())
        );
        assert_eq!(
            shown("[Sun Nov 29 21:00:10 2026] Memory cgroup out of memory: Killed process 641 (python)"),
            Some("2026-11-29T21:00:10.000000".into())
        );
        assert_eq!(
            shown("  time      : 2026-11-29_17:20:53"),
            Some("2026-11-29T17:20:53.000000".into())
        );
        assert_eq!(
            shown("2026/11/29 20:39:27.588, 0, 0 %, 0 %, 0 MiB, 143771 MiB, 80.42 W"),
            Some("2026-11-29T20:39:27.588000".into())
        );
        assert_eq!(
            shown("2026-11-29 18:18:49,123 - INFO - step 3"),
            Some("2026-11-29T18:18:49.123000".into())
        );
        assert_eq!(
            shown("Nov 29 21:00:10 gpu-node-3 kernel: NVRM: Xid (PCI:0000:00:07): 79"),
            Some("11-29T21:00:10.000000".into())
        );
    }

    #[test]
    fn not_times() {
        for text in [
            "[    0.469658] NVRM: loading NVIDIA UNIX Open Kernel Module",
            "step 12 | loss 0.42",
            "Error: 12:30 is not a time here",
            "E1129 is a code",
            "E20221031 is a code too",
            "2026-11-29 is a date without a time",
            "[rank0]: 17:16:18",
            "Nov 2026 report",
        ] {
            assert_eq!(line_time(text), None, "{text}");
        }
    }

    #[test]
    fn times_compare_across_forms() {
        let glog = line_time("E1129 21:00:10.790000 595 torch/...");
        let dmesg = line_time("[Sun Nov 29 21:00:10 2026] oom-kill");
        assert!(dmesg.is_some() && glog.is_some() && dmesg < glog);
    }
}
