//! Tying findings about a GPU to the rank that used it.
//!
//! A kernel-log line names a GPU by its PCI address (`NVRM: Xid
//! (PCI:0000:00:07): 31`), not by rank. NCCL's communicator lines say which
//! bus id each rank's device has (`rank 1 nranks 2 cudaDev 1 busId 70`, the
//! finding of a rule that captures `busid`). Matching the two gives the
//! Xid its rank, so that it joins that rank's other findings.

use crate::ranks::attribute_ranks_by;
use coroner_model::Finding;
use std::collections::{BTreeMap, BTreeSet};

/// A PCI address as (bus, device), the part both forms share.
type Slot = (u32, u32);

/// NCCL's bus id: hex digits `BBDDF` (bus, device, function), leading zeros
/// dropped (`70` is 00:07.0, `1b000` is 1b:00.0).
fn from_nccl(busid: &str) -> Option<Slot> {
    let value = u32::from_str_radix(busid, 16).ok()?;
    Some(((value >> 12) & 0xff, (value >> 4) & 0xff))
}

/// A PCI address as the kernel prints it: `PCI:0000:00:07`, `0000:1b:00.0`,
/// `00000000:1B:00.0`.
fn from_pci(address: &str) -> Option<Slot> {
    let address = address.trim_start_matches("PCI:");
    let mut parts = address.split(':');
    let (domain, bus, device) = (parts.next()?, parts.next()?, parts.next()?);
    if domain.is_empty() || parts.next().is_some() {
        return None;
    }
    let device = device.split('.').next()?;
    Some((
        u32::from_str_radix(bus, 16).ok()?,
        u32::from_str_radix(device, 16).ok()?,
    ))
}

/// A PCI address as the kernel prints it, written `dddd:bb:dd` (domain,
/// bus, device: `0000:1b:00`), the form findings carry.
pub(crate) fn pci_address(address: &str) -> Option<String> {
    let (bus, device) = from_pci(address)?;
    let domain = address.trim_start_matches("PCI:").split(':').next()?;
    let domain = u32::from_str_radix(domain, 16).ok()?;
    Some(format!("{domain:04x}:{bus:02x}:{device:02x}"))
}

/// NCCL's bus id written as [`pci_address`] writes it.
pub(crate) fn nccl_address(busid: &str) -> Option<String> {
    let value = u64::from_str_radix(busid, 16).ok()?;
    let (domain, bus, device) = (value >> 20, (value >> 12) & 0xff, (value >> 4) & 0xff);
    Some(format!("{domain:04x}:{bus:02x}:{device:02x}"))
}

/// Gives the NCCL communicator lines without a rank prefix the rank they
/// print, when their communicator is the incident's largest: the one of
/// every rank, whose ranks are the global ones. Smaller communicators
/// (tensor- or pipeline-parallel groups) number their ranks from 0.
pub(crate) fn rank_from_world_communicator(findings: &mut [Finding]) {
    let size = |f: &Finding| f.captures.get("nranks")?.parse::<u32>().ok();
    let Some(world) = findings.iter().filter_map(size).max() else {
        return;
    };
    for f in findings.iter_mut().filter(|f| f.rank.is_none()) {
        if size(f) == Some(world) {
            f.rank = f.captures.get("commrank").and_then(|r| r.parse().ok());
        }
    }
}

/// Gives the findings printed by an NCCL process (the `host:pid:tid
/// [device]` header of their line) what that header tells:
///
/// - the rank of the process, when another finding of the same process
///   knows it (its communicator line `rank 1 nranks 2 cudaDev 1 ...`, a rank
///   prefix);
/// - when no finding of the incident knows any rank, all of them come from
///   one node, and each device was driven by one process, the device: the
///   ranks of a one-node job are its devices, in the order launchers give
///   them (`LOCAL_RANK` is the device index);
/// - the device as the finding's GPU, when nothing better names it.
pub(crate) fn rank_from_nccl_process(findings: &mut [Finding]) {
    let process = |f: &Finding| Some((f.host.clone(), f.printed_by?.pid));
    attribute_ranks_by(findings, process, process);
    rank_from_node_offset(findings);
    let hosts: BTreeSet<&str> = findings.iter().filter_map(|f| f.host.as_deref()).collect();
    let mut pids_of_device: BTreeMap<u32, BTreeSet<u32>> = BTreeMap::new();
    for p in findings.iter().filter_map(|f| f.printed_by) {
        pids_of_device.entry(p.device).or_default().insert(p.pid);
    }
    let devices_are_ranks = hosts.len() <= 1
        && findings.iter().all(|f| f.rank.is_none())
        && pids_of_device.values().all(|pids| pids.len() == 1);
    for f in findings.iter_mut() {
        let Some(printer) = f.printed_by else {
            continue;
        };
        if devices_are_ranks {
            f.rank = Some(printer.device);
        }
        if f.gpu.is_none() {
            f.gpu = Some(format!("GPU {}", printer.device));
        }
    }
}

