//! Python tracebacks read into exceptions and frames, and chains of
//! exceptions explained by their first.

use crate::util::{analyze_json, coroner, fixture, Scratch};

fn finding<'a>(report: &'a serde_json::Value, rule: &str) -> &'a serde_json::Value {
    report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["rule"] == rule)
        .unwrap_or_else(|| panic!("no {rule} finding in {report:#}"))
}

#[test]
fn an_exception_raised_from_an_oom_is_its_consequence() {
    let (report, code) = analyze_json(&["fixtures/tracebacks/chained_cause.log"]);
    assert_eq!(code, 1);
    assert_eq!(report["root_cause"]["category"], "gpu-oom");
    let oom_rule = report["root_cause"]["rule"].as_str().unwrap();
    let wrapper = finding(&report, "python-exception");
    assert_eq!(wrapper["explained_by"], oom_rule);
    assert_eq!(wrapper["role"], "symptom");
    let chain = wrapper["traceback"]["exceptions"].as_array().unwrap();
    assert_eq!(chain.len(), 2);
    assert_eq!(chain[0]["exception"], "torch.OutOfMemoryError");
    assert_eq!(chain[0]["line"], 5);
    assert_eq!(chain[1]["exception"], "RuntimeError");
    assert_eq!(chain[1]["follows"], "cause");
    assert_eq!(chain[1]["frames"][1]["function"], "load_batch");
    assert_eq!(chain[1]["frames"][1]["line"], 67);
    // The OOM's own finding carries the same chain.
    assert_eq!(
        finding(&report, oom_rule)["traceback"],
        wrapper["traceback"]
    );
}

#[test]
fn an_error_in_the_handler_of_an_oom_is_its_consequence() {
    let (report, _) = analyze_json(&["fixtures/tracebacks/chained_context.log"]);
    assert_eq!(report["root_cause"]["category"], "gpu-oom");
    let handler = report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["first_seen"]["line"] == 14)
        .expect("the FileNotFoundError");
    assert_eq!(handler["explained_by"], report["root_cause"]["rule"]);
    let chain = handler["traceback"]["exceptions"].as_array().unwrap();
    assert_eq!(chain[1]["exception"], "FileNotFoundError");
    assert_eq!(chain[1]["follows"], "context");
}

#[test]
fn the_report_shows_the_programs_own_frames_of_the_root_cause() {
    let out = coroner()
        .args([
            "analyze",
            "--format",
            "human",
            "-v",
            &fixture("logs/oom_train.log"),
        ])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    let section = text
        .split("Python traceback:")
        .nth(1)
        .unwrap_or_else(|| panic!("no traceback section:\n{text}"));
    let section = section.split("What to do:").next().unwrap();
    assert!(section.contains("oom_train.py:15 in <module>"), "{section}");
    assert!(section.contains("oom_train.py:8 in forward"), "{section}");
    assert!(section.contains("library frame(s)"), "{section}");
    assert!(
        section.contains("activation.py:816 in forward"),
        "{section}"
    );
}

#[test]
fn a_rank_prefixed_traceback_gets_its_frames() {
    let (report, _) = analyze_json(&[&fixture("logs/torchrun_raise.log")]);
    let raised = &report["findings"][0];
    assert_eq!(raised["rank"], 1);
    let frames = raised["traceback"]["exceptions"][0]["frames"]
        .as_array()
        .unwrap();
    assert_eq!(frames.len(), 1);
    assert_eq!(frames[0]["line"], 9);
    assert!(frames[0]["code"]
        .as_str()
        .unwrap()
        .starts_with("raise ValueError("));
}

#[test]
fn an_exception_python_ignored_is_not_what_ended_the_program() {
    let (report, code) = analyze_json(&["fixtures/tracebacks/ignored_then_abort.log"]);
    assert_eq!(code, 1);
    assert_eq!(report["root_cause"]["category"], "abort", "{report:#}");
    assert!(
        report["findings"]
            .as_array()
            .unwrap()
            .iter()
            .all(|f| f["rule"] != "python-exception"),
        "{report:#}"
    );
}

/// A chain whose first exception only the generic rule reads, written out
/// here: the program's own `KeyError`, then, while it was handled, a
/// failure of the handler's own work.
fn handled_key_error(then: &str) -> String {
    format!(
        "Traceback (most recent call last):\n\
         \x20 File \"/workspace/train.py\", line 41, in compute_loss\n\
         \x20   logits = outputs[\"logits\"][:, labels_mask]\n\
         KeyError: 'logits'\n\n\
         During handling of the above exception, another exception occurred:\n\n\
         Traceback (most recent call last):\n\
         \x20 File \"/workspace/train.py\", line 95, in main\n\
         \x20   save_and_sync()\n\
         {then}"
    )
}

/// The handler's barrier times out, or its emergency checkpoint runs out
/// of memory: raised elsewhere than the first exception, they are its
/// consequences, not the root cause.
#[test]
fn a_failure_of_the_handlers_own_work_stays_the_consequence() {
    let scratch = Scratch::new("handled-key-error");
    for (name, then) in [
        (
            "barrier.log",
            "  File \"/opt/conda/lib/python3.10/site-packages/torch/distributed/distributed_c10d.py\", line 3683, in barrier\n\
             \x20   work.wait()\n\
             RuntimeError: [../third_party/gloo/gloo/transport/tcp/unbound_buffer.cc:81] Timed out waiting 1800000ms for recv operation to complete\n",
        ),
        (
            "checkpoint.log",
            "  File \"/opt/conda/lib/python3.10/site-packages/deepspeed/runtime/engine.py\", line 3102, in save_checkpoint\n\
             \x20   torch.cuda.synchronize()\n\
             torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 79.10 GiB of which 1.02 GiB is free.\n",
        ),
    ] {
        std::fs::write(scratch.path(name), handled_key_error(then))
            .unwrap_or_else(|e| panic!("{e}"));
        let (report, _) = analyze_json(&[&scratch.display(name)]);
        assert_eq!(report["root_cause"]["category"], "python-error", "{name}: {report:#}");
        assert_eq!(report["root_cause"]["rule"], "python-exception", "{name}");
    }
}
