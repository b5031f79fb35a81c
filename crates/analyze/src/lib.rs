//! The analysis pipeline.
//!
//! [`analyze`] reads every input ([`coroner_ingest`]), feeds each text line,
//! with launcher prefixes removed ([`coroner_logs`]), through the rule
//! engine ([`coroner_rules`]), collapses repeated matches into
//! [`coroner_model::Finding`]s, and names one root cause
//! ([`root_cause::choose`]). [`examples::check_examples`] runs every rule's
//! firing and quiet examples through the same pipeline.
#![forbid(unsafe_code)]

mod binaries;
mod cascade;
mod chains;
mod code_lines;
mod core_text;
mod cores;
mod devices;
pub mod examples;
mod findings;
mod group;
mod hosts;
mod pasted;
mod processes;
mod ranks;
pub mod root_cause;
mod scan;
mod spacing;
mod split;
mod stacks;
mod stream_split;
mod submitted_tensors;
mod tail;
#[cfg(test)]
mod test_support;
mod timed_out;
mod torch_dumps;
mod trends;
mod unread;
mod versions;
mod written;

use coroner_ingest::{
    discover, open, parallel_map, Follow, Input, InputSource, Opened, Prefetch, Selection,
    WalkedDirectory,
};
use coroner_model::{
    Finding, InputError, InputKind, InputSummary, Report, Stats, Tool, SCHEMA_VERSION,
};
use coroner_rules::RuleSet;
use findings::FindingTable;
use scan::scan_text;
use std::sync::atomic::AtomicBool;
use std::time::Instant;

/// How to analyse.
#[derive(Clone, Copy, Default)]
pub struct Options<'a> {
    /// Follow the inputs as they grow: hand lines to the rules as they
    /// arrive and, at the end of a file, wait for more until the flag is
    /// set (standard input ends when its writer closes it).
    pub follow: Option<&'a AtomicBool>,
    /// Called, from any scanning thread, with each finding as soon as it
    /// is first seen.
    pub on_finding: Option<&'a (dyn Fn(&Finding) + Sync)>,
    /// Where to find the executables and libraries that host core dumps
    /// name; `None` looks only at the paths recorded in the core.
    pub host_core: Option<&'a coroner_hostcore::Options>,
    /// The `--include` and `--exclude` globs for the files of walked
    /// directories; `None` for none.
    pub selection: Option<&'a Selection>,
    /// The name standard input goes by in the report (`--stdin-filename`),
    /// instead of `-`; a rank in it (`rank3.log`) is the input's rank.
    pub stdin_name: Option<&'a str>,
    /// Names for files given as paths: `(path, name)` shows the file at
    /// `path` as `name` (a temporary copy of a command's output).
    pub file_names: &'a [(std::path::PathBuf, String)],
    /// Told, while following, what a person watching should know (a file
    /// truncated or replaced and read again from the start).
    pub on_notice: Option<&'a (dyn Fn(&str) + Sync)>,
}

impl std::fmt::Debug for Options<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Options")
            .field("follow", &self.follow.is_some())
            .field("on_finding", &self.on_finding.is_some())
            .field("host_core", &self.host_core)
            .field("selection", &self.selection)
            .field("stdin_name", &self.stdin_name)
            .field("file_names", &self.file_names)
            .field("on_notice", &self.on_notice.is_some())
            .finish()
    }
}

/// The width at which a terminal or a paste cut every line at the start
/// of a log (`bytes`), when one did: such a log is read with the cut lines
/// put back together. The scan measures it the same way on the start of
/// each part it reads, which for a file read whole is the file's start.
pub fn hard_wrap_width(bytes: &[u8]) -> Option<usize> {
    pasted::wrap_width(bytes, pasted::shared_indent(bytes).outer)
}

/// Analyses the inputs named by `paths` (files, directories, `-`) as one
/// incident.
pub fn analyze(paths: &[String], rules: &RuleSet) -> Report {
    analyze_with(paths, rules, Options::default())
}

