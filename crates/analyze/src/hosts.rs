//! Giving findings the node they happened on, from the rank's other
//! findings.
//!
//! A line names its host when its header does (NCCL's `host:pid:tid`, a
//! syslog host field) or a rule captures one (Slurm's `srun: error:
//! node17: task 3: ...`). A Python exception on rank 3 names none; when
//! rank 3's other findings all name one host, it happened there too.

use coroner_model::Finding;

/// Gives every finding with a rank and no host the one host the findings
/// of that rank name, when they name exactly one.
pub(crate) fn attribute_hosts(findings: &mut [Finding]) {
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
    use super::host_of_rank;

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
