//! Naming one root cause among the findings.
//!
//! The root cause is the most severe *cause* finding of error severity or
//! above, the earliest among equals: by the wall-clock time of its line
//! when every one of them has one, else by order of appearance. A *symptom* (a peer's connection
//! reset, a launcher's summary) is named only when no cause was found, and
//! the summary says so. Warnings, info and context findings are never
//! promoted: with nothing else, the answer is `unknown`.

use coroner_model::{Category, Finding, InputSummary, Role, RootCause, Severity};

/// Picks the root cause and returns the findings reordered: the root
/// cause's finding first, then by severity (highest first) and first
/// appearance. `findings` must be in order of first appearance.
pub fn choose(mut findings: Vec<Finding>, inputs: &[InputSummary]) -> (RootCause, Vec<Finding>) {
    let pick = |role: Role| {
        let candidates = || {
            findings
                .iter()
                .enumerate()
                .filter(|(_, f)| f.role == role && f.severity >= Severity::Error)
        };
        let top = candidates().map(|(_, f)| f.severity).max()?;
        let tied = || candidates().filter(|(_, f)| f.severity == top);
        // The earliest by the time its line shows when every tied finding
        // has one (across inputs, the order of the files says nothing),
        // else the first seen.
        let timed: Option<Vec<(&str, usize)>> = tied()
            .map(|(i, f)| f.first_seen.time_of_year().map(|t| (t, i)))
            .collect();
        match timed {
            Some(timed) => timed.into_iter().min().map(|(_, i)| i),
            None => tied().next().map(|(i, _)| i),
        }
    };
    let chosen = pick(Role::Cause)
        .map(|i| (i, false))
        .or_else(|| pick(Role::Symptom).map(|i| (i, true)));
    let Some((at, is_symptom)) = chosen else {
        let summary = unknown_summary(&findings, inputs);
        findings.sort_by_key(|f| std::cmp::Reverse(f.severity));
        return (RootCause::unknown(summary), findings);
    };
    let primary = findings.remove(at);
    let rank = primary.rank.or_else(|| {
        findings
            .iter()
            .filter(|f| f.category == primary.category)
            .find_map(|f| f.rank)
    });
    let mut summary = primary.message.clone();
    if !summary.ends_with('.') {
        summary.push('.');
    }
    let mut rank = rank;
    if primary.category == Category::CollectiveTimeout {
        if let Some(lag) = lagging_rank(&findings) {
            summary.push_str(&format!(
                " Rank {} had issued only {} collectives when the others had issued {}: it never reached the collective that timed out, so look at what it was doing.",
                lag.rank, lag.issued, lag.others
            ));
            rank = Some(lag.rank);
        }
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
    if !explains.is_empty() {
        summary.push_str(&format!(
            " It explains {} other finding(s), its consequences: {}.",
            explains.len(),
            explains.join(", ")
        ));
    }
    let root = RootCause {
        category: primary.category,
        rule: Some(primary.rule.clone()),
        summary,
        rank,
        evidence: primary.evidence.clone(),
        remediation: primary.remediation.clone(),
        severity: Some(primary.severity),
        explains,
    };
    findings.sort_by_key(|f| std::cmp::Reverse(f.severity));
    findings.insert(0, primary);
    (root, findings)
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
mod tests {
    use super::*;
    use coroner_model::Location;

    fn finding(
        rule: &str,
        category: Category,
        severity: Severity,
        role: Role,
        line: u64,
    ) -> Finding {
        Finding {
            rule: rule.to_owned(),
            category,
            severity,
            role,
            title: String::new(),
            message: format!("{rule} happened"),
            count: 1,
            first_seen: Location {
                input: "log".to_owned(),
                line,
                byte_offset: 0,
                time: None,
            },
            evidence: Vec::new(),
            captures: Default::default(),
            rank: None,
            remediation: Vec::new(),
            references: Vec::new(),
            explained_by: None,
            traceback: None,
        }
    }

    #[test]
    fn the_most_severe_cause_wins_then_the_earliest() {
        let findings = vec![
            finding(
                "reset",
                Category::NcclNetwork,
                Severity::Error,
                Role::Symptom,
                1,
            ),
            finding(
                "exc",
                Category::PythonError,
                Severity::Error,
                Role::Cause,
                2,
            ),
            finding(
                "kill",
                Category::HostOom,
                Severity::Critical,
                Role::Cause,
                3,
            ),
            finding(
                "later",
                Category::PythonError,
                Severity::Critical,
                Role::Cause,
                4,
            ),
        ];
        let (root, ordered) = choose(findings, &[]);
        assert_eq!(root.rule.as_deref(), Some("kill"));
        assert_eq!(ordered[0].rule, "kill");
        assert_eq!(ordered.len(), 4);
    }

    #[test]
    fn a_symptom_is_named_only_without_a_cause_and_says_so() {
        let findings = vec![finding(
            "reset",
            Category::NcclNetwork,
            Severity::Error,
            Role::Symptom,
            1,
        )];
        let (root, _) = choose(findings, &[]);
        assert_eq!(root.category, Category::NcclNetwork);
        assert!(root.summary.contains("consequence of a failure elsewhere"));
    }

    #[test]
    fn warnings_and_context_are_never_promoted() {
        let findings = vec![
            finding(
                "overflow",
                Category::NanInfLoss,
                Severity::Warning,
                Role::Cause,
                1,
            ),
            finding(
                "hint",
                Category::LaunchFailure,
                Severity::Error,
                Role::Context,
                2,
            ),
        ];
        let (root, ordered) = choose(findings, &[]);
        assert_eq!(root.category, Category::Unknown);
        assert_eq!(root.rule, None);
        assert_eq!(ordered.len(), 2);
    }

    #[test]
    fn a_timeout_names_the_rank_that_issued_the_fewest_collectives() {
        let timeout = |rank| {
            let mut f = finding(
                "watchdog",
                Category::CollectiveTimeout,
                Severity::Error,
                Role::Cause,
                5,
            );
            f.rank = Some(rank);
            f
        };
        let progress = |rank, n: u64| {
            let mut f = finding(
                "progress",
                Category::CollectiveTimeout,
                Severity::Info,
                Role::Context,
                6,
            );
            f.rank = Some(rank);
            f.captures.insert("enqueued".to_owned(), n.to_string());
            f
        };
        let (root, _) = choose(
            vec![
                timeout(0),
                progress(0, 20),
                progress(1, 19),
                progress(2, 20),
            ],
            &[],
        );
        assert_eq!(root.rank, Some(1));
        assert!(
            root.summary
                .contains("Rank 1 had issued only 19 collectives"),
            "{}",
            root.summary
        );
        let (root, _) = choose(vec![timeout(0), progress(0, 20), progress(1, 20)], &[]);
        assert_eq!(root.rank, Some(0), "no rank lags");
    }

    #[test]
    fn the_rank_comes_from_a_finding_of_the_same_category() {
        let mut block = finding(
            "block",
            Category::HostOom,
            Severity::Critical,
            Role::Cause,
            9,
        );
        block.rank = Some(1);
        let findings = vec![
            finding(
                "line",
                Category::HostOom,
                Severity::Critical,
                Role::Cause,
                3,
            ),
            block,
        ];
        let (root, _) = choose(findings, &[]);
        assert_eq!(root.rule.as_deref(), Some("line"));
        assert_eq!(root.rank, Some(1));
    }
}
