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

/// Gives every finding without a rank that names a GPU's PCI address (a
/// `gpu` or `pci` capture) the rank whose NCCL device sits at that address,
/// when exactly one rank does.
pub(crate) fn attribute_ranks(findings: &mut [Finding]) {
    attribute_ranks_by(
        findings,
        |f| from_nccl(f.captures.get("busid")?),
        |f| {
            ["gpu", "pci"]
                .iter()
                .find_map(|k| f.captures.get(*k).and_then(|a| from_pci(a)))
        },
    );
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
    }
}
