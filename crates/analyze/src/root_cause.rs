//! Naming one root cause among the findings.
//!
//! The root cause is the most severe *cause* finding of error severity or
//! above, the earliest among equals: by the wall-clock time of its line
//! when every one of them has one, else by order of appearance. A plain
//! Python exception yields to any specific failure (the driver too old
//! that an `AssertionError` carries, a `MemoryError`'s host OOM). A
//! *symptom* (a peer's connection reset, a launcher's summary) is named
//! only when no cause was found, and the summary says so. A warning is
//! named only when its rule is a `sole_sign` (an unsupported GPU
//! architecture) and nothing of error severity was found; context and
//! other warnings never are: with nothing else, the answer is `unknown`.
//! The answer's confidence is high for a specific cause alone at its
//! severity, medium for a generic or contested one or for a presumed
//! reading that no input records (a SIGKILL read as the OOM killer's),
//! low for an echo or a warning.

use crate::written::rank_list;
use coroner_model::{
    Action, Category, Confidence, Finding, InputSummary, Role, RootCause, Severity,
};

/// How a rule's findings stand when the root cause is chosen.
#[derive(Debug, Default, Clone, Copy)]
pub struct Standing {
    /// A warning that names the root cause when nothing of error severity
    /// is found.
    pub sole_sign: bool,
    /// A failure named only in general terms: any specific cause is named
    /// before it.
    pub generic: bool,
    /// It says only that the process stopped itself: a cause found before
    /// it in the same input, however general, is named first.
    pub yields_to_earlier: bool,
    /// A launcher's account of which rank failed first: its rank is the
    /// root cause's when their categories agree.
    pub first_failure: bool,
    /// Its category is the usual reading of the line, not a record of it.
    pub presumed: bool,
}

impl Standing {
    /// The standing of rule `id` in `rules` (the default for a rule not
    /// there).
    pub fn of(rules: &coroner_rules::RuleSet, id: &str) -> Standing {
        rules.get(id).map_or_else(Standing::default, |r| Standing {
            sole_sign: r.sole_sign,
            generic: r.generic,
            yields_to_earlier: r.yields_to_earlier,
            first_failure: r.first_failure,
            presumed: r.presumed,
        })
    }
}

/// Whether `f` names its failure only in general terms: the Python-error
/// fallback, or a rule marked `generic`.
fn generic_finding(f: &Finding, standing: Standing) -> bool {
    f.category == Category::PythonError || standing.generic
}

/// [`generic_finding`] with the rule's standing looked up in `rules`.
pub(crate) fn is_generic(f: &Finding, rules: &coroner_rules::RuleSet) -> bool {
    generic_finding(f, Standing::of(rules, &f.rule))
}

