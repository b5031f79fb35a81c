//! The versions an incident's inputs report, compared.
//!
//! Internal rules (`rules/env/`) pick version facts out of any text input:
//! the NVIDIA driver's version and the highest CUDA version it supports
//! (nvidia-smi, `collect_env`, the kernel log, NCCL's `cudaDriverVersion`),
//! the CUDA version PyTorch and NCCL were built for, the toolkit nvcc
//! reports. Here the builds are compared with the driver, each mismatch
//! becoming one sentence (`versions: PyTorch 2.6.0 is built for CUDA 12.8;
//! the NVIDIA driver 470.82.01 supports CUDA up to 11.4 (an older major
//! version)`) that rules of the `environment-facts` kind read, so what a
//! mismatch means stays in `rules/`. The findings point at the line that
//! stated the build's version.
//!
//! When no report states the driver's highest CUDA version, it is looked
//! up from the driver's version in `knowledge/cuda-drivers.toml`.

use crate::findings::FindingTable;
use crate::written::{scan_written, Grounding};
use coroner_ingest::Input;
use coroner_model::{Evidence, Finding, InputKind};
use coroner_rules::RuleSet;
use serde::Deserialize;
use std::cmp::Ordering;
use std::sync::OnceLock;

/// `knowledge/cuda-drivers.toml`.
const CUDA_DRIVERS: &str = include_str!("../knowledge/cuda-drivers.toml");

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct CudaDrivers {
    cuda: Vec<CudaDriver>,
    minor_compatibility: Vec<MinorCompatibility>,
}

/// The oldest driver on which builds of a CUDA major version's later
/// minor releases run.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct MinorCompatibility {
    major: u32,
    driver: String,
}

/// The oldest driver a CUDA release needs.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct CudaDriver {
    version: String,
    driver: String,
}

fn knowledge() -> Option<&'static CudaDrivers> {
    static PARSED: OnceLock<Option<CudaDrivers>> = OnceLock::new();
    PARSED
        .get_or_init(|| toml::from_str::<CudaDrivers>(CUDA_DRIVERS).ok())
        .as_ref()
}

fn cuda_drivers() -> &'static [CudaDriver] {
    knowledge().map(|k| &k.cuda[..]).unwrap_or_default()
}

/// Whether `driver` is older than the driver minor version compatibility
/// needs in CUDA major version `major`.
fn below_minor_compatibility(major: u32, driver: &str) -> bool {
    let Some(driver) = numbers(driver) else {
        return false;
    };
    knowledge()
        .into_iter()
        .flat_map(|k| &k.minor_compatibility)
        .filter(|m| m.major == major)
        .filter_map(|m| numbers(&m.driver))
        .any(|oldest| driver < oldest)
}

/// The table as (CUDA release, oldest driver), parsed once.
fn driver_table() -> &'static [(Cuda, [u32; 3])] {
    static PARSED: OnceLock<Vec<(Cuda, [u32; 3])>> = OnceLock::new();
    PARSED.get_or_init(|| {
        cuda_drivers()
            .iter()
            .filter_map(|c| Some((Cuda::parse(&c.version)?, numbers(&c.driver)?)))
            .collect()
    })
}

/// A driver version as numbers, missing parts 0: `580.159.04` →
/// [580, 159, 4], `570.26` → [570, 26, 0]. Compared as arrays.
fn numbers(version: &str) -> Option<[u32; 3]> {
    let mut out = [0; 3];
    let mut parts = version.split('.');
    for slot in &mut out {
        if let Some(part) = parts.next() {
            *slot = part.parse().ok()?;
        }
    }
    parts.next().is_none().then_some(out)
}

/// A CUDA version, major and minor.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
struct Cuda(u32, u32);

impl Cuda {
    /// `13.0`.
    fn parse(text: &str) -> Option<Cuda> {
        let (major, minor) = text.split_once('.')?;
        Some(Cuda(major.parse().ok()?, minor.parse().ok()?))
    }

    /// A wheel tag's digits: `130` → 13.0, `118` → 11.8.
    fn from_tag(tag: &str) -> Option<Cuda> {
        let n: u32 = tag.parse().ok()?;
        (n >= 10).then_some(Cuda(n / 10, n % 10))
    }

    /// `cudaDriverGetVersion`'s number: 1000 × major + 10 × minor.
    fn from_number(number: &str) -> Option<Cuda> {
        let n: u32 = number.parse().ok()?;
        (n >= 1000).then_some(Cuda(n / 1000, n % 1000 / 10))
    }

    /// The newest CUDA release whose oldest driver `driver` meets.
    fn supported_by(driver: &str) -> Option<Cuda> {
        let driver = numbers(driver)?;
        driver_table()
            .iter()
            .filter(|(_, oldest)| driver >= *oldest)
            .map(|(cuda, _)| *cuda)
            .max()
    }
}

impl std::fmt::Display for Cuda {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}.{}", self.0, self.1)
    }
}

/// Something built for a CUDA version, and where that was read.
struct Build {
    what: String,
    /// `is built for` (a framework), `is` (the toolkit).
    verb: &'static str,
    cuda: Cuda,
    input: usize,
    finding: Finding,
}

