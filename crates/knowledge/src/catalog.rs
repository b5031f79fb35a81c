//! NVIDIA's Xid catalog (`knowledge/xid-catalog.tsv`): every code with its
//! mnemonic and resolution buckets, and what each bucket means for a job.

use crate::tables::TableError;
use coroner_model::ActionKind;

const CATALOG: &str = include_str!("../knowledge/xid-catalog.tsv");

/// One row of the catalog.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct CatalogRow {
    pub code: i64,
    pub mnemonic: String,
    pub immediate: Vec<String>,
    pub investigatory: Vec<String>,
    pub unused: bool,
    pub description: String,
}

/// The built-in catalog.
pub(crate) fn builtin() -> Result<Vec<CatalogRow>, TableError> {
    parse(CATALOG)
}

fn parse(text: &str) -> Result<Vec<CatalogRow>, TableError> {
    let bad = |n: usize, why: &str| TableError(format!("knowledge/xid-catalog.tsv:{n}: {why}"));
    let mut rows = Vec::new();
    let mut header = true;
    for (n, line) in text.lines().enumerate().map(|(i, l)| (i + 1, l)) {
        if line.starts_with('#') || line.trim().is_empty() {
            continue;
        }
        if std::mem::take(&mut header) {
            continue;
        }
        let cols: Vec<&str> = line.split('\t').collect();
        let [code, mnemonic, immediate, investigatory, unused, description] = cols[..] else {
            return Err(bad(n, "expected 6 tab-separated columns"));
        };
        let buckets = |s: &str| -> Vec<String> {
            s.split(',')
                .map(str::trim)
                .filter(|b| !b.is_empty())
                .map(str::to_owned)
                .collect()
        };
        rows.push(CatalogRow {
            code: code
                .parse()
                .map_err(|_| bad(n, "the code is not a number"))?,
            mnemonic: mnemonic.to_owned(),
            immediate: buckets(immediate),
            investigatory: buckets(investigatory),
            unused: match unused {
                "yes" => true,
                "no" => false,
                _ => return Err(bad(n, "`unused` is neither yes nor no")),
            },
            description: description.to_owned(),
        });
    }
    Ok(rows)
}

/// What an immediate bucket asks of the job and the node.
pub fn bucket_action(bucket: &str) -> ActionKind {
    match bucket {
        "RESTART_APP" => ActionKind::RestartJob,
        "RESET_GPU" | "WORKFLOW_XID_48" => ActionKind::ResetGpu,
        "RESTART_BM" | "RESTART_VM" | "CHECK_UVM" => ActionKind::RebootNode,
        "UPDATE_SWFW" => ActionKind::FixEnvironment,
        "IGNORE" | "WORKFLOW_XID_45" => ActionKind::None,
        // CONTACT_SUPPORT, CHECK_MECHANICALS, the NVLink workflows, XID_154
        // and codes the catalog leaves without a bucket: out of service
        // until someone has looked.
        _ => ActionKind::DrainNode,
    }
}

/// One line on what a bucket means.
pub fn bucket_meaning(bucket: &str) -> &'static str {
    match bucket {
        "RESTART_APP" => "restart the application; the fault was confined to it",
        "RESET_GPU" => "reset the GPU before it takes work again",
        "RESTART_BM" => "reboot the node",
        "RESTART_VM" => "restart the virtual machine",
        "WORKFLOW_XID_48" => {
            "follow NVIDIA's double-bit ECC procedure: reset the GPU so that the bad row is remapped, and check the remapping counters"
        }
        "WORKFLOW_XID_45" => {
            "usually a side effect of another Xid: act on that one; alone, restart Fabric Manager"
        }
        "WORKFLOW_NVLINK_ERR" => "follow NVIDIA's NVLink error procedure (link state, counters, reset)",
        "WORKFLOW_NVLINK5_ERR" => {
            "decode the unit, Fatal/Nonfatal word and status words of the line; Fatal needs a GPU reset"
        }
        "XID_154" => "the action is the recovery action the line names",
        "IGNORE" => "no action: informational, or a side effect of another error",
        "CONTACT_SUPPORT" => "contact NVIDIA support; a code marked unused should not appear at all",
        "UPDATE_SWFW" => "update the driver, firmware or vGPU software",
        "CHECK_MECHANICALS" => "check the physical installation, such as the auxiliary power cables",
        "CHECK_UVM" => "check the unified-memory layer; reboot the node",
        "CHECK_APP/CUDA" => "look at the application's or library's CUDA code",
        "INVESTIGATE_SW" => "look at the driver and software stack",
        "INVESTIGATE_SW_USER" => "look at the software stack and what users ran",
        "INVESTIGATE_LINK_SI" => "check the link's signal integrity",
        "WORKFLOW_XID_13" => "follow NVIDIA's Xid 13 procedure (debug the application's kernel)",
        "WORKFLOW_XID_31" => "follow NVIDIA's Xid 31 procedure (debug the faulting access)",
        "XID_137_FLOW" => "follow NVIDIA's NVLink privilege-error procedure",
        "RESTART_FM" => "restart Fabric Manager",
        "SYMPATHETIC_REPORT_SOLO" => "a side effect of another error: report it only when it appears alone",
        _ => "see NVIDIA's Xid catalog",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_catalog_reads() {
        let rows = builtin().unwrap_or_default();
        assert!(rows.len() >= 170, "{}", rows.len());
        let r79 = rows
            .iter()
            .find(|r| r.code == 79)
            .map(|r| r.immediate.clone());
        assert_eq!(r79, Some(vec!["RESTART_BM".to_owned()]));
        assert_eq!(bucket_action("RESTART_BM"), ActionKind::RebootNode);
        let mut codes: Vec<i64> = rows.iter().map(|r| r.code).collect();
        codes.dedup();
        assert_eq!(codes.len(), rows.len(), "each code once, in order");
    }

    #[test]
    fn every_bucket_has_a_meaning() {
        for row in builtin().unwrap_or_default() {
            for b in row.immediate.iter().chain(&row.investigatory) {
                assert_ne!(bucket_meaning(b), "see NVIDIA's Xid catalog", "{b}");
            }
        }
    }

    #[test]
    fn bad_rows_are_errors() {
        assert!(parse("code\tmnemonic\n1\tX\n").is_err());
        assert!(parse("h\n1\tX\t\t\tmaybe\td\n").is_err());
    }
}