/// Picks the root cause and returns the findings reordered: the root
/// cause's finding first, then by severity (highest first) and first
/// appearance. `findings` must be in order of first appearance;
/// `standing` tells how each rule's findings stand (by rule id).
pub fn choose(
    mut findings: Vec<Finding>,
    inputs: &[InputSummary],
    standing: &dyn Fn(&str) -> Standing,
) -> (RootCause, Vec<Finding>) {
    let generic = |f: &Finding| generic_finding(f, standing(&f.rule));
    let yields = |f: &Finding| standing(&f.rule).yields_to_earlier;
    let ranking = Ranking {
        is_generic: &generic,
        yields_to_earlier: &yields,
    };
    // A warning that is the known sign of a failure.
    let sole_sign = || {
        pick(
            &findings,
            Role::Cause,
            Severity::Warning,
            &|f| standing(&f.rule).sole_sign,
            &ranking,
        )
    };
    let chosen = pick(&findings, Role::Cause, Severity::Error, &|_| true, &ranking)
        .map(|i| (i, Named::Cause))
        .or_else(|| {
            pick(
                &findings,
                Role::Symptom,
                Severity::Error,
                &|_| true,
                &ranking,
            )
            .map(|i| (i, Named::Echo))
        })
        .or_else(|| sole_sign().map(|i| (i, Named::SoleSign)));
    // A Python exception that names no cause, beside such a warning, is
    // read as the warned failure's consequence.
    let chosen = match chosen {
        Some((at, Named::Cause)) if findings[at].category == Category::PythonError => {
            Some(sole_sign().map_or((at, Named::Cause), |i| (i, Named::SignOverException)))
        }
        other => other,
    };
    let Some((at, named)) = chosen else {
        let summary = unknown_summary(&findings, inputs);
        findings.sort_by_key(|f| std::cmp::Reverse(f.severity));
        return (RootCause::unknown(summary), findings);
    };
    let confidence = match named {
        Named::Cause if is_ambiguous(&findings, at, &generic) => Confidence::Medium,
        Named::Cause => Confidence::High,
        Named::Echo => Confidence::Low,
        Named::SoleSign | Named::SignOverException => Confidence::Low,
    };
    let presumed = is_unconfirmed(&findings, at, standing);
    let confidence = if presumed {
        confidence.min(Confidence::Medium)
    } else {
        confidence
    };
    let is_symptom = named == Named::Echo;
    let primary = findings.remove(at);
    if !generic(&primary) {
        // A generic finding of the root cause's own category says the same
        // thing in general terms: the specific one stands for it.
        findings.retain(|f| !(generic(f) && f.category == primary.category));
    }
    // The launcher saw the processes exit: its account of which rank failed
    // first outranks the rank a line of output happened to carry.
    // When the chosen finding is such an account, it stands on its own:
    // `tasks 4-7` names no one rank, and a later account's is not theirs.
    let rank = if standing(&primary.rule).first_failure {
        primary.rank
    } else {
        findings
            .iter()
            .filter(|f| f.category == primary.category && standing(&f.rule).first_failure)
            .find_map(|f| f.rank)
            .or(primary.rank)
            .or_else(|| {
                findings
                    .iter()
                    .filter(|f| f.category == primary.category)
                    .find_map(|f| f.rank)
            })
    }
    .or_else(|| launcher_local_rank(&primary, &findings));
    let allocated_on = rank
        .is_none()
        .then(|| allocation_device(&primary, &findings))
        .flatten();
    let rank = rank.or(allocated_on);
    let mut summary = primary.message.clone();
    if !summary.ends_with('.') {
        summary.push('.');
    }
    if let Some(device) = allocated_on {
        summary.push_str(&format!(
            " No line names a rank: rank {device} is presumed from the device the allocation failed on (GPU {device}), as in a job that gives each rank the GPU of its local rank (a single-GPU run is rank 0)."
        ));
    }
    let mut rank = rank;
    // A finding that explains the collective timeouts already names their
    // culprit (a flight recorder's missing rank, a stuck rank's stack): the
    // watchdogs' counts then only agree with it or not.
    let names_culprit = findings.iter().any(|f| {
        f.category == Category::CollectiveTimeout
            && f.explained_by.as_deref() == Some(primary.rule.as_str())
    });
    let named_by_report = matches!(
        primary.category,
        Category::CollectiveTimeout | Category::CollectiveMismatch | Category::Hang
    )
    .then(|| reported_culprit(&findings))
    .flatten();
    if let Some(culprit) = named_by_report {
        rank = Some(culprit);
    }
    if let Some(culprit) = named_by_report {
        summary.push_str(&format!(
            " PyTorch's desync report names rank {culprit} as the one that held the others up: look at what it was doing."
        ));
    } else if primary.category == Category::CollectiveTimeout && names_culprit {
        if let Some(lag) = lagging_rank(&findings) {
            let how = if Some(lag.rank) == rank {
                "agree"
            } else {
                "point elsewhere"
            };
            summary.push_str(&format!(
                " The watchdogs' counts {how}: rank {} had issued only {} collectives when the others had issued {}.",
                lag.rank, lag.issued, lag.others
            ));
        }
    } else if primary.category == Category::CollectiveTimeout {
        if let Some(lag) = lagging_rank(&findings) {
            summary.push_str(&format!(
                " Rank {} had issued only {} collectives when the others had issued {}: it never reached the collective that timed out, so look at what it was doing.",
                lag.rank, lag.issued, lag.others
            ));
            rank = Some(lag.rank);
        } else if let Some(waiting) = waiting_for_rank_zero(&primary, &findings) {
            summary.push_str(&format!(
                " The watchdogs of {} fired and rank 0's did not: rank 0 was most likely busy with work of its own (preparing data, evaluating or saving a checkpoint alone) while the others waited in a collective, so look at what it was doing.",
                rank_list(&waiting)
            ));
            rank = Some(0);
        }
    }
    if named == Named::SignOverException {
        summary.push_str(
            " The job ended with a Python exception that names no cause of its own: this warning is the sign of the failure it most likely came from.",
        );
    }
    if named == Named::SoleSign {
        summary.push_str(
            " No failure of error severity was found: this warning is the only sign of what went wrong, so the job may have died of something the inputs do not show.",
        );
    }
    if presumed {
        summary.push_str(
            " That is the usual reading of the sign, not a record of it: no input confirms it.",
        );
    }
    if is_symptom {
        summary.push_str(
            " This is usually a consequence of a failure elsewhere (another rank, process or node) whose output is not among the inputs.",
        );
    }
    let explains: Vec<String> = findings
        .iter()
        .filter(|f| f.explained_by.as_deref() == Some(primary.rule.as_str()))
        .map(|f| f.rule.clone())
        .collect();
    // A rank stuck outside the collectives is why the others' collectives
    // timed out: the job died of a collective timeout, on this rank.
    let timed_out_waiting = primary.category == Category::Hang && names_culprit;
    if timed_out_waiting {
        summary.push_str(" The other ranks' collectives timed out waiting for it.");
    }
    if !explains.is_empty() {
        summary.push_str(&format!(
            " It explains {} other finding(s), its consequences: {}.",
            explains.len(),
            counted(&explains)
        ));
    }
    let host = primary.host.clone();
    let action = action_for(&primary, &findings);
    let root = RootCause {
        category: if timed_out_waiting {
            Category::CollectiveTimeout
        } else {
            primary.category
        },
        rule: Some(primary.rule.clone()),
        summary,
        rank,
        rank_presumed: allocated_on.is_some() && rank == allocated_on,
        evidence: primary.evidence.clone(),
        remediation: primary.remediation.to_vec(),
        severity: Some(primary.severity),
        explains,
        confidence: Some(confidence),
        action: Some(action),
        host,
        gpu: primary.gpu.clone(),
    };
    findings.sort_by_key(|f| std::cmp::Reverse(f.severity));
    findings.insert(0, primary);
    (root, findings)
}

