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
use nom::bytes::complete::{tag, take_till, take_while, take_while1, take_while_m_n};
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

/// The process an NCCL debug line came from, as its header
/// (`host:pid:tid [device] `) says: the node (when the header names one),
/// the process id and the CUDA device the process used.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NcclProcess<'a> {
    pub host: Option<&'a str>,
    pub pid: u32,
    pub device: u32,
}

/// The process named by the NCCL header of `line` (a rank prefix already
/// removed), if it has one. A header whose host part was lost (`::16674:17023
/// [0]`, as some pastes show it) still names the process.
pub fn nccl_process(line: &str) -> Option<NcclProcess<'_>> {
    let (_, (host, pid, device)) = nccl_process_header(line.trim_start()).ok()?;
    Some(NcclProcess {
        host: Some(host).filter(|h| is_host_name(h)),
        pid: pid.parse().ok()?,
        device: device.parse().ok()?,
    })
}

/// `host:pid:tid [device] ` (or `::pid:tid [device] `), optionally after
/// one `[...]` time or tag: host, pid and device.
fn nccl_process_header(s: &str) -> IResult<&str, (&str, &str, &str)> {
    let (s, _) = opt(terminated(
        delimited(char('['), take_till(|c| c == ']'), char(']')),
        space1,
    ))
    .parse(s)?;
    let (s, host) =
        take_while(|c: char| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.')).parse(s)?;
    let (s, separator) = alt((tag("::"), tag(":"))).parse(s)?;
    // A clock (`12:30:45 [1]`) is not a header: a host is a name, and only
    // the `::` form stands for a lost one.
    let named = !host.is_empty() && !host.bytes().all(|b| b.is_ascii_digit());
    if !(named || host.is_empty() && separator == "::") {
        return Err(nom::Err::Error(nom::error::Error::new(
            s,
            nom::error::ErrorKind::Verify,
        )));
    }
    let (s, pid) = terminated(digit1, char(':')).parse(s)?;
    let (s, _) = terminated(digit1, char(' ')).parse(s)?;
    let (s, device) = terminated(delimited(char('['), digit1, char(']')), char(' ')).parse(s)?;
    Ok((s, (host, pid, device)))
}

/// `host:pid:tid [device] `, optionally after one `[...]` time or tag:
/// the host (empty where a paste lost it, which names no node).
fn nccl_header(s: &str) -> IResult<&str, &str> {
    nccl_process_header.map(|(host, _, _)| host).parse(s)
}

/// What follows a syslog or `journalctl` header (and the space after it),
/// when `s` starts with one: the program's own text.
pub(crate) fn after_syslog_header(s: &str) -> Option<&str> {
    let (rest, _) = syslog_header(s).ok()?;
    if rest.is_empty() {
        return Some(rest);
    }
    rest.strip_prefix(' ')
}

/// A syslog time (`Nov 29 21:00:10`, `Nov  1 21:00:10.123456`, or RFC
/// 3339 `2026-11-29T21:00:10.123+00:00`), then `host ident:` or
/// `host ident[pid]:`. After an RFC 3339 time, which a collector also puts
/// in front of a program's text (`... CUDA Error: unknown error`), the
/// ident must be the kernel's or carry its process id.
fn syslog_header(s: &str) -> IResult<&str, &str> {
    let (s, bsd) = alt((bsd_time.map(|_| true), rfc3339_time.map(|_| false))).parse(s)?;
    let (s, _) = space1(s)?;
    let (rest, (host, (_, ident, pid, _))) = (
        host_name,
        (
            space1,
            take_while1(|c: char| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | '/')),
            opt(delimited(char('['), digit1, char(']'))),
            char(':'),
        ),
    )
        .parse(s)?;
    // Without a process id, a word that is no host's (`CUDA error:`,
    // `Caught signal:` after moreutils `ts`'s time) is the program's text.
    let named = pid.is_some()
        || ident == "kernel"
        || (bsd && looks_like_host(host) && ident.starts_with(|c: char| c.is_ascii_lowercase()));
    if named {
        Ok((rest, host))
    } else {
        Err(nom::Err::Error(nom::error::Error::new(
            s,
            nom::error::ErrorKind::Verify,
        )))
    }
}

/// Whether `name` looks like a host's name rather than a word: it has a
/// digit, a dash, a dot or an underscore in it, or no capital letter.
fn looks_like_host(name: &str) -> bool {
    name.bytes()
        .any(|b| b.is_ascii_digit() || matches!(b, b'-' | b'.' | b'_'))
        || !name.bytes().any(|b| b.is_ascii_uppercase())
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
    use super::{line_host, nccl_process, NcclProcess};

    #[test]
    fn nccl_processes() {
        assert_eq!(
            nccl_process(
                "node2:24881:25568 [2] include/alloc.h:178 NCCL WARN Cuda failure 'out of memory'"
            ),
            Some(NcclProcess {
                host: Some("node2"),
                pid: 24881,
                device: 2
            })
        );
        assert_eq!(
            nccl_process("[2024-01-01 10:00:00] gpu-7:10:11 [7] NCCL INFO Channel 00"),
            Some(NcclProcess {
                host: Some("gpu-7"),
                pid: 10,
                device: 7
            })
        );
        assert_eq!(
            nccl_process("::16674:17023 [0] graph/search.cc:703 NCCL WARN XML Import Channel"),
            Some(NcclProcess {
                host: None,
                pid: 16674,
                device: 0
            })
        );
        assert_eq!(
            nccl_process("localhost:5:5 [1] NCCL INFO x").map(|p| p.host),
            Some(None)
        );
        assert_eq!(nccl_process("12:30:45 [1] started"), None);
        assert_eq!(nccl_process("Epoch 1:10:20 [3] loss"), None);
    }

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
        assert_eq!(
            line_host("Nov 29 21:00:10 CUDA error: the requested functionality is not supported"),
            None
        );
        assert_eq!(line_host("Nov 29 21:00:10 Caught signal: 11"), None);
        assert_eq!(
            line_host("Nov 29 21:00:10 DESKTOP-4F2K kernel: NVRM: Xid 79"),
            Some("DESKTOP-4F2K")
        );
        assert_eq!(
            line_host("Nov 29 21:00:10 WORKSTATION kernel: NVRM: Xid 79"),
            Some("WORKSTATION")
        );
        assert_eq!(
            line_host("2024-05-01T12:00:00.123456789Z CUDA Error: unknown error"),
            None
        );
        assert_eq!(line_host("RuntimeError: CUDA error: out of memory"), None);
        assert_eq!(
            line_host("[ 8123.402617] NVRM: Xid (PCI:0000:01:00): 46"),
            None
        );
        assert_eq!(line_host(""), None);
    }
}
