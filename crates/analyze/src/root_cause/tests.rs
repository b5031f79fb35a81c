use super::*;

use crate::test_support::finding;

/// A finding read as a cause, from rule `rule` on line `line`.
fn cause(rule: &str, category: Category, severity: Severity, line: u64) -> Finding {
    finding(rule, category, severity, Role::Cause, line)
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
        cause("exc", Category::PythonError, Severity::Error, 2),
        cause("kill", Category::HostOom, Severity::Critical, 3),
        cause("later", Category::PythonError, Severity::Critical, 4),
    ];
    let (root, ordered) = choose(findings, &[], &|_| Standing::default());
    assert_eq!(root.rule.as_deref(), Some("kill"));
    assert_eq!(ordered[0].rule, "kill");
    assert_eq!(ordered.len(), 4);
}

#[test]
fn a_generic_rule_yields_to_a_specific_cause_found_after_it() {
    let findings = || {
        vec![
            cause("wrapper", Category::NcclNetwork, Severity::Error, 1),
            cause("shm", Category::ShmExhausted, Severity::Error, 4),
        ]
    };
    let generic = |id: &str| Standing {
        generic: id == "wrapper",
        ..Standing::default()
    };
    let (root, _) = choose(findings(), &[], &generic);
    assert_eq!(root.rule.as_deref(), Some("shm"));
    assert_eq!(root.confidence, Some(Confidence::High));
    // Without the mark the earlier finding wins, and the two contest it.
    let (root, _) = choose(findings(), &[], &|_| Standing::default());
    assert_eq!(root.rule.as_deref(), Some("wrapper"));
    assert_eq!(root.confidence, Some(Confidence::Medium));
    // Alone, a generic finding is still named.
    let (root, _) = choose(findings().into_iter().take(1).collect(), &[], &generic);
    assert_eq!(root.rule.as_deref(), Some("wrapper"));
}

#[test]
fn an_abort_yields_to_a_cause_before_it_in_its_input_only() {
    let abort = |line| cause("abort", Category::Abort, Severity::Error, line);
    let standing = |id: &str| Standing {
        generic: id == "wrapper",
        yields_to_earlier: id == "abort",
        ..Standing::default()
    };
    // A general NCCL error thrown out of the watchdog, then the abort.
    let before = vec![
        cause("wrapper", Category::NcclNetwork, Severity::Error, 3),
        abort(5),
    ];
    let (root, _) = choose(before, &[], &standing);
    assert_eq!(root.rule.as_deref(), Some("wrapper"));
    // A peer's failure printed after the abort does not explain it.
    let after = vec![
        abort(1),
        cause("peer", Category::RendezvousFailure, Severity::Error, 2),
    ];
    let (root, _) = choose(after, &[], &standing);
    assert_eq!(root.rule.as_deref(), Some("abort"));
    // Nor does a failure in another input, whatever its line.
    let mut elsewhere = cause("wrapper", Category::NcclNetwork, Severity::Error, 1);
    elsewhere.first_seen.input = "other.log".to_owned();
    let (root, _) = choose(vec![elsewhere, abort(5)], &[], &standing);
    assert_eq!(root.rule.as_deref(), Some("abort"));
    // Alone, the abort is named.
    let (root, _) = choose(vec![abort(5)], &[], &standing);
    assert_eq!(root.rule.as_deref(), Some("abort"));
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
    let (root, _) = choose(findings, &[], &|_| Standing::default());
    assert_eq!(root.category, Category::NcclNetwork);
    assert!(root.summary.contains("consequence of a failure elsewhere"));
}

#[test]
fn warnings_and_context_are_never_promoted() {
    let findings = vec![
        cause("overflow", Category::NanInfLoss, Severity::Warning, 1),
        finding(
            "hint",
            Category::LaunchFailure,
            Severity::Error,
            Role::Context,
            2,
        ),
    ];
    let (root, ordered) = choose(findings, &[], &|_| Standing::default());
    assert_eq!(root.category, Category::Unknown);
    assert_eq!(root.rule, None);
    assert_eq!(ordered.len(), 2);
}

#[test]
fn a_timeout_names_the_rank_that_issued_the_fewest_collectives() {
    let timeout = |rank| {
        let mut f = cause("watchdog", Category::CollectiveTimeout, Severity::Error, 5);
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
        &|_| Standing::default(),
    );
    assert_eq!(root.rank, Some(1));
    assert!(
        root.summary
            .contains("Rank 1 had issued only 19 collectives"),
        "{}",
        root.summary
    );
    let (root, _) = choose(
        vec![timeout(0), progress(0, 20), progress(1, 20)],
        &[],
        &|_| Standing::default(),
    );
    assert_eq!(root.rank, Some(0), "no rank lags");
}