/// What to do after `primary`: its rule's step, on the nodes where it and
/// the other findings of its category, role and severity happened when the
/// step is about nodes (a corrected PCIe error elsewhere does not drain
/// that node too).
fn action_for(primary: &Finding, others: &[Finding]) -> Action {
    let kind = primary
        .action
        .unwrap_or_else(|| primary.category.default_action());
    let mut hosts: Vec<String> = Vec::new();
    if kind.is_about_nodes() {
        let alike = others.iter().filter(|f| {
            f.category == primary.category
                && f.role == primary.role
                && f.severity >= primary.severity
        });
        for host in std::iter::once(primary)
            .chain(alike)
            .filter_map(|f| f.host.as_ref())
        {
            if !hosts.contains(host) {
                hosts.push(host.clone());
            }
        }
    }
    Action {
        kind,
        hosts,
        retry: kind.retry(),
    }
}

/// Rule ids in order of first appearance, a repeated one once with its
/// count: `gloo-recv-timeout (×7), torchrun-worker-exitcode`.
fn counted(ids: &[String]) -> String {
    let mut seen: Vec<(&str, usize)> = Vec::new();
    for id in ids {
        match seen.iter_mut().find(|(s, _)| *s == id.as_str()) {
            Some((_, n)) => *n += 1,
            None => seen.push((id, 1)),
        }
    }
    let shown: Vec<String> = seen
        .into_iter()
        .map(|(id, n)| {
            if n > 1 {
                format!("{id} (×{n})")
            } else {
                id.to_owned()
            }
        })
        .collect();
    shown.join(", ")
}

/// How the root cause was named.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Named {
    /// A cause finding of error severity or above.
    Cause,
    /// With no cause, a symptom: an echo of a failure elsewhere.
    Echo,
    /// With nothing of error severity, a warning that is the only sign of
    /// a known failure.
    SoleSign,
    /// A warning that is the sign of a known failure, beside a Python
    /// exception that names no cause.
    SignOverException,
}

