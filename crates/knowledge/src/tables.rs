//! Loading the embedded tables into [`Entry`]s.

use crate::catalog::{bucket_action, bucket_meaning, CatalogRow};
use crate::entry::{Entry, EntryKind};
use coroner_model::{ActionKind, Category, Severity};
use serde::Deserialize;
use std::collections::BTreeMap;

const CUDA_TABLE: &str = include_str!("../knowledge/cuda_error_table.tsv");
const CUDA_NOTES: &str = include_str!("../knowledge/cuda-errors.toml");
const XIDS: &str = include_str!("../knowledge/xid.toml");
const NCCL: &str = include_str!("../knowledge/nccl-results.toml");
const SIGNALS: &str = include_str!("../knowledge/signals.toml");
const CUBLAS: &str = include_str!("../knowledge/cublas-status.toml");
const CUDNN: &str = include_str!("../knowledge/cudnn-status.toml");

/// Every table, loaded.
#[derive(Debug, Clone)]
pub struct Knowledge {
    /// All entries, CUDA codes first (by number), then Xids, NCCL, cuBLAS
    /// and cuDNN.
    pub entries: Vec<Entry>,
}

#[derive(Deserialize)]
struct CudaNotes {
    code: Vec<CudaNote>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct CudaNote {
    code: i64,
    category: Category,
    severity: Severity,
    sticky: bool,
    #[serde(default)]
    distinctive: bool,
    summary: String,
    #[serde(default)]
    causes: Vec<String>,
    #[serde(default)]
    fixes: Vec<String>,
    source: String,
}

#[derive(Deserialize)]
struct Xids {
    xid: Vec<XidRow>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct XidRow {
    code: i64,
    name: String,
    category: Category,
    severity: Severity,
    causes: Vec<String>,
    meaning: String,
    action: String,
    source: String,
}

#[derive(Deserialize)]
struct Statuses {
    #[serde(alias = "result")]
    status: Vec<StatusRow>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct StatusRow {
    code: i64,
    name: String,
    #[serde(default)]
    legacy_code: Option<i64>,
    #[serde(default)]
    legacy_name: Option<String>,
    #[serde(default)]
    message: Option<String>,
    category: Category,
    severity: Severity,
    meaning: String,
    #[serde(default)]
    causes: Vec<String>,
    #[serde(default)]
    fixes: Vec<String>,
    source: String,
}

/// A table that does not parse, with its name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TableError(pub String);

impl std::fmt::Display for TableError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for TableError {}

impl Knowledge {
    /// The tables embedded in the binary.
    pub fn builtin() -> Result<Knowledge, TableError> {
        let mut entries = cuda_entries(CUDA_TABLE, CUDA_NOTES)?;
        entries.extend(xid_entries(XIDS)?);
        entries.extend(status_entries(
            NCCL,
            EntryKind::NcclResult,
            "nccl-results.toml",
        )?);
        entries.extend(status_entries(
            CUBLAS,
            EntryKind::CublasStatus,
            "cublas-status.toml",
        )?);
        entries.extend(status_entries(
            CUDNN,
            EntryKind::CudnnStatus,
            "cudnn-status.toml",
        )?);
        entries.extend(status_entries(SIGNALS, EntryKind::Signal, "signals.toml")?);
        Ok(Knowledge { entries })
    }

