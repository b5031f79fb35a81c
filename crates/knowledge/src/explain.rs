//! Answering `coroner explain <thing>`.

use crate::entry::{Entry, EntryKind};
use crate::tables::Knowledge;

/// What a query found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Answer {
    /// The entries the query names (several when a number or a message is
    /// shared, e.g. a runtime and a driver code).
    Found(Vec<Entry>),
    /// Nothing; the closest names, best first.
    NotFound {
        /// Names that look like the query.
        suggestions: Vec<String>,
    },
}

impl Knowledge {
    /// Looks `query` up: `700`, `CUDA_ERROR_ILLEGAL_ADDRESS`,
    /// `cudaErrorIllegalAddress`, a message such as `an illegal memory
    /// access was encountered` (also inside a longer line), `xid 79`,
    /// `ncclSystemError`, `CUBLAS_STATUS_NOT_INITIALIZED`, or one of
    /// `extra`'s names (rule ids).
    pub fn explain(&self, query: &str, extra: &[Entry]) -> Answer {
        let q = query
            .trim()
            .trim_matches(|c| c == '"' || c == '\'' || c == '`')
            .trim();
        let all = || self.entries.iter().chain(extra);
        if let Some(code) = xid_number(q) {
            return found(
                all().filter(|e| e.kind == EntryKind::Xid && e.code == Some(code)),
                q,
                self,
                extra,
            );
        }
        if let Some(signal) = signal_number(q) {
            return found(
                all().filter(|e| e.kind == EntryKind::Signal && e.code == Some(signal)),
                q,
                self,
                extra,
            );
        }
        let by_name: Vec<Entry> = all()
            .filter(|e| e.names.iter().any(|n| n.eq_ignore_ascii_case(q)))
            .cloned()
            .collect();
        if !by_name.is_empty() {
            return Answer::Found(by_name);
        }
        if let Ok(code) = q.parse::<i64>() {
            let cuda = all().filter(|e| e.kind == EntryKind::CudaError && e.code == Some(code));
            if cuda.clone().next().is_none() && (129..=192).contains(&code) {
                // A shell's, a batch script's or a container's exit status
                // 128 + N: killed by signal N.
                return found(
                    all().filter(|e| e.kind == EntryKind::Signal && e.code == Some(code - 128)),
                    q,
                    self,
                    extra,
                );
            }
            return found(cuda, q, self, extra);
        }
        let lower = q.to_ascii_lowercase();
        let exact: Vec<Entry> = all()
            .filter(|e| {
                e.message
                    .as_deref()
                    .is_some_and(|m| m.eq_ignore_ascii_case(q))
            })
            .cloned()
            .collect();
        if !exact.is_empty() {
            return Answer::Found(exact);
        }
        // The longest known message or name inside the query: a whole log
        // line such as `RuntimeError: CUDA error: ...` can be pasted.
        let within = |e: &&Entry| -> usize {
            let message = e
                .message
                .as_deref()
                .filter(|m| m.len() >= 12 && lower.contains(&m.to_ascii_lowercase()))
                .map_or(0, str::len);
            let name = e
                .names
                .iter()
                .filter(|n| n.len() >= 8 && lower.contains(&n.to_ascii_lowercase()))
                .map(String::len)
                .max()
                .unwrap_or(0);
            message.max(name)
        };
        let best = all().map(|e| within(&e)).max().unwrap_or(0);
        if best > 0 {
            return Answer::Found(all().filter(|e| within(e) == best).cloned().collect());
        }
        Answer::NotFound {
            suggestions: suggestions(q, all()),
        }
    }
}

fn found<'a>(
    entries: impl Iterator<Item = &'a Entry>,
    q: &str,
    k: &Knowledge,
    extra: &[Entry],
) -> Answer {
    let list: Vec<Entry> = entries.cloned().collect();
    if list.is_empty() {
        Answer::NotFound {
            suggestions: suggestions(q, k.entries.iter().chain(extra)),
        }
    } else {
        Answer::Found(list)
    }
}

/// The signal a query names as such: `-9` (Python's and torchrun's
/// exit code), `0:9` or `0:125` (Slurm's ExitCode: exit code, then
/// signal; `137:0`, an exit status with no signal, is read as 128 + N),
/// `signal 9`, `sig 9`. A bare number is not one (it is a
/// CUDA code first).
fn signal_number(q: &str) -> Option<i64> {
    let lower = q.to_ascii_lowercase();
    if let Some(n) = lower.strip_prefix('-') {
        return n.parse().ok().filter(|n| (1..=64).contains(n));
    }
    if let Some((code, signal)) = lower.split_once(':') {
        let code: i64 = code.trim().parse().ok()?;
        let signal: i64 = signal.trim().parse().ok()?;
        return match signal {
            0 if (129..=192).contains(&code) => Some(code - 128),
            0 => None,
            s => Some(s),
        };
    }
    let rest = lower
        .strip_prefix("signal")
        .or_else(|| lower.strip_prefix("sig"))?;
    rest.trim_start_matches([' ', ':', '-', '#']).parse().ok()
}

/// `xid 79`, `Xid79`, `XID: 79`, `xid-79`.
fn xid_number(q: &str) -> Option<i64> {
    let lower = q.to_ascii_lowercase();
    let rest = lower.strip_prefix("xid")?;
    rest.trim_start_matches([' ', ':', '-', '#']).parse().ok()
}

/// The names closest to `q` by edit distance, at most five.
fn suggestions<'a>(q: &str, entries: impl Iterator<Item = &'a Entry>) -> Vec<String> {
    let q = q.to_ascii_lowercase();
    let mut scored: Vec<(usize, String)> = entries
        .flat_map(|e| e.names.iter())
        .map(|n| (distance(&q, &n.to_ascii_lowercase()), n.clone()))
        .collect();
    scored.sort();
    scored.dedup_by(|a, b| a.1 == b.1);
    let limit = (q.len() / 2).max(3);
    let close: Vec<String> = scored
        .iter()
        .filter(|(d, _)| *d <= limit)
        .take(5)
        .map(|(_, n)| n.clone())
        .collect();
    if close.is_empty() {
        scored.into_iter().take(3).map(|(_, n)| n).collect()
    } else {
        close
    }
}

/// Levenshtein distance over bytes.
fn distance(a: &str, b: &str) -> usize {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    let mut cur = vec![0; b.len() + 1];
    for (i, &ca) in a.iter().enumerate() {
        cur[0] = i + 1;
        for (j, &cb) in b.iter().enumerate() {
            let substitute = prev[j] + usize::from(ca != cb);
            cur[j + 1] = substitute.min(prev[j + 1] + 1).min(cur[j] + 1);
        }
        std::mem::swap(&mut prev, &mut cur);
    }
    prev[b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn xid_forms() {
        assert_eq!(xid_number("xid 79"), Some(79));
        assert_eq!(xid_number("XID: 48"), Some(48));
        assert_eq!(xid_number("Xid79"), Some(79));
        assert_eq!(xid_number("x 79"), None);
    }

    #[test]
    fn edit_distance() {
        assert_eq!(distance("kitten", "sitting"), 3);
        assert_eq!(distance("", "abc"), 3);
        assert_eq!(distance("same", "same"), 0);
    }
}
