/// A line with its launcher prefixes removed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Prefixed<'a> {
    /// The rank a prefix named, if any. `[rankN]:` wins over `[defaultN]:`.
    pub rank: Option<u32>,
    /// The rest of the line.
    pub rest: &'a str,
}

/// Removes leading `[rankN]:` and `[<role>N]:` prefixes (in any order and
/// number) and the spaces after them.
pub fn strip_rank_prefix(line: &str) -> Prefixed<'_> {
    let mut rest = line;
    let mut rank = None;
    let mut role_rank = None;
    while let Some((tag, number, after)) = bracket_prefix(rest) {
        if tag == "rank" {
            rank = Some(number);
        } else {
            role_rank = role_rank.or(Some(number));
        }
        rest = after.trim_start_matches(' ');
    }
    Prefixed {
        rank: rank.or(role_rank),
        rest,
    }
}

/// Parses `[<letters><digits>]:` at the start of `s`.
fn bracket_prefix(s: &str) -> Option<(&str, u32, &str)> {
    let inner = s.strip_prefix('[')?;
    let close = inner.find("]:")?;
    let tag_and_number = &inner[..close];
    let split = tag_and_number.find(|c: char| c.is_ascii_digit())?;
    let (tag, digits) = tag_and_number.split_at(split);
    if tag.is_empty()
        || !tag.chars().all(|c| c.is_ascii_alphabetic() || c == '_')
        || digits.len() > 7
        || !digits.chars().all(|c| c.is_ascii_digit())
    {
        return None;
    }
    Some((tag, digits.parse().ok()?, &inner[close + 2..]))
}

#[cfg(test)]
mod tests {
    use super::*;

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
    fn other_brackets_are_left_alone() {
        for line in [
            "[rank1] started pid=2000",
            "[W1129 15:15:02.540364146 ProcessGroupNCCL.cpp:1575] Warning",
            "[2026-11-29 15:15:02] vm:1709:1709 [0] bootstrap.cc:114 NCCL WARN",
            "[0]:",
            "",
        ] {
            let p = strip_rank_prefix(line);
            assert_eq!(p.rank, None, "{line}");
            assert_eq!(p.rest, line);
        }
    }

    #[test]
    fn a_glog_line_after_the_prefix_is_kept() {
        let p = strip_rank_prefix("[rank0]:[E1129 15:16:05.539395679 ProcessGroupNCCL.cpp:689] x");
        assert_eq!(p.rank, Some(0));
        assert!(p.rest.starts_with("[E1129"));
    }
}