    /// Entries of one kind.
    pub fn of_kind(&self, kind: EntryKind) -> impl Iterator<Item = &Entry> {
        self.entries.iter().filter(move |e| e.kind == kind)
    }
}

/// Joins the driver's table (names and messages) with the notes per code.
pub(crate) fn cuda_entries(table: &str, notes: &str) -> Result<Vec<Entry>, TableError> {
    let notes: CudaNotes = toml::from_str(notes)
        .map_err(|e| TableError(format!("knowledge/cuda-errors.toml: {}", e.message())))?;
    let notes: BTreeMap<i64, CudaNote> = notes.code.into_iter().map(|n| (n.code, n)).collect();
    let mut rows: BTreeMap<i64, (Option<String>, Option<String>, String)> = BTreeMap::new();
    for (n, line) in table.lines().enumerate() {
        if line.starts_with('#') || line.trim().is_empty() {
            continue;
        }
        let fields: Vec<&str> = line.split('\t').collect();
        let (kind, code, name, message) = match fields.as_slice() {
            [k, c, name, message] => (*k, *c, *name, *message),
            _ => {
                return Err(TableError(format!(
                    "knowledge/cuda_error_table.tsv:{}: expected 4 tab-separated fields",
                    n + 1
                )))
            }
        };
        let code: i64 = code.parse().map_err(|_| {
            TableError(format!(
                "knowledge/cuda_error_table.tsv:{}: bad code `{code}`",
                n + 1
            ))
        })?;
        let row = rows
            .entry(code)
            .or_insert_with(|| (None, None, message.to_owned()));
        match kind {
            "runtime" => row.0 = Some(name.to_owned()),
            "driver" => row.1 = Some(name.to_owned()),
            other => {
                return Err(TableError(format!(
                    "knowledge/cuda_error_table.tsv:{}: unknown kind `{other}`",
                    n + 1
                )))
            }
        }
    }
    rows.into_iter()
        .map(|(code, (runtime, driver, message))| {
            let note = notes.get(&code).ok_or_else(|| {
                TableError(format!(
                    "knowledge/cuda-errors.toml: no entry for CUDA code {code}"
                ))
            })?;
            Ok(Entry {
                kind: EntryKind::CudaError,
                code: Some(code),
                names: runtime.iter().chain(driver.iter()).cloned().collect(),
                runtime_name: runtime,
                driver_name: driver,
                legacy_code: None,
                message: Some(message),
                category: note.category,
                severity: note.severity,
                sticky: Some(note.sticky),
                summary: note.summary.clone(),
                causes: note.causes.clone(),
                fixes: note.fixes.clone(),
                source: Some(note.source.clone()),
                immediate: Vec::new(),
                investigatory: Vec::new(),
                unused: false,
                distinctive: note.distinctive,
                action: note.category.default_action(),
            })
        })
        .collect()
}

fn xid_entries(text: &str) -> Result<Vec<Entry>, TableError> {
    let xids: Xids = toml::from_str(text)
        .map_err(|e| TableError(format!("knowledge/xid.toml: {}", e.message())))?;
    let catalog = crate::catalog::builtin()?;
    let mut entries = Vec::new();
    for row in &catalog {
        let entry = match xids.xid.iter().find(|x| x.code == row.code) {
            Some(x) => Entry {
                kind: EntryKind::Xid,
                code: Some(x.code),
                names: xid_names(row),
                runtime_name: None,
                driver_name: None,
                legacy_code: None,
                message: Some(x.name.clone()),
                category: x.category,
                severity: x.severity,
                sticky: None,
                summary: x.meaning.clone(),
                causes: x.causes.clone(),
                fixes: vec![x.action.clone()],
                source: Some(x.source.clone()),
                immediate: row.immediate.clone(),
                investigatory: row.investigatory.clone(),
                unused: row.unused,
                distinctive: false,
                action: xid_action(x.category, row),
            },
            None => catalog_entry(row),
        };
        entries.push(entry);
    }
    if let Some(x) = xids
        .xid
        .iter()
        .find(|x| !catalog.iter().any(|r| r.code == x.code))
    {
        return Err(TableError(format!(
            "knowledge/xid.toml: Xid {} is not in knowledge/xid-catalog.tsv",
            x.code
        )));
    }
    Ok(entries)
}

/// `Xid N` and the driver's mnemonics.
fn xid_names(row: &CatalogRow) -> Vec<String> {
    let mut names = vec![format!("Xid {}", row.code)];
    names.extend(
        row.mnemonic
            .split(',')
            .map(str::trim)
            .filter(|m| !m.is_empty())
            .map(str::to_owned),
    );
    names
}

/// What an Xid asks of the job and the node: the catalog's immediate
/// bucket for a fault of the GPU, the node or its links; the category's
/// step for a fault the application caused (Xid 13, 31: fix the code).
fn xid_action(category: Category, row: &CatalogRow) -> ActionKind {
    match category {
        Category::XidHardware | Category::EccError | Category::NvlinkError => row
            .immediate
            .first()
            .map_or(ActionKind::DrainNode, |b| bucket_action(b)),
        other => other.default_action(),
    }
}

/// An Xid only the catalog describes: a GPU fault whose severity follows
/// its immediate bucket.
fn catalog_entry(row: &CatalogRow) -> Entry {
    let bucket = row.immediate.first().map(String::as_str).unwrap_or("");
    let severity = match bucket {
        _ if row.unused => Severity::Error,
        "IGNORE" | "WORKFLOW_XID_45" => Severity::Info,
        "RESTART_APP" | "UPDATE_SWFW" => Severity::Error,
        "" => Severity::Warning,
        _ => Severity::Critical,
    };
    let mut summary = row.description.clone();
    if !summary.ends_with('.') {
        summary.push('.');
    }
    if row.unused {
        summary.push_str(" NVIDIA's catalog marks this code unused on current GPUs: on a current GPU it should not appear.");
    }
    if !row.mnemonic.is_empty() {
        summary.push_str(&format!(" Driver mnemonic: {}.", row.mnemonic));
    }
    let mut fixes: Vec<String> = row
        .immediate
        .iter()
        .map(|b| format!("Now ({b}): {}.", bucket_meaning(b)))
        .collect();
    fixes.extend(
        row.investigatory
            .iter()
            .map(|b| format!("Then ({b}): {}.", bucket_meaning(b))),
    );
    if fixes.is_empty() {
        fixes.push("The catalog gives no resolution yet: collect nvidia-bug-report.sh and contact NVIDIA support if it recurs.".to_owned());
    }
    Entry {
        kind: EntryKind::Xid,
        code: Some(row.code),
        names: xid_names(row),
        runtime_name: None,
        driver_name: None,
        legacy_code: None,
        message: Some(row.description.clone()),
        category: Category::XidHardware,
        severity,
        sticky: None,
        summary,
        causes: Vec::new(),
        fixes,
        source: Some(
            "https://docs.nvidia.com/deploy/xid-errors/analyzing-xid-catalog.html".to_owned(),
        ),
        immediate: row.immediate.clone(),
        investigatory: row.investigatory.clone(),
        unused: row.unused,
        distinctive: false,
        action: xid_action(Category::XidHardware, row),
    }
}

fn status_entries(text: &str, kind: EntryKind, file: &str) -> Result<Vec<Entry>, TableError> {
    let rows: Statuses = toml::from_str(text)
        .map_err(|e| TableError(format!("knowledge/{file}: {}", e.message())))?;
    Ok(rows
        .status
        .into_iter()
        .map(|s| Entry {
            kind,
            code: Some(s.code),
            names: std::iter::once(s.name)
                .chain(s.legacy_name.filter(|n| !n.is_empty()))
                .collect(),
            runtime_name: None,
            driver_name: None,
            legacy_code: s.legacy_code,
            message: s.message,
            category: s.category,
            severity: s.severity,
            sticky: None,
            summary: s.meaning,
            causes: s.causes,
            fixes: s.fixes,
            source: Some(s.source),
            immediate: Vec::new(),
            investigatory: Vec::new(),
            unused: false,
            distinctive: false,
            action: s.category.default_action(),
        })
        .collect())
}