/// Gives the NCCL processes of a node whose rank no line tells the rank
/// their device tells, when the node's processes of known rank all sit at
/// one offset from their devices (`rank 11 ... cudaDev 3`: offset 8) and at
/// least two of them say so: launchers number a node's ranks after the
/// nodes before it, in the order of its devices. A device that a process of
/// known rank drives, or that two processes of unknown rank print, tells
/// nothing; nor do lines whose header names no node.
fn rank_from_node_offset(findings: &mut [Finding]) {
    // Per node: the (pid, device, rank) of its processes of known rank, and
    // the pids of unknown rank that print each device.
    let mut known: BTreeMap<&str, BTreeSet<(u32, u32, u32)>> = BTreeMap::new();
    let mut unknown: BTreeMap<(&str, u32), BTreeSet<u32>> = BTreeMap::new();
    for f in findings.iter() {
        let (Some(p), Some(host)) = (f.printed_by, f.host.as_deref()) else {
            continue;
        };
        match f.rank {
            Some(rank) => {
                known
                    .entry(host)
                    .or_default()
                    .insert((p.pid, p.device, rank));
            }
            None => {
                unknown.entry((host, p.device)).or_default().insert(p.pid);
            }
        }
    }
    // Per node: its one offset, and the devices whose rank is known.
    let mut offsets: BTreeMap<String, (i64, BTreeSet<u32>)> = BTreeMap::new();
    for (host, processes) in &known {
        let pids: BTreeSet<u32> = processes.iter().map(|(pid, _, _)| *pid).collect();
        let mut of_node = processes
            .iter()
            .map(|(_, device, rank)| i64::from(*rank) - i64::from(*device));
        let Some(offset) = of_node.next() else {
            continue;
        };
        if pids.len() >= 2 && offset >= 0 && of_node.all(|o| o == offset) {
            let devices = processes.iter().map(|(_, device, _)| *device).collect();
            offsets.insert((*host).to_owned(), (offset, devices));
        }
    }
    // The devices that one process of unknown rank prints, per node.
    let mut lone: BTreeMap<String, BTreeSet<u32>> = BTreeMap::new();
    for ((host, device), pids) in unknown {
        if pids.len() == 1 {
            lone.entry(host.to_owned()).or_default().insert(device);
        }
    }
    // Lines whose header lost its host may come from any node: left alone.
    for f in findings.iter_mut().filter(|f| f.rank.is_none()) {
        let (Some(p), Some(host)) = (f.printed_by, f.host.as_deref()) else {
            continue;
        };
        let Some((offset, devices)) = offsets.get(host) else {
            continue;
        };
        let alone = lone.get(host).is_some_and(|d| d.contains(&p.device));
        if !devices.contains(&p.device) && alone {
            f.rank = u32::try_from(i64::from(p.device) + offset).ok();
        }
    }
}

/// The most ranks one node runs: a job naming more may span nodes.
const ONE_NODE_RANKS: u32 = 8;