/// The finding among those of `role` with at least severity `floor` and
/// passing `eligible`: the most severe, specific before `generic` (a plain
/// Python exception, NCCL's `unhandled system error`, yields to any
/// failure that says more), an abort only when nothing before it in its
/// input is a candidate, the earliest
/// among equals: by the wall-clock time of its line when every tied
/// finding has one (across inputs the order of the files says nothing;
/// equal times of a collector's stamp are parted by the times the program
/// wrote after it), else the first seen.
fn pick(
    findings: &[Finding],
    role: Role,
    floor: Severity,
    eligible: &dyn Fn(&Finding) -> bool,
    ranking: &Ranking<'_>,
) -> Option<usize> {
    let Ranking {
        is_generic,
        yields_to_earlier,
    } = *ranking;
    let all = || {
        findings
            .iter()
            .enumerate()
            .filter(move |(_, f)| f.role == role && f.severity >= floor && eligible(f))
    };
    // An abort steps aside for a cause printed before it in its input
    // (decided once: only the few findings so marked are compared).
    let stepped_aside: Vec<usize> = all()
        .filter(|(_, f)| yields_to_earlier(f))
        .filter(|(_, f)| {
            all().any(|(_, g)| {
                !yields_to_earlier(g)
                    && g.first_seen.input == f.first_seen.input
                    && g.first_seen.line < f.first_seen.line
            })
        })
        .map(|(i, _)| i)
        .collect();
    let candidates = || all().filter(|(i, _)| !stepped_aside.contains(i));
    let any_specific = candidates().any(|(_, f)| !is_generic(f));
    let ranked = || candidates().filter(move |(_, f)| !(any_specific && is_generic(f)));
    let top = ranked().map(|(_, f)| f.severity).max()?;
    let tied = || ranked().filter(move |(_, f)| f.severity == top);
    let timed: Option<Vec<(&str, Option<&str>, usize)>> = tied()
        .map(|(i, f)| {
            let at = &f.first_seen;
            at.time_of_year().map(|t| (t, at.own_time_of_year(), i))
        })
        .collect();
    match timed {
        Some(timed) => timed.into_iter().min().map(|(_, _, i)| i),
        None => tied().next().map(|(i, _)| i),
    }
}

/// How `pick` ranks candidates beyond severity.
#[derive(Clone, Copy)]
struct Ranking<'a> {
    /// A finding that names its failure only in general terms.
    is_generic: &'a dyn Fn(&Finding) -> bool,
    /// A finding that steps aside for a cause before it in its input.
    yields_to_earlier: &'a dyn Fn(&Finding) -> bool,
}

/// Whether another cause of the same severity and of another specific
/// category stands beside the chosen one without being explained by it.
fn is_ambiguous(findings: &[Finding], at: usize, is_generic: &dyn Fn(&Finding) -> bool) -> bool {
    let Some(chosen) = findings.get(at) else {
        return false;
    };
    is_generic(chosen)
        || findings.iter().enumerate().any(|(i, f)| {
            i != at
                && f.role == Role::Cause
                && f.severity == chosen.severity
                && f.category != chosen.category
                && !is_generic(f)
                && f.explained_by.as_deref() != Some(chosen.rule.as_str())
        })
}

/// Whether the finding at `at` is a presumed reading (a SIGKILL read as
/// the OOM killer's) that no other finding of its category records.
fn is_unconfirmed(findings: &[Finding], at: usize, standing: &dyn Fn(&str) -> Standing) -> bool {
    let Some(chosen) = findings.get(at) else {
        return false;
    };
    standing(&chosen.rule).presumed
        && !findings
            .iter()
            .enumerate()
            .any(|(i, f)| i != at && f.category == chosen.category && !standing(&f.rule).presumed)
}

/// With no rank named anywhere, the one rank a launcher reports as failed
/// first: torchrun's `failed (exitcode: 1) local_rank: 0` (on the
/// single-node jobs such logs come from, the local rank is the rank) or
/// mpirun's `The first process to do so was: ... [[47051,1],1]` (a
/// `failed_rank`). A log with ranks in it, or launchers naming several
/// ranks, gives none.
fn launcher_local_rank(primary: &Finding, others: &[Finding]) -> Option<u32> {
    if others.iter().any(|f| f.rank.is_some()) {
        return None;
    }
    let mut named = std::iter::once(primary).chain(others).filter_map(|f| {
        let named = f
            .captures
            .get("local_rank")
            .or(f.captures.get("failed_rank"));
        named?.parse::<u32>().ok()
    });
    let first = named.next()?;
    named.all(|r| r == first).then_some(first)
}

/// With no rank named anywhere, the CUDA device a framework's
/// out-of-memory error says the allocation failed on (`GPU 1 has a total
/// capacity of ...`, `(GPU 0; 39.56 GiB total capacity; ...)`): a process
/// drives the device of its local rank in nearly every multi-GPU job, and
/// a single-GPU run is rank 0. Only the framework allocators' categories
/// read it (a program that drives several GPUs from one process, such as
/// llama.cpp, reports a raw CUDA allocation), and only when every such
/// error names the same device.
fn allocation_device(primary: &Finding, others: &[Finding]) -> Option<u32> {
    let framework_memory =
        |f: &Finding| matches!(f.category, Category::GpuOom | Category::GpuOomFragmentation);
    if !framework_memory(primary) || others.iter().any(|f| f.rank.is_some()) {
        return None;
    }
    let device = |f: &Finding| {
        f.captures
            .get("gpu")
            .or(f.captures.get("device"))
            .filter(|d| !d.is_empty() && d.bytes().all(|b| b.is_ascii_digit()))
            .and_then(|d| d.parse::<u32>().ok())
    };
    let named = device(primary)?;
    let others_agree = others
        .iter()
        .filter(|f| framework_memory(f))
        .filter_map(device)
        .all(|d| d == named);
    // The finding's captures are its first line's: its other lines may
    // name other devices.
    let lines_agree = primary
        .evidence
        .iter()
        .flat_map(|e| gpu_numbers(&e.text))
        .all(|d| d == named);
    (others_agree && lines_agree).then_some(named)
}

