//! Logs as they are copied from the web pages and terminals where users
//! find them: quoted in Markdown, with quotes and brackets escaped as HTML,
//! indented as a block, with a logging setup's time and level in front of
//! every line, or with a forum's typographic quotes and dashes. For a
//! sample of the wild corpus, each copy must get the root cause (category
//! and rank) the log as pasted gets.

use crate::util::root;
use crate::wild::cases;

/// Every `SAMPLE`th case of the corpus, in the order of its ids.
const SAMPLE: usize = 10;

/// How a copy changes one line.
type Change = fn(&str) -> String;

/// The ways a copy changes each line.
const COPIES: [(&str, Change); 10] = [
    ("quoted", |line| format!("> {line}")),
    ("escaped", |line| {
        line.replace('&', "&amp;")
            .replace('<', "&lt;")
            .replace('>', "&gt;")
            .replace('"', "&quot;")
            .replace('\'', "&#39;")
    }),
    ("indented", |line| format!("    {line}")),
    ("stamped", |line| {
        format!("2024-05-01 12:00:00,123 - INFO - {line}")
    }),
    // An Airflow task's log, a GitLab job's log with the runner's times, a
    // log store's export (time, tab), moreutils `ts`, Buildkite's hidden
    // time.
    ("airflow", |line| {
        format!("[2024-05-01, 12:00:00 UTC] {{subprocess.py:93}} INFO - {line}")
    }),
    ("gitlab", |line| {
        format!("2024-05-01T12:00:00.123456Z 01E {line}")
    }),
    ("exported", |line| {
        format!("2024-05-01T12:00:00.123Z\t{line}")
    }),
    ("ts", |line| format!("May 01 12:00:00 {line}")),
    ("buildkite", |line| {
        format!("\u{1b}_bk;t=1714564800123\u{7}{line}")
    }),
    // A forum's typography outside a code block.
    ("typographic", |line| {
        line.replace("...", "\u{2026}")
            .replace("--", "\u{2013}")
            .replace('\'', "\u{2019}")
            .replace('"', "\u{201d}")
    }),
];

fn answer(paths: &[String], rules: &coroner_rules::RuleSet) -> (String, Option<u32>) {
    let report = coroner_analyze::analyze(paths, rules);
    (
        report.root_cause.category.as_str().to_owned(),
        report.root_cause.rank,
    )
}

/// The paths of `case`'s logs.
fn log_paths(case: &crate::wild::Case) -> Vec<String> {
    case.logs
        .iter()
        .map(|l| root().join(l).to_string_lossy().into_owned())
        .collect()
}

/// The narrowest width at which a terminal or a paste cut the lines of
/// one of `paths`, if one was cut.
fn wrap_width(paths: &[String]) -> Option<usize> {
    paths
        .iter()
        .filter_map(|path| coroner_analyze::hard_wrap_width(&std::fs::read(path).unwrap()))
        .min()
}

/// At most this many sampled cases may be left out of a copy: a wrap
/// read where there is none would otherwise shrink the test unseen.
const MOST_LEFT_OUT: usize = 12;

/// The answer for copies of `paths`, each written into `dir` as `copy`
/// makes it from the log's bytes.
fn answer_of_copies(
    paths: &[String],
    dir: &std::path::Path,
    copy: &dyn Fn(&[u8]) -> Vec<u8>,
    rules: &coroner_rules::RuleSet,
) -> (String, Option<u32>) {
    std::fs::create_dir_all(dir).unwrap();
    let copies: Vec<String> = paths
        .iter()
        .map(|path| {
            let bytes = std::fs::read(path).unwrap();
            let file = dir.join(std::path::Path::new(path).file_name().unwrap());
            std::fs::write(&file, copy(&bytes)).unwrap();
            file.to_string_lossy().into_owned()
        })
        .collect();
    answer(&copies, rules)
}

/// How a copy's bytes are made from a log's.
type CopyBytes<'a> = Box<dyn Fn(&[u8]) -> Vec<u8> + 'a>;

/// A way to copy a whole log: its name, and how.
type Copy<'a> = (&'a str, CopyBytes<'a>);

