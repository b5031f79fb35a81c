//! Tying findings about a GPU to the rank that used it.
//!
//! A kernel-log line names a GPU by its PCI address (`NVRM: Xid
//! (PCI:0000:00:07): 31`), not by rank. NCCL's communicator lines say which
//! bus id each rank's device has (`rank 1 nranks 2 cudaDev 1 busId 70`, the
//! finding of a rule that captures `busid`). Matching the two gives the
//! Xid its rank, so that it joins that rank's other findings.

use crate::ranks::attribute_ranks_by;
use coroner_model::Finding;

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

/// Gives every finding without a rank that names a GPU's PCI address (a
/// `gpu` or `pci` capture) the rank whose NCCL device sits at that address,
/// when exactly one rank does: on the finding's node when both name their
/// node (every node has a GPU at each address), else at that address.
pub(crate) fn attribute_ranks(findings: &mut [Finding]) {
    let nccl = |f: &Finding| from_nccl(f.captures.get("busid")?);
    let kernel = |f: &Finding| {
        ["gpu", "pci"]
            .iter()
            .find_map(|k| f.captures.get(*k).and_then(|a| from_pci(a)))
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
