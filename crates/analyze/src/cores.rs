//! Core dumps: mapped, read by the host and GPU core readers, attached to
//! their input's summary, and summarised as text for the rules
//! ([`crate::core_text`]).

use crate::core_text::{gpu_core_text, host_core_text};
use crate::findings::FindingTable;
use crate::scan::scan_text;
use coroner_ingest::{Input, InputSource, Mapped, Opened};
use coroner_model::{inert, InputError, InputKind, InputSummary};
use coroner_rules::RuleSet;
use std::io::Cursor;

// A compressed core is decompressed to a temporary file: its growth is
// capped by the expansion limit as it streams (against the compressed bytes
// consumed), and the file itself never passes `CORE_EXPANSION.ceiling`.
use coroner_ingest::CORE_EXPANSION;

/// Reads the core dump `opened` and scans its summary.
pub(crate) fn analyze_core(
    input: &Input,
    opened: Opened,
    host: &coroner_hostcore::Options,
    rules: &RuleSet,
    table: &mut FindingTable,
    summary: &mut InputSummary,
) {
    let kind = opened.kind;
    let mapped = match map(input, opened) {
        Ok(m) => m,
        Err(e) => {
            summary.errors.push(InputError {
                message: format!("cannot read the core dump: {e}"),
                offset: None,
            });
            return;
        }
    };
    let (text, warnings, error) = match kind {
        InputKind::CudaGpuCore => match coroner_gpucore::read_gpu_core(&mapped) {
            Ok(core) => {
                let core = inert_strings(core);
                let text = gpu_core_text(&core);
                let warnings = core.warnings.len();
                summary.gpu_core = Some(Box::new(core));
                (text, warnings, None)
            }
            Err(e) => (
                String::new(),
                0,
                Some(format!("not a readable GPU core dump: {e}")),
            ),
        },
        _ => match coroner_hostcore::read_host_core(&mapped, host) {
            Ok(core) => {
                let core = inert_strings(core);
                let text = host_core_text(&core);
                let warnings = core.warnings.len();
                summary.core = Some(Box::new(core));
                (text, warnings, None)
            }
            Err(e) => (
                String::new(),
                0,
                Some(format!("not a readable ELF core: {e}")),
            ),
        },
    };
    // What the reader could not read or resolve is in the core's own
    // warnings, shown with the core; only a file that is no core at all is
    // an input error.
    if warnings > 0 {
        summary.notes.push(format!(
            "{warnings} warning(s) reading the core dump; they are listed with it"
        ));
    }
    summary.errors.extend(error.map(|message| InputError {
        message,
        offset: None,
    }));
    if mapped.shrank() {
        summary.errors.push(InputError {
            message: "the core dump shrank while it was read (truncated by another process); \
                      bytes past its new end read as zeros, so what was read of it may be wrong"
                .to_owned(),
            offset: None,
        });
    }
    scan_text(input, kind, Cursor::new(text), rules, table, summary);
    summary.bytes = mapped.len() as u64;
    summary.lines = 0;
    summary.last_text_line = 0;
}

/// `core` with every string in it made [`inert`]: the process name and
/// arguments, module and source paths, kernel, device and symbol names are
/// bytes from the dump (or from files it names). All of them at once,
/// through the core's serialised form, so that a field added to a core
/// later is covered as well.
fn inert_strings<T: serde::Serialize + serde::de::DeserializeOwned>(core: T) -> T {
    fn visit(value: &mut serde_json::Value) {
        match value {
            serde_json::Value::String(s) => {
                if let std::borrow::Cow::Owned(shown) = inert(s) {
                    *s = shown;
                }
            }
            serde_json::Value::Array(items) => items.iter_mut().for_each(visit),
            serde_json::Value::Object(fields) => fields.values_mut().for_each(visit),
            _ => {}
        }
    }
    let Ok(mut value) = serde_json::to_value(&core) else {
        return core;
    };
    visit(&mut value);
    serde_json::from_value(value).unwrap_or(core)
}

/// The core's bytes: a plain file is mapped where it lies; compressed data
/// and standard input are decompressed into a temporary file first.
fn map(input: &Input, mut opened: Opened) -> std::io::Result<Mapped> {
    match (&input.source, opened.compression) {
        (InputSource::File(path), None) => Mapped::open(path),
        _ => Mapped::spill(&mut opened.reader, CORE_EXPANSION.ceiling),
    }
}