/// The sampled cases whose copies get another answer than their logs
/// get, a line each; `skip` leaves out a case's copy by its logs' paths
/// and the copy's name.
fn differences(name: &str, copies: &[Copy], skip: &dyn Fn(&[String], &str) -> bool) -> Vec<String> {
    let rules = crate::util::builtin_rules();
    let dir = std::env::temp_dir().join(format!("coroner-{name}-{}", std::process::id()));
    let sample: Vec<_> = cases().into_iter().step_by(SAMPLE).collect();
    assert!(sample.len() > 150, "{} cases sampled", sample.len());
    let mut differ = Vec::new();
    for case in &sample {
        let paths = log_paths(case);
        let pasted = answer(&paths, &rules);
        for (copy_name, copy) in copies {
            if skip(&paths, copy_name) {
                continue;
            }
            let into = dir.join(copy_name).join(&case.id);
            let got = answer_of_copies(&paths, &into, copy.as_ref(), &rules);
            if got != pasted {
                differ.push(format!(
                    "{} {copy_name}: {pasted:?} as pasted, {got:?} copied",
                    case.id
                ));
            }
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
    differ
}

/// A copy that changes each line as `change` does.
fn line_by_line(change: Change) -> CopyBytes<'static> {
    Box::new(move |bytes| {
        let text = String::from_utf8_lossy(bytes);
        let copied: String = text.lines().map(|l| format!("{}\n", change(l))).collect();
        copied.into_bytes()
    })
}

#[test]
fn copies_of_wild_logs_get_the_answer_the_logs_get() {
    let left_out = cases()
        .into_iter()
        .step_by(SAMPLE)
        .filter(|case| wrap_width(&log_paths(case)).is_some())
        .count();
    let copies: Vec<Copy> = COPIES
        .iter()
        .map(|&(name, change)| (name, line_by_line(change)))
        .collect();
    // A wrap leaves no time in front of a cut line's rest: a wrapped paste
    // never has one on every line.
    let stamped = [
        "stamped",
        "airflow",
        "gitlab",
        "exported",
        "ts",
        "buildkite",
    ];
    let skip =
        |paths: &[String], name: &str| stamped.contains(&name) && wrap_width(paths).is_some();
    let differ = differences("copies", &copies, &skip);
    assert!(differ.is_empty(), "{}", differ.join("\n"));
    assert!(
        left_out <= MOST_LEFT_OUT,
        "{left_out} wrapped pastes not stamped"
    );
}

/// Copies that change the bytes of a whole log: written by Windows
/// PowerShell 5 (UTF-16 LE with its byte order mark, CRLF), kept by Docker's
/// `json-file` log driver (one JSON object per line), relayed by a Ray
/// worker (its tag in front of every line, before any prefix the log had),
/// pasted as one JSON string (line ends written as `\n`), shown by `cat
/// -n`, and kept in a Jupyter notebook's output.
const ENCODED: [(&str, Change); 6] = [
    ("powershell", |text| {
        let crlf = text.replace("\r\n", "\n").replace('\n', "\r\n");
        let mut bytes = vec![0xff, 0xfe];
        for unit in crlf.encode_utf16() {
            bytes.extend_from_slice(&unit.to_le_bytes());
        }
        // `Change` gives text: the bytes are carried in a string of
        // chars below 256, one per byte, and written back one per byte.
        bytes.into_iter().map(char::from).collect()
    }),
    ("docker", |text| {
        text.lines()
            .map(|line| {
                let object = serde_json::json!({
                    "log": format!("{line}\n"),
                    "stream": "stderr",
                    "time": "2024-03-01T10:11:12.123456789Z",
                });
                format!("{object}\n")
            })
            .collect()
    }),
    ("ray", |text| {
        text.lines()
            .map(|line| format!("(RayTrainWorker pid=4242, ip=10.0.0.7) {line}\n"))
            .collect()
    }),
    ("json-string", |text| {
        format!("{}\n", serde_json::Value::String(text.to_owned()))
    }),
    ("numbered", |text| {
        text.lines()
            .enumerate()
            .map(|(i, line)| format!("{:6}\t{line}\n", i + 1))
            .collect()
    }),
    ("notebook", |text| {
        let lines: Vec<String> = text.split_inclusive('\n').map(str::to_owned).collect();
        let notebook = serde_json::json!({
            "cells": [{
                "cell_type": "code",
                "execution_count": 1,
                "metadata": {},
                "source": ["!python train.py\n"],
                "outputs": [{"name": "stderr", "output_type": "stream", "text": lines}],
            }],
            "metadata": {},
            "nbformat": 4,
            "nbformat_minor": 5,
        });
        format!("{notebook:#}")
    }),
];

#[test]
fn encoded_copies_of_wild_logs_get_the_answer_the_logs_get() {
    let copies: Vec<Copy> = ENCODED
        .iter()
        .map(|&(name, change)| -> Copy {
            let copy = move |bytes: &[u8]| -> Vec<u8> {
                let copied = change(&String::from_utf8_lossy(bytes));
                if name == "powershell" {
                    copied.chars().map(|c| c as u8).collect()
                } else {
                    copied.into_bytes()
                }
            };
            (name, Box::new(copy))
        })
        .collect();
    // A log of one or two lines has next to no line end to write as `\n`.
    let short = |paths: &[String]| {
        paths.iter().any(|path| {
            let bytes = std::fs::read(path).unwrap();
            bytes.iter().filter(|&&b| b == b'\n').count() < 3
        })
    };
    let skip = |paths: &[String], name: &str| name == "json-string" && short(paths);
    let differ = differences("encoded", &copies, &skip);
    assert!(differ.is_empty(), "{}", differ.join("\n"));
}

/// A training loop as users paste it above its output: its strings name
/// the failures it handles, and none of them happened.
const PASTED_CODE: &str = r#"import os
import torch
import torch.distributed as dist
os.environ["NCCL_DEBUG"] = "INFO"
os.environ["NCCL_IB_DISABLE"] = "1"

def train_step(model, batch):
    try:
        loss = model(batch).loss
        loss.backward()
    except torch.cuda.OutOfMemoryError:
        print("CUDA out of memory, skipping batch")
        torch.cuda.empty_cache()
    except RuntimeError as e:
        if "out of memory" in str(e):
            print("| WARNING: ran out of memory, skipping batch")
        elif "illegal memory access" in str(e):
            logger.error("CUDA error: an illegal memory access was encountered")
        else:
            raise e
    if torch.isnan(loss):
        raise ValueError("Loss is NaN")
    assert torch.cuda.is_available(), "No CUDA GPUs are available"

"#;

#[test]
fn code_pasted_above_a_wild_log_changes_no_answer() {
    let rules = crate::util::builtin_rules();
    let dir = std::env::temp_dir().join(format!("coroner-code-{}", std::process::id()));
    let sample: Vec<_> = cases().into_iter().step_by(SAMPLE).collect();
    let code_width = PASTED_CODE.lines().map(str::len).max().unwrap_or(0);
    let mut differ = Vec::new();
    let mut left_out = 0;
    for case in &sample {
        let paths = log_paths(case);
        // A wrapped paste is told by its widest lines, which code wider
        // than the wrap would hide.
        if wrap_width(&paths).is_some_and(|width| width < code_width) {
            left_out += 1;
            continue;
        }
        let pasted = answer(&paths, &rules);
        let below_code = |bytes: &[u8]| [PASTED_CODE.as_bytes(), bytes].concat();
        let got = answer_of_copies(&paths, &dir.join(&case.id), &below_code, &rules);
        if got != pasted {
            differ.push(format!(
                "{}: {pasted:?} as pasted, {got:?} after code",
                case.id
            ));
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
    assert!(differ.is_empty(), "{}", differ.join("\n"));
    assert!(
        left_out <= MOST_LEFT_OUT,
        "{left_out} wrapped pastes left out"
    );
}

/// Every case of the corpus whose root cause comes from a rule that reads
/// where a log stops (`tail_lines`): the same log ending in blank lines,
/// spaces and an empty quote, as pastes often do, still stops there.
#[test]
fn a_paste_ending_in_blank_lines_stops_where_its_text_stops() {
    let rules = crate::util::builtin_rules();
    let dir = std::env::temp_dir().join(format!("coroner-padded-{}", std::process::id()));
    let padded = |bytes: &[u8]| [bytes, b"\n  \n\n> \n\n".as_slice()].concat();
    let mut read_at_end = 0;
    let mut differ = Vec::new();
    for case in cases() {
        let paths = log_paths(&case);
        let report = coroner_analyze::analyze(&paths, &rules);
        let at_end = report
            .root_cause
            .rule
            .as_deref()
            .and_then(|id| rules.get(id))
            .is_some_and(|rule| rule.tail_lines.is_some());
        if !at_end {
            continue;
        }
        read_at_end += 1;
        let pasted = (
            report.root_cause.category.as_str().to_owned(),
            report.root_cause.rank,
        );
        let got = answer_of_copies(&paths, &dir.join(&case.id), &padded, &rules);
        if got != pasted {
            differ.push(format!("{}: {pasted:?} as pasted, {got:?} padded", case.id));
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
    assert!(read_at_end >= 3, "{read_at_end} cases read at the end");
    assert!(differ.is_empty(), "{}", differ.join("\n"));
}

/// The share (percent) of sampled cases whose logs, pasted with their line
/// ends turned into spaces, keep their answer: a paste that lost its line
/// ends is read again as lines only where its lines start as a log's lines
/// do, so not every one can be. The sample is every tenth case, so it moves
/// as the corpus grows: 182 of 190 kept, then 175 of 192 (91.1%) after a
/// batch of 19 cases moved it; the whole training split keeps 94.4%.
const FLATTENED_KEPT_PERCENT: usize = 91;

/// The same logs pasted as one line each, their line ends turned into
/// spaces (a chat, a web form): most get the answer the logs get.
#[test]
fn flattened_copies_of_wild_logs_mostly_get_the_answer_the_logs_get() {
    let flatten: Copy = (
        "flattened",
        Box::new(|bytes: &[u8]| {
            let text = String::from_utf8_lossy(bytes);
            let joined: Vec<&str> = text.lines().collect();
            format!("{}\n", joined.join(" ")).into_bytes()
        }),
    );
    // Only logs of several lines, long enough to be read as lines again.
    let short = |paths: &[String]| {
        paths.iter().any(|path| {
            let bytes = std::fs::read(path).unwrap();
            bytes.len() < 512 || bytes.iter().filter(|&&b| b == b'\n').count() < 3
        })
    };
    let taken = cases()
        .into_iter()
        .step_by(SAMPLE)
        .filter(|case| !short(&log_paths(case)))
        .count();
    let differ = differences("flattened", &[flatten], &|paths, _| short(paths));
    let kept = taken - differ.len();
    assert!(
        kept * 100 >= taken * FLATTENED_KEPT_PERCENT,
        "{kept} of {taken} flattened copies keep their answer (floor {FLATTENED_KEPT_PERCENT}%); differ:\n{}",
        differ.join("\n")
    );
}