/// Gives a finding without a rank that names its GPU by index (a `gpu`
/// capture of digits: PyTorch's `GPU 1 has a total capacity of ...`) the
/// rank of that index, when the incident is a job of several processes on
/// one node: other findings name ranks (so it is not one process spread
/// over GPUs, as `device_map="auto"` does), at most [`ONE_NODE_RANKS`] of
/// them, the index among them, and at most one host. Launchers give a
/// node's ranks its devices in order (`LOCAL_RANK` is the device index).
/// GPU 0 is left alone: a process that sees one GPU (a per-rank
/// `CUDA_VISIBLE_DEVICES`) calls it GPU 0 whatever its rank.
pub(crate) fn rank_from_device_index(findings: &mut [Finding]) {
    let hosts: BTreeSet<&str> = findings.iter().filter_map(|f| f.host.as_deref()).collect();
    if hosts.len() > 1 {
        return;
    }
    let named = findings
        .iter()
        .flat_map(|f| f.rank.into_iter().chain(f.ranks.iter().copied()))
        .max();
    let Some(highest) = named.filter(|r| *r < ONE_NODE_RANKS) else {
        return;
    };
    for f in findings.iter_mut().filter(|f| f.rank.is_none()) {
        let index = f
            .captures
            .get("gpu")
            .filter(|g| !g.is_empty() && g.bytes().all(|b| b.is_ascii_digit()))
            .and_then(|g| g.parse::<u32>().ok());
        if let Some(index) = index.filter(|i| (1..=highest).contains(i)) {
            f.rank = Some(index);
        }
    }
}

