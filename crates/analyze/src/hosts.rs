//! Giving findings the node they happened on, from the rank's other
//! findings.
//!
//! A line names its host when its header does (NCCL's `host:pid:tid`, a
//! syslog host field) or a rule captures one (Slurm's `srun: error:
//! node17: task 3: ...`). A Python exception on rank 3 names none; when
//! rank 3's other findings all name one host, it happened there too.

use coroner_model::Finding;

/// Gives every finding with a rank and no host the one host the findings
/// of that rank name, when they name exactly one; then every finding
/// still without one the host its input's path names (`gpu-node-17/dmesg`,
/// `logs/gpu-node-17.log`), when that is a host the incident's lines name.
pub(crate) fn attribute_hosts(findings: &mut [Finding]) {
    by_rank(findings);
    by_path(findings);
}

fn by_path(findings: &mut [Finding]) {
    let mut known: Vec<String> = findings.iter().filter_map(|f| f.host.clone()).collect();
    known.sort_unstable();
    known.dedup();
    if known.is_empty() {
        return;
    }
    for f in findings.iter_mut().filter(|f| f.host.is_none()) {
        f.host = host_in_path(&f.first_seen.input, &known).map(str::to_owned);
    }
}

/// The one known host that a component of `path` (a directory, or a file
/// name without its extensions) is named after.
fn host_in_path<'a>(path: &str, known: &'a [String]) -> Option<&'a str> {
    let mut named = path
        .split(['/', '\\'])
        .map(|part| part.split('.').next().unwrap_or(part))
        .filter_map(|part| known.iter().find(|h| h.split('.').next() == Some(part)));
    let first = named.next()?;
    named.all(|h| h == first).then_some(first.as_str())
}

fn by_rank(findings: &mut [Finding]) {
    let mut pairs: Vec<(u32, String)> = findings
        .iter()
        .filter_map(|f| Some((f.rank?, f.host.clone()?)))
        .collect();
    pairs.sort_unstable();
    pairs.dedup();
    for f in findings.iter_mut().filter(|f| f.host.is_none()) {
        let Some(rank) = f.rank else { continue };
        f.host = host_of_rank(&pairs, rank).map(str::to_owned);
    }
}

/// The one host `pairs` (rank, host) give `rank`, if exactly one.
fn host_of_rank(pairs: &[(u32, String)], rank: u32) -> Option<&str> {
    let mut hosts = pairs.iter().filter(|(r, _)| *r == rank).map(|(_, h)| h);
    match (hosts.next(), hosts.next()) {
        (Some(host), None) => Some(host),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::{host_in_path, host_of_rank};

    #[test]
    fn a_path_names_a_known_host() {
        let known = vec!["gpu-node-17".to_owned(), "gpu-node-18.cluster".to_owned()];
        assert_eq!(
            host_in_path("run/gpu-node-17/dmesg.txt", &known),
            Some("gpu-node-17")
        );
        assert_eq!(
            host_in_path("run/gpu-node-18.kern.log", &known),
            Some("gpu-node-18.cluster")
        );
        assert_eq!(host_in_path("run/gpu-node-19/dmesg.txt", &known), None);
        assert_eq!(host_in_path("gpu-node-17/gpu-node-18/x", &known), None);
    }

    #[test]
    fn one_host_or_none() {
        let pairs = vec![
            (1, "a".to_owned()),
            (2, "b".to_owned()),
            (2, "c".to_owned()),
        ];
        assert_eq!(host_of_rank(&pairs, 1), Some("a"));
        assert_eq!(host_of_rank(&pairs, 2), None);
        assert_eq!(host_of_rank(&pairs, 3), None);
    }
}