/// What the driver supports, as reported, and the lines that say so.
struct Driver {
    version: Option<String>,
    cuda: Cuda,
    evidence: Vec<Evidence>,
}

/// Compares the builds the inputs report with the driver and adds what the
/// rules make of each mismatch to `table`. `inputs` are the incident's
/// inputs, by position.
pub(crate) fn scan_versions(table: &mut FindingTable, rules: &RuleSet, inputs: &[Input]) {
    let builds = builds(table, rules);
    let mut facts: Vec<(String, &Build, Vec<Evidence>)> = Vec::new();
    if let Some(driver) = driver(table, rules) {
        for build in &builds {
            let Some(relation) = relation(build.cuda, driver.cuda, driver.version.as_deref())
            else {
                continue;
            };
            let driver_name = driver
                .version
                .as_ref()
                .map(|v| format!(" {v}"))
                .unwrap_or_default();
            let sentence = format!(
                "versions: {} {} CUDA {}; the NVIDIA driver{driver_name} supports CUDA up to {} ({relation})",
                build.what, build.verb, build.cuda, driver.cuda
            );
            facts.push((sentence, build, driver.evidence.clone()));
        }
    }
    // NCCL built for another CUDA major version than PyTorch: a separately
    // installed NCCL is loaded instead of the one PyTorch ships with.
    let torch = builds.iter().find(|b| b.what.starts_with("PyTorch"));
    let nccl = builds.iter().find(|b| b.what.starts_with("NCCL"));
    if let (Some(torch), Some(nccl)) = (torch, nccl) {
        if torch.cuda.0 != nccl.cuda.0 {
            let sentence = format!(
                "versions: {} is built for CUDA {} but {} for CUDA {} (different major versions)",
                nccl.what, nccl.cuda, torch.what, torch.cuda
            );
            facts.push((
                sentence,
                nccl,
                torch.finding.evidence.iter().take(1).cloned().collect(),
            ));
        }
    }
    for (sentence, build, more) in facts {
        scan_fact(table, rules, inputs, &sentence, build, &more);
    }
}

/// How a build's CUDA version stands to the newest one the driver
/// (version `version`, where known) supports, where the driver is too old
/// for it; `None` where it is not.
fn relation(build: Cuda, driver: Cuda, version: Option<&str>) -> Option<&'static str> {
    match build.0.cmp(&driver.0) {
        Ordering::Greater => Some("an older major version"),
        Ordering::Equal
            if build.1 > driver.1
                && version.is_some_and(|v| below_minor_compatibility(build.0, v)) =>
        {
            Some("a driver older than minor version compatibility needs")
        }
        // Minor version compatibility began with CUDA 11: a 10.x build
        // needs the driver of its own minor release.
        Ordering::Equal if build.1 > driver.1 && build.0 >= 11 => Some("the same major version"),
        Ordering::Equal if build.1 > driver.1 => {
            Some("a release before minor version compatibility")
        }
        _ => None,
    }
}

/// Scans one comparison with the rules and adds what they find to
/// `table`, placed at the line that stated `build`, with `more` evidence.
fn scan_fact(
    table: &mut FindingTable,
    rules: &RuleSet,
    inputs: &[Input],
    sentence: &str,
    build: &Build,
    more: &[Evidence],
) {
    let Some(source) = inputs.get(build.input) else {
        return;
    };
    let mut evidence: Vec<Evidence> = build.finding.evidence.iter().take(1).cloned().collect();
    evidence.extend(more.iter().cloned());
    let grounding = Grounding {
        input: build.input,
        display: source.display.clone(),
        rank: build.finding.rank,
        place: Some((build.finding.first_seen.clone(), evidence)),
    };
    scan_written(
        table,
        rules,
        InputKind::EnvironmentFacts,
        &grounding,
        sentence,
    );
}

fn driver(table: &FindingTable, rules: &RuleSet) -> Option<Driver> {
    let version = table
        .findings_of("env-driver-version", rules)
        .into_iter()
        .find_map(|(_, f)| Some((f.captures.get("driver")?.clone(), f)));
    let stated = table
        .findings_of("env-driver-cuda", rules)
        .into_iter()
        .find_map(|(_, f)| {
            let c = &f.captures;
            let cuda = c
                .get("driver_cuda")
                .and_then(|v| Cuda::parse(v))
                .or_else(|| {
                    c.get("driver_cuda_number")
                        .and_then(|n| Cuda::from_number(n))
                })?;
            Some((cuda, f))
        });
    let mut evidence = Vec::new();
    let cuda = match stated {
        Some((cuda, f)) => {
            evidence.extend(f.evidence.into_iter().take(1));
            cuda
        }
        None => version.as_ref().and_then(|(v, _)| Cuda::supported_by(v))?,
    };
    let version = version.map(|(v, f)| {
        if !evidence.iter().any(|e| {
            f.evidence
                .first()
                .is_some_and(|d| d.line == e.line && d.input == e.input)
        }) {
            evidence.extend(f.evidence.into_iter().take(1));
        }
        v
    });
    Some(Driver {
        version,
        cuda,
        evidence,
    })
}