/// [`analyze`], with options.
pub fn analyze_with(paths: &[String], rules: &RuleSet, options: Options<'_>) -> Report {
    let started = Instant::now();
    let no_selection = Selection::default();
    let mut discovery = discover(paths, options.selection.unwrap_or(&no_selection));
    for input in &mut discovery.inputs {
        let name = match &input.source {
            coroner_ingest::InputSource::Stdin => options.stdin_name,
            coroner_ingest::InputSource::File(path) | coroner_ingest::InputSource::Pipe(path) => {
                options
                    .file_names
                    .iter()
                    .find(|(p, _)| p == path)
                    .map(|(_, name)| name.as_str())
            }
            coroner_ingest::InputSource::ZipMember(_) => None,
        };
        if let Some(name) = name {
            input.display = coroner_model::inert(name).into_owned();
            input.rank = coroner_ingest::rank_from_path(std::path::Path::new(name));
        }
    }
    let mut inputs = Vec::new();
    let mut table = FindingTable::default();
    for (path, why) in &discovery.errors {
        inputs.push(unreadable(path, why));
    }
    // Cores left over when there are fewer inputs than cores go to
    // scanning large files in parts.
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let parts = if options.follow.is_some() {
        1
    } else {
        (cores / discovery.inputs.len().max(1)).max(1)
    };
    // Binaries among the inputs are looked in for what host cores name.
    let mut host_core = options.host_core.cloned().unwrap_or_default();
    host_core
        .debug_dirs
        .extend(binaries::binary_dirs(&discovery.inputs));
    let options = Options {
        host_core: Some(&host_core),
        ..options
    };
    let plan = Plan {
        parts,
        metrics: if discovery.inputs.len() > MANY_INPUTS {
            scan::MetricSampling::Sparse
        } else {
            scan::MetricSampling::Dense
        },
    };
    let scanned = parallel_map(&discovery.inputs, |index, input| {
        let mut own = FindingTable::for_input(index);
        let summary = analyze_input(input, rules, &mut own, plan, options);
        (summary, own)
    });
    for (summary, own) in scanned {
        inputs.push(summary);
        table.merge(own);
    }
    for (path, why) in &discovery.skipped {
        inputs.push(InputSummary {
            notes: vec![format!("skipped: {why}")],
            ..InputSummary::new(path.clone(), InputKind::Binary)
        });
    }
    inputs.extend(discovery.directories.iter().map(directory_summary));
    versions::scan_versions(&mut table, rules, &discovery.inputs);
    stacks::scan_stacks(&mut table, rules);
    timed_out::scan_timed_out(&mut table, rules);
    submitted_tensors::scan_submitted_tensors(&mut table, rules);
    torch_dumps::scan_flight_records(&mut table, rules);
    let unread = std::mem::take(&mut table.unread);
    tail::keep_at_end(&mut table, rules, &inputs);
    let mut findings = table.into_findings(rules);
    cascade::drop_superseded(&mut findings, rules);
    devices::rank_from_world_communicator(&mut findings);
    devices::attribute_ranks(&mut findings);
    processes::join_launcher_accounts(&mut findings, &|id| {
        rules.get(id).is_some_and(|r| r.first_failure)
    });
    processes::apply(&mut findings, &inputs);
    devices::rank_from_nccl_process(&mut findings);
    hosts::attribute_hosts(&mut findings);
    devices::rank_from_device_index(&mut findings);
    findings.retain(|f| rules.get(&f.rule).is_none_or(|r| !r.internal));
    chains::apply(&mut findings, &|f| root_cause::is_generic(f, rules));
    cascade::apply(&mut findings, rules);
    let (root_cause, findings) =
        root_cause::choose(findings, &inputs, &|id| root_cause::Standing::of(rules, id));
    let mut findings = group::across_ranks(findings);
    let findings_omitted = group::cap(&mut findings);
    let stats = Stats {
        bytes: inputs.iter().map(|i| i.bytes).sum(),
        lines: inputs.iter().map(|i| i.lines).sum(),
        elapsed_ms: u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX),
    };
    Report {
        schema_version: SCHEMA_VERSION,
        tool: Tool {
            name: "coroner".to_owned(),
            version: env!("CARGO_PKG_VERSION").to_owned(),
        },
        unread: if root_cause.category == coroner_model::Category::Unknown {
            unread.top(unread::SHOWN)
        } else {
            Vec::new()
        },
        root_cause,
        findings,
        findings_omitted,
        inputs,
        stats,
        notes: Vec::new(),
    }
}

/// More inputs than this in one run (a directory of thousands of per-rank
/// files) have their metric lines sampled sparsely.
const MANY_INPUTS: usize = 1024;

/// How each input of a run is scanned.
#[derive(Clone, Copy)]
struct Plan {
    /// Parts a large file is scanned in, on as many threads.
    parts: usize,
    /// How densely metric lines are sampled.
    metrics: scan::MetricSampling,
}

/// The path and size of an input worth scanning in `parts` parts: a large,
/// regular, uncompressed file.
fn splittable<'a>(
    input: &'a Input,
    opened: &Opened,
    parts: usize,
) -> Option<(&'a std::path::Path, u64)> {
    let InputSource::File(path) = &input.source else {
        return None;
    };
    // The size is looked up only where parts are to be had: not for each
    // of a directory of many files.
    if parts <= 1 || !opened.is_verbatim() {
        return None;
    }
    let size = std::fs::metadata(path).ok()?.len();
    (size >= split::SPLIT_MIN_BYTES).then_some((path.as_path(), size))
}