#[test]
fn a_launchers_local_rank_names_the_rank_only_when_nothing_else_does() {
    let launcher = |local: &str| {
        let mut f = finding(
            "exitcode",
            Category::PythonError,
            Severity::Error,
            Role::Symptom,
            9,
        );
        f.captures.insert("local_rank".to_owned(), local.to_owned());
        f
    };
    let oom = || cause("oom", Category::GpuOom, Severity::Error, 3);
    let (root, _) = choose(vec![oom(), launcher("2")], &[], &|_| Standing::default());
    assert_eq!((root.rule.as_deref(), root.rank), (Some("oom"), Some(2)));
    // Two local ranks failed: which one first is not known.
    let (root, _) = choose(vec![oom(), launcher("2"), launcher("3")], &[], &|_| {
        Standing::default()
    });
    assert_eq!(root.rank, None);
    // A log that names ranks: the local rank may be another node's.
    let mut ranked = finding(
        "warn",
        Category::PythonError,
        Severity::Info,
        Role::Context,
        1,
    );
    ranked.rank = Some(5);
    let (root, _) = choose(vec![oom(), launcher("2"), ranked], &[], &|_| {
        Standing::default()
    });
    assert_eq!(root.rank, None);
}

#[test]
fn the_rank_comes_from_a_finding_of_the_same_category() {
    let mut block = cause("block", Category::HostOom, Severity::Critical, 9);
    block.rank = Some(1);
    let findings = vec![
        cause("line", Category::HostOom, Severity::Critical, 3),
        block,
    ];
    let (root, _) = choose(findings, &[], &|_| Standing::default());
    assert_eq!(root.rule.as_deref(), Some("line"));
    assert_eq!(root.rank, Some(1));
}

#[test]
fn a_launchers_first_failure_names_the_rank_over_a_lines_rank() {
    let mut line = cause("line", Category::ShmExhausted, Severity::Critical, 3);
    line.rank = Some(1);
    let mut block = cause("block", Category::ShmExhausted, Severity::Critical, 9);
    block.rank = Some(0);
    let mut other = cause("other", Category::HostOom, Severity::Error, 12);
    other.rank = Some(5);
    let findings = || vec![line.clone(), block.clone(), other.clone()];
    let first = |id: &str| Standing {
        first_failure: id == "block" || id == "other",
        ..Standing::default()
    };
    let (root, _) = choose(findings(), &[], &first);
    assert_eq!(root.rule.as_deref(), Some("line"));
    assert_eq!(root.rank, Some(0));
    // Without the mark the root cause keeps its own line's rank.
    let (root, _) = choose(findings(), &[], &|_| Standing::default());
    assert_eq!(root.rank, Some(1));
}

#[test]
fn a_launchers_first_account_keeps_its_own_rank_over_its_later_ones() {
    // srun's `task 1: Segmentation fault` on line 1, `task 0: ...` on line 3.
    let account = |line: u64, rank: u32| {
        let mut f = finding(
            "srun",
            Category::Segfault,
            Severity::Critical,
            Role::Cause,
            line,
        );
        f.rank = Some(rank);
        f
    };
    let first = |id: &str| Standing {
        first_failure: id == "srun",
        ..Standing::default()
    };
    let (root, _) = choose(vec![account(1, 1), account(3, 0)], &[], &first);
    assert_eq!(root.rank, Some(1));
    // `tasks 4-7: ...` first names no one rank; a later account's does not stand for it.
    let mut several = account(1, 0);
    several.rank = None;
    let (root, _) = choose(vec![several, account(3, 1)], &[], &first);
    assert_eq!(root.rank, None);
}

