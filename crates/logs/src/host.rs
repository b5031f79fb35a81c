//! The node a log line was printed on, where the line's header says it.
//!
//! | form | example |
//! | --- | --- |
//! | NCCL's line header | `gpu-node-17:2043:2043 [0] NCCL INFO ...`, after a `[time]` or a rank prefix |
//! | syslog, `journalctl` | `Nov 29 21:00:10 gpu-node-17 kernel: NVRM: Xid ...` |
//! | `journalctl -o short-iso`, RFC 3339 syslog | `2026-11-29T21:00:10+0000 gpu-node-17 kernel: ...` |
//!
//! Scheduler lines that name a node in their text (`srun: error:
//! gpu-node-17: task 3: ...`) are read by their rules, which capture
//! `host`.

use nom::branch::alt;
use nom::bytes::complete::{tag, take_till, take_while1, take_while_m_n};
use nom::character::complete::{char, digit1, space1};
use nom::combinator::{opt, recognize};
use nom::sequence::{delimited, preceded, terminated};
use nom::{IResult, Parser};

/// The host named by the header of `line` (a rank prefix already
/// removed), if any. The loopback name names no node and is not returned.
pub fn line_host(line: &str) -> Option<&str> {
    let line = line.trim_start();
    alt((nccl_header, syslog_header))
        .parse(line)
        .ok()
        .map(|(_, host)| host)
        .filter(|h| is_host_name(h))
}

/// Whether `s` can name a node: letters, digits, `-`, `_` and `.`,
/// starting with a letter or digit, at most 253 bytes, not a bare number
/// (an IPv4 address is a name), and not the loopback name, which names no
/// node.
pub fn is_host_name(s: &str) -> bool {
    let is_ipv4 = s.split('.').count() == 4 && s.split('.').all(|p| p.parse::<u8>().is_ok());
    !s.is_empty()
        && s.len() <= 253
        && s.starts_with(|c: char| c.is_ascii_alphanumeric())
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
        && (is_ipv4 || !s.bytes().all(|b| b.is_ascii_digit() || b == b'.'))
        && !matches!(
            s.to_ascii_lowercase().as_str(),
            "localhost" | "localhost.localdomain" | "127.0.0.1"
        )
}

/// A host name's characters; [`is_host_name`] decides on the whole.
fn host_name(s: &str) -> IResult<&str, &str> {
    take_while1(|c: char| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.')).parse(s)
}

/// `host:pid:tid [device] `, optionally after one `[...]` time or tag.
fn nccl_header(s: &str) -> IResult<&str, &str> {
    let (s, _) = opt(terminated(
        delimited(char('['), take_till(|c| c == ']'), char(']')),
        space1,
    ))
    .parse(s)?;
    terminated(
        host_name,
        (
            char(':'),
            digit1,
            char(':'),
            digit1,
            char(' '),
            delimited(char('['), digit1, char(']')),
            char(' '),
        ),
    )
    .parse(s)
}

/// A syslog time (`Nov 29 21:00:10`, `Nov  1 21:00:10.123456`, or RFC
/// 3339 `2026-11-29T21:00:10.123+00:00`), then `host ident:` or
/// `host ident[pid]:`.
fn syslog_header(s: &str) -> IResult<&str, &str> {
    let (s, _) = alt((bsd_time, rfc3339_time)).parse(s)?;
    let (s, _) = space1(s)?;
    terminated(
        host_name,
        (
            space1,
            take_while1(|c: char| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | '/')),
            opt(delimited(char('['), digit1, char(']'))),
            char(':'),
        ),
    )
    .parse(s)
}

/// `Nov 29 21:00:10`, with an optional fraction.
fn bsd_time(s: &str) -> IResult<&str, &str> {
    recognize((
        take_while_m_n(3, 3, |c: char| c.is_ascii_alphabetic()),
        space1,
        take_while_m_n(1, 2, |c: char| c.is_ascii_digit()),
        space1,
        clock,
    ))
    .parse(s)
}

/// `2026-11-29T21:00:10`, with an optional fraction and zone.
fn rfc3339_time(s: &str) -> IResult<&str, &str> {
    recognize((
        take_while_m_n(4, 4, |c: char| c.is_ascii_digit()),
        char('-'),
        take_while_m_n(2, 2, |c: char| c.is_ascii_digit()),
        char('-'),
        take_while_m_n(2, 2, |c: char| c.is_ascii_digit()),
        char('T'),
        clock,
        opt(alt((
            tag("Z"),
            recognize((
                alt((char('+'), char('-'))),
                digit1,
                opt(preceded(char(':'), digit1)),
            )),
        ))),
    ))
    .parse(s)
}

/// `21:00:10`, with an optional `.123456`.
fn clock(s: &str) -> IResult<&str, &str> {
    recognize((
        digit1,
        char(':'),
        digit1,
        char(':'),
        digit1,
        opt(preceded(char('.'), digit1)),
    ))
    .parse(s)
}

#[cfg(test)]
mod tests {
    use super::line_host;

    #[test]
    fn nccl_headers() {
        assert_eq!(
            line_host("gpu-node-17:2043:2043 [0] NCCL INFO Bootstrap : Using eth0"),
            Some("gpu-node-17")
        );
        assert_eq!(
            line_host(
                "[2025-09-24 16:15:28] ip-10-1-2-3:912:1010 [3] transport/net.cc:1 NCCL WARN x"
            ),
            Some("ip-10-1-2-3")
        );
        assert_eq!(line_host("12:34:56 [0] NCCL INFO"), None);
    }

    #[test]
    fn syslog_headers() {
        assert_eq!(
            line_host("Nov 29 21:00:10 gpu-node-17 kernel: NVRM: Xid (PCI:0000:1b:00): 79"),
            Some("gpu-node-17")
        );
        assert_eq!(
            line_host("Nov  1 01:02:03.123456 dgx01 slurmstepd[4242]: error: Detected 1 oom_kill"),
            Some("dgx01")
        );
        assert_eq!(
            line_host("2026-11-29T21:00:10+0000 node7.cluster kernel: Out of memory"),
            Some("node7.cluster")
        );
    }

    #[test]
    fn host_names() {
        use super::is_host_name;
        assert!(is_host_name("gpu-node-17") && is_host_name("10.0.15.26"));
        assert!(!is_host_name("localhost") && !is_host_name("1234") && !is_host_name("-x"));
        assert!(!is_host_name("a b") && !is_host_name(""));
    }

    #[test]
    fn not_headers() {
        assert_eq!(line_host("Nov 29 21:00:10 the job is done"), None);
        assert_eq!(line_host("RuntimeError: CUDA error: out of memory"), None);
        assert_eq!(
            line_host("[ 8123.402617] NVRM: Xid (PCI:0000:01:00): 46"),
            None
        );
        assert_eq!(line_host(""), None);
    }
}
