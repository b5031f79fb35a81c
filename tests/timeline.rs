//! Wall-clock times read from the lines findings come from, and the
//! earliest failure across inputs chosen by them.

use crate::util::{analyze_json, Scratch};

/// The first watchdog line of a real log, rank prefix removed.
fn watchdog_line(path: &str) -> String {
    let text = std::fs::read_to_string(path).unwrap();
    let line = text
        .lines()
        .find(|l| l.contains("Watchdog caught collective operation timeout"))
        .unwrap_or_else(|| panic!("no watchdog line in {path}"));
    let at = line.find("[E1129").unwrap();
    line[at..].to_owned()
}

#[test]
fn a_findings_line_time_is_reported() {
    let (report, _) = analyze_json(&["fixtures/real-gpu/logs/nccl_watchdog_timeout.log"]);
    let root = &report["findings"][0];
    assert_eq!(root["first_seen"]["time"], "11-29T15:16:05.539395");
}

#[test]
fn across_files_the_earliest_failure_is_the_root_cause() {
    // Two real watchdog timeouts from two runs, one per file: the file that
    // sorts first holds the later one (17:16:18), the other the earlier
    // (15:16:05), renumbered from rank 0 to rank 2 so that the two are
    // different ranks' findings.
    let dir = std::env::temp_dir().join(format!("coroner-timeline-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let later = watchdog_line("fixtures/multi-gpu/stall/console.log");
    let earlier = watchdog_line("fixtures/real-gpu/logs/nccl_watchdog_timeout.log")
        .replace("[Rank 0]", "[Rank 2]");
    assert!(later.starts_with("[E1129 17:16:18") && earlier.starts_with("[E1129 15:16:05"));
    std::fs::write(dir.join("rank1.log"), format!("{later}\n")).unwrap();
    std::fs::write(dir.join("rank2.log"), format!("{earlier}\n")).unwrap();
    let (report, _) = analyze_json(&[dir.to_str().unwrap()]);
    let _ = std::fs::remove_dir_all(&dir);
    let root = &report["root_cause"];
    assert_eq!(root["category"], "collective-timeout");
    assert_eq!(root["rank"], 2, "{root:#}");
    assert!(root["evidence"][0]["input"]
        .as_str()
        .unwrap()
        .ends_with("rank2.log"));
}

#[test]
fn the_programs_own_times_part_lines_a_collector_stamped_alike() {
    // A real Open MPI log (`--timestamp-output`) in which rank 37's glog
    // line comes first but rank 4's glog time is earlier: rank 4 failed
    // first. Every line then wrapped by a logging handler whose stamp is the
    // same on all of them: the stamp is the lines' time, and the glog times
    // after it still part them.
    let path = "fixtures/wild/paddlepaddle-paddle-4043/log.txt";
    let text = std::fs::read_to_string(path).unwrap();
    let scratch = Scratch::new("stamped");
    let stamped: String = text
        .lines()
        .map(|l| format!("2024-05-01 12:00:00,123 - INFO - {l}\n"))
        .collect();
    std::fs::write(scratch.path("stamped.log"), stamped).unwrap();
    for (input, time) in [
        (path.to_owned(), "09-11T14:31:16.029341"),
        (scratch.display("stamped.log"), "2024-05-01T12:00:00.123000"),
    ] {
        let (report, _) = analyze_json(&[input.as_str()]);
        let root = &report["root_cause"];
        assert_eq!(root["rank"], 4, "{input}: {root:#}");
        assert_eq!(report["findings"][0]["first_seen"]["time"], time, "{input}");
    }
}