#[test]
fn a_presumed_reading_is_medium_until_a_record_confirms_it() {
    let kill = cause("kill", Category::HostOom, Severity::Critical, 3);
    let echo = finding("echo", Category::HostOom, Severity::Error, Role::Symptom, 5);
    let record = cause("record", Category::HostOom, Severity::Error, 9);
    let presumed = |id: &str| Standing {
        presumed: id == "kill" || id == "echo",
        ..Standing::default()
    };
    let (root, _) = choose(vec![kill.clone(), echo.clone()], &[], &presumed);
    assert_eq!(root.rule.as_deref(), Some("kill"));
    assert_eq!(root.confidence, Some(Confidence::Medium));
    assert!(
        root.summary.contains("not a record of it"),
        "{}",
        root.summary
    );
    let (root, _) = choose(vec![kill.clone(), echo, record], &[], &presumed);
    assert_eq!(root.rule.as_deref(), Some("kill"));
    assert_eq!(root.confidence, Some(Confidence::High));
    assert!(!root.summary.contains("not a record"), "{}", root.summary);
    let (root, _) = choose(vec![kill], &[], &|_| Standing::default());
    assert_eq!(root.confidence, Some(Confidence::High));
}

#[test]
fn an_allocators_device_is_the_presumed_rank_only_when_it_is_the_one_named() {
    let oom = |category: Category, gpu: &str, text: &str| {
        let mut f = finding("oom", category, Severity::Error, Role::Cause, 3);
        f.captures.insert("gpu".to_owned(), gpu.to_owned());
        f.evidence.push(coroner_model::Evidence {
            input: "log".to_owned(),
            line: 3,
            text: text.to_owned(),
            context: None,
        });
        f
    };
    let one = || {
        oom(
            Category::GpuOom,
            "1",
            "CUDA out of memory. GPU 1 has a total capacity",
        )
    };
    let (root, _) = choose(vec![one()], &[], &|_| Standing::default());
    assert_eq!((root.rank, root.rank_presumed), (Some(1), true));
    assert!(root.summary.contains("presumed"), "{}", root.summary);
    // A raw CUDA allocation: one process may drive several GPUs.
    let raw = oom(Category::CudaDriverOom, "4", "allocating on device 4");
    let (root, _) = choose(vec![raw], &[], &|_| Standing::default());
    assert_eq!((root.rank, root.rank_presumed), (None, false));
    // The finding's other lines name another device.
    let mut several = one();
    several.evidence[0]
        .text
        .push_str("; GPU 6 has a total capacity");
    let (root, _) = choose(vec![several], &[], &|_| Standing::default());
    assert_eq!(root.rank, None);
    // A line names a rank: that one stands, not presumed.
    let mut ranked = one();
    ranked.rank = Some(3);
    let (root, _) = choose(vec![ranked], &[], &|_| Standing::default());
    assert_eq!((root.rank, root.rank_presumed), (Some(3), false));
}

#[test]
fn a_known_failures_warning_is_named_over_an_exception_that_names_no_cause() {
    let exception = cause("exc", Category::PythonError, Severity::Error, 9);
    let arch = cause("arch", Category::NoKernelImage, Severity::Warning, 2);
    let sole = |id: &str| Standing {
        sole_sign: id == "arch",
        ..Standing::default()
    };
    let (root, _) = choose(vec![arch.clone(), exception.clone()], &[], &sole);
    assert_eq!(root.rule.as_deref(), Some("arch"));
    assert_eq!(root.confidence, Some(Confidence::Low));
    // A warning that is not the sign of a failure leaves the exception.
    let (root, _) = choose(vec![arch, exception], &[], &|_| Standing::default());
    assert_eq!(root.rule.as_deref(), Some("exc"));
}

#[test]
fn ranks_one_to_k_timed_out_without_rank_zero_name_rank_zero() {
    let timeout = |rank, line| {
        let mut f = cause(
            "watchdog",
            Category::CollectiveTimeout,
            Severity::Error,
            line,
        );
        f.rank = Some(rank);
        f
    };
    let (root, _) = choose(
        vec![timeout(1, 4), timeout(3, 5), timeout(2, 6)],
        &[],
        &|_| Standing::default(),
    );
    assert_eq!(root.rank, Some(0));
    assert!(
        root.summary
            .contains("The watchdogs of ranks 1, 2, 3 fired and rank 0's did not"),
        "{}",
        root.summary
    );
    // A lone rank's timeout, ranks with a gap, and rank 0 among them name
    // the rank of the first line, as before.
    for ranks in [vec![1], vec![1, 3], vec![0, 1, 2]] {
        let findings = ranks
            .iter()
            .enumerate()
            .map(|(i, &r)| timeout(r, i as u64 + 1))
            .collect();
        let (root, _) = choose(findings, &[], &|_| Standing::default());
        assert_eq!(root.rank, Some(ranks[0]), "{ranks:?}");
    }
}