/// The numbers written `GPU <n>` in `text`.
fn gpu_numbers(text: &str) -> impl Iterator<Item = u32> + '_ {
    text.match_indices("GPU ").filter_map(move |(at, word)| {
        let rest = &text[at + word.len()..];
        let digits = rest.len() - rest.trim_start_matches(|c: char| c.is_ascii_digit()).len();
        rest[..digits].parse().ok()
    })
}

/// The one rank a report of the ranks' progress names as holding the
/// others up (a `culprit_ranks` capture: PyTorch's desync report), when
/// the reports agree on a single rank.
fn reported_culprit(findings: &[Finding]) -> Option<u32> {
    let mut named = findings
        .iter()
        .filter_map(|f| f.captures.get("culprit_ranks"))
        .map(|ranks| ranks.trim().parse::<u32>().ok());
    let first = named.next()??;
    named.all(|r| r == Some(first)).then_some(first)
}

/// A rank that issued fewer collectives than the others.
#[derive(Debug, PartialEq, Eq)]
struct Lag {
    rank: u32,
    issued: u64,
    others: u64,
}

/// When ranks report how many collectives they had issued (a capture named
/// `enqueued`), the rank that issued the fewest never reached the
/// collective the others timed out in: the first rank to look at. `None`
/// unless at least two ranks report and they differ.
fn lagging_rank(findings: &[Finding]) -> Option<Lag> {
    let mut issued: Vec<(u32, u64)> = findings
        .iter()
        .filter_map(|f| Some((f.rank?, f.captures.get("enqueued")?.parse().ok()?)))
        .collect();
    issued.sort_unstable();
    issued.dedup_by_key(|(rank, _)| *rank);
    let low = issued.iter().min_by_key(|(rank, n)| (*n, *rank))?;
    let high = issued.iter().map(|(_, n)| *n).max()?;
    (issued.len() >= 2 && low.1 < high).then_some(Lag {
        rank: low.0,
        issued: low.1,
        others: high,
    })
}

/// The ranks whose collectives timed out (the root cause's and the other
/// findings'), when they are ranks 1 to k (two at least) and rank 0
/// reported no timeout: every rank but the first waited, most likely for
/// rank 0, which jobs often leave to work alone (data preparation behind a
/// barrier, evaluation, checkpoints). A lone rank's timeout says nothing
/// of the others: it is left out.
fn waiting_for_rank_zero(primary: &Finding, others: &[Finding]) -> Option<Vec<u32>> {
    let mut ranks: Vec<u32> = std::iter::once(primary)
        .chain(others)
        .filter(|f| f.category == Category::CollectiveTimeout)
        .filter_map(|f| f.rank)
        .collect();
    ranks.sort_unstable();
    ranks.dedup();
    let first_to_k = ranks.iter().copied().eq(1..=ranks.len() as u32);
    (ranks.len() >= 2 && first_to_k).then_some(ranks)
}

fn unknown_summary(findings: &[Finding], inputs: &[InputSummary]) -> String {
    let lines: u64 = inputs.iter().map(|i| i.lines).sum();
    let read = inputs.iter().filter(|i| i.kind.is_text()).count();
    let cores = inputs
        .iter()
        .filter(|i| i.core.is_some() || i.gpu_core.is_some())
        .count();
    let read = if cores > 0 {
        format!("{read} text input(s) and {cores} core dump(s)")
    } else {
        format!("{read} text input(s)")
    };
    if findings.is_empty() {
        format!(
            "No known failure pattern matched in {read} ({lines} lines); coroner cannot name a root cause."
        )
    } else {
        format!(
            "No failure matched with confidence in {read} ({lines} lines); {} lower-severity finding(s) are listed, none of them a cause on its own.",
            findings.len()
        )
    }
}

#[cfg(test)]
mod tests;
