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

const MONTHS: [&str; 12] = [
    "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
];

/// The time line `text` (rank prefix already removed) starts with.
pub fn line_time(text: &str) -> Option<LineTime> {
    let t = text.trim_start();
    let t = t.strip_prefix('[').unwrap_or(t);
    glog(t)
        .or_else(|| iso(t))
        .or_else(|| ctime(t))
        .or_else(|| syslog(t))
        .or_else(|| torchrun_field(t))
}

/// `E1129 17:16:18.664318040`.
fn glog(t: &str) -> Option<LineTime> {
    let b = t.as_bytes();
    if !matches!(b.first(), Some(b'I' | b'W' | b'E' | b'F')) || b.get(5) != Some(&b' ') {
        return None;
    }
    let month = number(t.get(1..3)?)?;
    let day = number(t.get(3..5)?)?;
    date(None, month, day, clock(t.get(6..)?)?)
}

/// `2026-11-29T15:16:05.539Z`, `2026-11-29 18:18:49,123`, `2026/11/29 20:39:27.588`.
fn iso(t: &str) -> Option<LineTime> {
    let sep = *t.as_bytes().get(4)?;
    if !matches!(sep, b'-' | b'/') || t.as_bytes().get(7) != Some(&sep) {
        return None;
    }
    if !matches!(t.as_bytes().get(10), Some(b'T' | b' ' | b'_')) {
        return None;
    }
    let year = u16::try_from(number(t.get(..4)?)?).ok()?;
    date(
        Some(year),
        number(t.get(5..7)?)?,
        number(t.get(8..10)?)?,
        clock(t.get(11..)?)?,
    )
}

/// `Sun Nov 29 21:00:10 2026`.
fn ctime(t: &str) -> Option<LineTime> {
    let mut words = t.split_whitespace();
    let (weekday, month, day, time, year) = (
        words.next()?,
        words.next()?,
        words.next()?,
        words.next()?,
        words.next()?,
    );
    if weekday.len() != 3 || !weekday.chars().all(|c| c.is_ascii_alphabetic()) {
        return None;
    }
    let year = year.trim_end_matches(']');
    let year = u16::try_from(number(year).filter(|_| year.len() == 4)?).ok()?;
    date(Some(year), month_number(month)?, number(day)?, clock(time)?)
}

/// `Nov 29 21:00:10 host ...`.
fn syslog(t: &str) -> Option<LineTime> {
    let month = month_number(t.get(..3)?)?;
    let rest = t.get(3..)?.trim_start();
    let (day, rest) = rest.split_once(' ')?;
    date(None, month, number(day)?, clock(rest)?)
}

/// `time      : 2026-11-29_17:20:53`.
fn torchrun_field(t: &str) -> Option<LineTime> {
    let rest = t.strip_prefix("time")?.trim_start().strip_prefix(':')?;
    iso(rest.trim_start())
}

fn month_number(name: &str) -> Option<u32> {
    MONTHS
        .iter()
        .position(|m| *m == name)
        .and_then(|i| u32::try_from(i + 1).ok())
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
/// since midnight.
fn clock(t: &str) -> Option<u64> {
    let hours = number(t.get(0..2)?)?;
    let minutes = number(t.get(3..5)?)?;
    let seconds = number(t.get(6..8)?)?;
    let b = t.as_bytes();
    if b.get(2) != Some(&b':')
        || b.get(5) != Some(&b':')
        || hours > 23
        || minutes > 59
        || seconds > 60
    {
        return None;
    }
    let mut nanos = 0u64;
    if matches!(b.get(8), Some(b'.' | b',')) {
        let digits: Vec<u8> = b
            .iter()
            .skip(9)
            .take_while(|c| c.is_ascii_digit())
            .take(9)
            .copied()
            .collect();
        for (i, d) in digits.iter().enumerate() {
            nanos += u64::from(d - b'0') * 10u64.pow(8 - u32::try_from(i).ok()?);
        }
    } else if b.get(8).is_some_and(u8::is_ascii_digit) {
        return None;
    }
    Some(
        (u64::from(hours) * 3600 + u64::from(minutes) * 60 + u64::from(seconds)) * 1_000_000_000
            + nanos,
    )
}

/// All ASCII digits, as a number.
fn number(t: &str) -> Option<u32> {
    (!t.is_empty() && t.len() <= 9 && t.bytes().all(|c| c.is_ascii_digit()))
        .then(|| t.parse().ok())
        .flatten()
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