/// Gives every finding without a rank that names a GPU's PCI address (a
/// `gpu` or `pci` capture) the rank whose NCCL device sits at that address,
/// when exactly one rank does: on the finding's node when both name their
/// node (every node has a GPU at each address), else at that address.
pub(crate) fn attribute_ranks(findings: &mut [Finding]) {
    let nccl = |f: &Finding| from_nccl(f.captures.get("busid")?);
    let kernel = |f: &Finding| {
        ["gpu", "pci"]
            .iter()
            .find_map(|k| f.captures.get(k).and_then(|a| from_pci(a)))
    };
    let hosts_known = findings
        .iter()
        .any(|f| f.host.is_some() && nccl(f).is_some());
    attribute_ranks_by(
        findings,
        |f| Some((f.host.clone()?, nccl(f)?)),
        |f| Some((f.host.clone()?, kernel(f)?)),
    );
    attribute_ranks_by(findings, nccl, |f| {
        if f.host.is_some() && hosts_known {
            None
        } else {
            kernel(f)
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_support::finding;
    use coroner_model::{Category, Printer, Role, Severity};

    fn printed(rule: &str, host: Option<&str>, pid: u32, device: u32) -> Finding {
        Finding {
            host: host.map(str::to_owned),
            printed_by: Some(Printer { pid, device }),
            ..finding(rule, Category::NcclConfig, Severity::Error, Role::Cause, 1)
        }
    }

    fn ranks(findings: &[Finding]) -> Vec<Option<u32>> {
        findings.iter().map(|f| f.rank).collect()
    }

    #[test]
    fn a_process_whose_rank_is_known_gives_it_to_its_other_lines() {
        let mut known = printed("comm", Some("n1"), 10, 0);
        known.rank = Some(12);
        let mut findings = vec![
            known,
            printed("warn", Some("n1"), 10, 0),
            printed("warn", Some("n2"), 10, 0),
        ];
        rank_from_nccl_process(&mut findings);
        assert_eq!(ranks(&findings), [Some(12), Some(12), None]);
        assert_eq!(findings[2].gpu.as_deref(), Some("GPU 0"));
    }

    #[test]
    fn on_one_node_with_no_rank_known_the_device_is_the_rank() {
        let mut findings = vec![
            printed("oom", Some("n1"), 10, 2),
            printed("closed", Some("n1"), 11, 3),
        ];
        rank_from_nccl_process(&mut findings);
        assert_eq!(ranks(&findings), [Some(2), Some(3)]);
    }

    #[test]
    fn devices_are_not_ranks_across_nodes_or_when_processes_share_a_device_index() {
        let mut two_nodes = vec![
            printed("oom", Some("n1"), 10, 2),
            printed("closed", Some("n2"), 11, 3),
        ];
        rank_from_nccl_process(&mut two_nodes);
        assert_eq!(ranks(&two_nodes), [None, None]);
        // CUDA_VISIBLE_DEVICES set per process: every process sees device 0.
        let mut one_gpu_each = vec![
            printed("oom", Some("n1"), 10, 0),
            printed("closed", Some("n1"), 11, 0),
        ];
        rank_from_nccl_process(&mut one_gpu_each);
        assert_eq!(ranks(&one_gpu_each), [None, None]);
        assert_eq!(one_gpu_each[0].gpu.as_deref(), Some("GPU 0"));
    }

    #[test]
    fn a_node_whose_ranks_follow_its_devices_gives_a_process_its_rank() {
        let comm = |host: &str, pid: u32, device: u32, rank: u32| {
            let mut f = printed("comm", Some(host), pid, device);
            f.rank = Some(rank);
            f
        };
        let mut findings = vec![
            comm("n2", 10, 0, 8),
            comm("n2", 13, 3, 11),
            printed("warn", Some("n2"), 12, 2),
            printed("warn", Some("n1"), 12, 2),
        ];
        rank_from_nccl_process(&mut findings);
        assert_eq!(ranks(&findings)[2..], [Some(10), None]);
        // One process of known rank, or offsets that disagree, tell nothing.
        for mut node in [
            vec![comm("n2", 10, 0, 8), printed("warn", Some("n2"), 12, 2)],
            vec![
                comm("n2", 10, 0, 8),
                comm("n2", 13, 3, 3),
                printed("warn", Some("n2"), 12, 2),
            ],
            vec![
                comm("n2", 10, 0, 8),
                comm("n2", 13, 2, 10),
                printed("warn", Some("n2"), 12, 2),
            ],
        ] {
            rank_from_nccl_process(&mut node);
            assert_eq!(node.last().and_then(|f| f.rank), None);
        }
        let unnamed = |pid: u32, device: u32, rank: Option<u32>| {
            let mut f = printed("comm", None, pid, device);
            f.rank = rank;
            f
        };
        let mut no_host = vec![
            unnamed(10, 0, Some(8)),
            unnamed(13, 3, Some(11)),
            unnamed(12, 2, None),
        ];
        rank_from_nccl_process(&mut no_host);
        assert_eq!(no_host[2].rank, None);
    }

    fn oom_on(gpu: &str, rank: Option<u32>, host: Option<&str>) -> Finding {
        let mut f = finding("oom", Category::GpuOom, Severity::Error, Role::Cause, 1);
        f.captures.insert("gpu".to_owned(), gpu.to_owned());
        f.rank = rank;
        f.host = host.map(str::to_owned);
        f
    }

    #[test]
    fn on_one_node_of_several_ranks_a_gpu_index_is_its_rank() {
        let mut job = vec![oom_on("1", None, None), oom_on("", Some(3), None)];
        rank_from_device_index(&mut job);
        assert_eq!(ranks(&job), [Some(1), Some(3)]);
        // One process (no rank named anywhere): GPU 1 may be a device_map shard.
        let mut alone = vec![oom_on("1", None, None)];
        rank_from_device_index(&mut alone);
        assert_eq!(ranks(&alone), [None]);
        // GPU 0, an index past the ranks named, two hosts, many ranks, an address.
        for mut incident in [
            vec![oom_on("0", None, None), oom_on("", Some(3), None)],
            vec![oom_on("5", None, None), oom_on("", Some(3), None)],
            vec![oom_on("1", None, Some("a")), oom_on("", Some(3), Some("b"))],
            vec![oom_on("1", None, None), oom_on("", Some(12), None)],
            vec![oom_on("0000:1b:00", None, None), oom_on("", Some(3), None)],
        ] {
            rank_from_device_index(&mut incident);
            assert_eq!(incident[0].rank, None);
        }
    }

    #[test]
    fn nccl_and_kernel_addresses_meet() {
        assert_eq!(from_nccl("70"), Some((0, 7)));
        assert_eq!(from_nccl("1b000"), Some((0x1b, 0)));
        assert_eq!(from_pci("PCI:0000:00:07"), Some((0, 7)));
        assert_eq!(from_pci("0000:1b:00.0"), Some((0x1b, 0)));
        assert_eq!(from_pci("00000000:1B:00.0"), Some((0x1b, 0)));
        assert_eq!(from_pci("GPU-5c3f"), None);
        assert_eq!(pci_address("PCI:0000:1B:00").as_deref(), Some("0000:1b:00"));
        assert_eq!(nccl_address("1b000").as_deref(), Some("0000:1b:00"));
        assert_eq!(nccl_address("70").as_deref(), Some("0000:00:07"));
        assert_eq!(
            pci_address("00000000:3b:00.0").as_deref(),
            Some("0000:3b:00")
        );
    }
}