/// What a walked directory had passed over, as an entry of the inputs.
fn directory_summary(walked: &WalkedDirectory) -> InputSummary {
    InputSummary {
        notes: walked.notes(),
        errors: walked
            .errors
            .iter()
            .map(|why| InputError {
                message: why.clone(),
                offset: None,
            })
            .collect(),
        ..InputSummary::new(walked.display.clone(), InputKind::Directory)
    }
}

fn unreadable(path: &str, why: &str) -> InputSummary {
    InputSummary {
        errors: vec![InputError {
            message: format!("cannot read: {why}"),
            offset: None,
        }],
        ..InputSummary::new(path, InputKind::Unreadable)
    }
}

fn analyze_input(
    input: &Input,
    rules: &RuleSet,
    table: &mut FindingTable,
    plan: Plan,
    options: Options<'_>,
) -> InputSummary {
    let opened = match open(input) {
        Ok(o) => o,
        Err(e) => return unreadable(&input.display, &e.to_string()),
    };
    let mut summary = InputSummary {
        compression: opened.compression.map(|c| c.as_str().to_owned()),
        rank: input.rank,
        notes: opened.decoding_notes(),
        ..InputSummary::new(input.display.clone(), opened.kind)
    };
    match opened.kind {
        kind if kind.is_text() => {
            let metrics = match splittable(input, &opened, plan.parts) {
                Some((path, size)) => {
                    drop(opened);
                    let file = split::SplitFile {
                        path,
                        size,
                        kind,
                        parts: plan.parts,
                    };
                    match split::scan_split(
                        input,
                        &file,
                        rules,
                        table,
                        &mut summary,
                        options.on_finding,
                    ) {
                        Ok(metrics) => metrics,
                        Err(_) => {
                            summary.errors.push(InputError {
                                message: "cannot reopen the file to scan it in parts".to_owned(),
                                offset: None,
                            });
                            return summary;
                        }
                    }
                }
                None => {
                    let live = options.follow.is_some();
                    // A stream (a pipe, a decompressed file) whose findings
                    // are not announced as they are seen is scanned in
                    // chunks on the cores left over, less one that
                    // decompresses; not a GPU monitoring csv, whose header
                    // only the first chunk holds.
                    let stream =
                        !matches!(input.source, InputSource::File(_)) || !opened.is_verbatim();
                    let workers = plan.parts - usize::from(opened.compression.is_some());
                    let chunked = stream
                        && kind != InputKind::NvidiaSmi
                        && workers > 1
                        && options.follow.is_none()
                        && options.on_finding.is_none();
                    let reader: Box<dyn std::io::Read + Send> =
                        match (options.follow, &input.source) {
                            (Some(stop), InputSource::File(_)) => Box::new(Follow::file(
                                opened.reader,
                                input,
                                stop,
                                options.on_notice.unwrap_or(&|_| {}),
                            )),
                            // Reading a pipe or decompressing costs time the scan
                            // would wait for: read ahead on another thread.
                            (None, InputSource::Stdin | InputSource::Pipe(_)) => {
                                Box::new(Prefetch::new(opened.reader))
                            }
                            (None, _) if !opened.is_verbatim() => {
                                Box::new(Prefetch::new(opened.reader))
                            }
                            _ => opened.reader,
                        };
                    if chunked {
                        stream_split::scan_stream(
                            input,
                            kind,
                            reader,
                            workers,
                            (stream_split::FIRST_CHUNK_LEN, stream_split::CHUNK_LEN),
                            rules,
                            table,
                            &mut summary,
                        )
                    } else {
                        let part = scan::Part {
                            reader,
                            offset: 0,
                            after: None::<&[u8]>,
                            live,
                            metrics: plan.metrics,
                            lead: Vec::new(),
                        };
                        scan::scan_part(
                            input,
                            kind,
                            part,
                            rules,
                            table,
                            &mut summary,
                            options.on_finding,
                        )
                        .0
                    }
                }
            };
            trends::scan_trends(input, &metrics, rules, table);
        }
        InputKind::FlightRecorder | InputKind::MemorySnapshot => {
            torch_dumps::read_dump(input, opened, rules, table, &mut summary);
        }
        InputKind::ElfCore | InputKind::CudaGpuCore => {
            let default = coroner_hostcore::Options::default();
            let host = options.host_core.unwrap_or(&default);
            cores::analyze_core(input, opened, host, rules, table, &mut summary);
        }
        _ if input.explicit => {
            scan_text(
                input,
                InputKind::Log,
                opened.reader,
                rules,
                table,
                &mut summary,
            );
            summary.notes.push(
                "looks like binary data; scanned as text anyway because it was named explicitly"
                    .to_owned(),
            );
        }
        _ if binaries::is_elf_binary(input) => summary.notes.push(
            "an executable or library: not scanned, but used for the symbols of host core dumps"
                .to_owned(),
        ),
        _ => summary
            .notes
            .push("skipped: binary data (name the file explicitly to scan it as text)".to_owned()),
    }
    summary
}