fn builds(table: &FindingTable, rules: &RuleSet) -> Vec<Build> {
    let mut out = Vec::new();
    for (input, finding) in table.findings_of("env-torch-cuda", rules) {
        let c = &finding.captures;
        let cuda = c
            .get("cuda")
            .and_then(|v| Cuda::parse(v))
            .or_else(|| c.get("tag").and_then(|t| Cuda::from_tag(t)));
        let what = match c.get("version") {
            Some(v) => format!("PyTorch {v}"),
            None => "PyTorch".to_owned(),
        };
        if let Some(cuda) = cuda {
            out.push(Build {
                what,
                verb: "is built for",
                cuda,
                input,
                finding,
            });
        }
    }
    for (input, finding) in table.findings_of("env-nccl-cuda", rules) {
        let c = &finding.captures;
        if let (Some(v), Some(cuda)) =
            (c.get("version"), c.get("cuda").and_then(|v| Cuda::parse(v)))
        {
            out.push(Build {
                what: format!("NCCL {v}"),
                verb: "is built for",
                cuda,
                input,
                finding,
            });
        }
    }
    for (input, finding) in table.findings_of("env-toolkit-cuda", rules) {
        if let Some(cuda) = finding
            .captures
            .get("toolkit_cuda")
            .and_then(|v| Cuda::parse(v))
        {
            out.push(Build {
                what: "the CUDA toolkit (nvcc)".to_owned(),
                verb: "is",
                cuda,
                input,
                finding,
            });
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_driver_table_parses_and_grows() {
        let table = cuda_drivers();
        assert!(table.len() > 20);
        let minimums = knowledge().map(|k| k.minor_compatibility.len());
        assert_eq!(minimums, Some(3));
        for pair in table.windows(2) {
            let (a, b) = (&pair[0], &pair[1]);
            assert!(
                Cuda::parse(&a.version) < Cuda::parse(&b.version),
                "{a:?} {b:?}"
            );
            let driver = |c: &CudaDriver| numbers(&c.driver).unwrap_or_else(|| panic!("{c:?}"));
            let (da, db) = (driver(a), driver(b));
            assert!(da < db, "{a:?} {b:?}");
        }
    }

    #[test]
    fn a_driver_supports_the_newest_cuda_whose_minimum_it_meets() {
        assert_eq!(Cuda::supported_by("580.159.04"), Some(Cuda(13, 0)));
        assert_eq!(Cuda::supported_by("470.82.01"), Some(Cuda(11, 4)));
        assert_eq!(Cuda::supported_by("535.54.03"), Some(Cuda(12, 2)));
        assert_eq!(Cuda::supported_by("535.54.02"), Some(Cuda(12, 1)));
        assert_eq!(Cuda::supported_by("410.104"), Some(Cuda(10, 0)));
        assert_eq!(Cuda::supported_by("390.12"), Some(Cuda(9, 0)));
        assert_eq!(Cuda::supported_by("340.29"), None);
    }

    #[test]
    fn only_releases_from_cuda_11_run_on_an_older_minor_driver() {
        for version in [None, Some("535.54.03")] {
            assert_eq!(
                relation(Cuda(12, 8), Cuda(12, 2), version),
                Some("the same major version")
            );
        }
        assert_eq!(
            relation(Cuda(10, 1), Cuda(10, 0), Some("410.104")),
            Some("a release before minor version compatibility")
        );
        assert_eq!(
            relation(Cuda(13, 0), Cuda(12, 9), None),
            Some("an older major version")
        );
        assert_eq!(relation(Cuda(10, 0), Cuda(10, 1), None), None);
        assert_eq!(relation(Cuda(11, 8), Cuda(12, 0), None), None);
    }

    #[test]
    fn minor_version_compatibility_needs_the_major_versions_oldest_driver() {
        let too_old = Some("a driver older than minor version compatibility needs");
        assert_eq!(Cuda::supported_by("450.57"), Some(Cuda(11, 0)));
        assert_eq!(relation(Cuda(11, 3), Cuda(11, 0), Some("450.57")), too_old);
        assert_eq!(
            relation(Cuda(11, 3), Cuda(11, 0), Some("450.80.02")),
            Some("the same major version")
        );
        assert_eq!(relation(Cuda(11, 0), Cuda(11, 0), Some("450.57")), None);
        // nvidia-smi of a 450.51 driver says `CUDA Version: 11.0`.
        assert_eq!(
            relation(Cuda(11, 1), Cuda(11, 0), Some("450.51.06")),
            too_old
        );
        assert_eq!(
            relation(Cuda(12, 4), Cuda(12, 0), Some("525.60.13")),
            Some("the same major version")
        );
    }

    #[test]
    fn version_forms() {
        assert_eq!(Cuda::from_tag("130"), Some(Cuda(13, 0)));
        assert_eq!(Cuda::from_tag("118"), Some(Cuda(11, 8)));
        assert_eq!(Cuda::from_number("11040"), Some(Cuda(11, 4)));
        assert_eq!(Cuda::from_number("13000"), Some(Cuda(13, 0)));
    }
}
