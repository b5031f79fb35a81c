//! Rendering `coroner explain` answers.

use crate::human::wrap_into;
use crate::Style;
use coroner_knowledge::{bucket_meaning, Answer, Entry, EntryKind};

/// The answer for a terminal.
pub fn human(query: &str, answer: &Answer, style: Style) -> String {
    let mut out = String::new();
    match answer {
        Answer::Found(entries) => {
            for (i, e) in entries.iter().enumerate() {
                if i > 0 {
                    out.push('\n');
                }
                entry(&mut out, e, style);
            }
        }
        Answer::NotFound { suggestions } => {
            let w = style.width;
            wrap_into(
                &mut out,
                &format!("coroner knows nothing called `{query}`."),
                "",
                "  ",
                w,
            );
            if !suggestions.is_empty() {
                wrap_into(
                    &mut out,
                    &format!("Closest: {}", suggestions.join(", ")),
                    "",
                    "  ",
                    w,
                );
            }
            wrap_into(
                &mut out,
                "Try a CUDA code (700), its name (cudaErrorIllegalAddress, CUDA_ERROR_ILLEGAL_ADDRESS) or message, `xid 79`, an NCCL result (ncclSystemError), a cuBLAS/cuDNN status or a rule id (`coroner rules list`).",
                "",
                "  ",
                w,
            );
        }
    }
    out
}

fn entry(out: &mut String, e: &Entry, style: Style) {
    let w = style.width;
    let code = e.code.map(|c| format!(" {c}")).unwrap_or_default();
    // An Xid's name is its number; its message says what it is.
    let title = match (e.kind, &e.message) {
        (EntryKind::Xid, Some(message)) => message.clone(),
        _ => e.names.join(" / "),
    };
    wrap_into(
        out,
        &format!("{}{code}: {title}", e.kind.label()),
        "",
        "  ",
        w,
    );
    let mut facts = vec![
        format!("category {}", e.category),
        format!("severity {}", e.severity),
    ];
    if let Some(sticky) = e.sticky {
        facts.push(if sticky {
            "sticky: the context is lost, every later CUDA call fails too".to_owned()
        } else {
            "not sticky".to_owned()
        });
    }
    if let Some(legacy) = e.legacy_code {
        facts.push(format!("code {legacy} before cuDNN 9"));
    }
    wrap_into(out, &facts.join("; "), "  ", "  ", w);
    if let Some(message) = e.message.as_ref().filter(|_| e.kind != EntryKind::Xid) {
        wrap_into(out, &format!("message: {message}"), "  ", "    ", w);
    }
    if let Some(n) = e.code.filter(|n| e.kind == EntryKind::Signal && *n <= 64) {
        wrap_into(
            out,
            &format!(
                "seen as: exit status {} (shell, Slurm batch script, Kubernetes), exitcode -{n} (Python, torchrun), ExitCode 0:{n} (sacct)",
                128 + n
            ),
            "  ",
            "    ",
            w,
        );
    }
    out.push('\n');
    wrap_into(out, &e.summary, "  ", "  ", w);
    if !e.causes.is_empty() && e.causes.iter().all(|c| !c.contains(' ')) {
        out.push('\n');
        wrap_into(
            out,
            &format!("Likely cause: {}", e.causes.join(", ")),
            "  ",
            "    ",
            w,
        );
    } else if !e.causes.is_empty() {
        out.push_str("\n  Likely causes:\n");
        for c in &e.causes {
            wrap_into(out, c, "  - ", "    ", w);
        }
    }
    if e.kind == EntryKind::Xid {
        out.push('\n');
        let buckets = |list: &[String]| {
            list.iter()
                .map(|b| format!("{b}: {}", bucket_meaning(b)))
                .collect::<Vec<_>>()
                .join("; ")
        };
        let mut line = String::from("NVIDIA's catalog: ");
        if e.immediate.is_empty() {
            line.push_str("no resolution bucket yet");
        } else {
            line.push_str(&format!("now {}", buckets(&e.immediate)));
        }
        if !e.investigatory.is_empty() {
            line.push_str(&format!("; then {}", buckets(&e.investigatory)));
        }
        if e.unused {
            line.push_str("; marked unused on current GPUs");
        }
        line.push('.');
        wrap_into(out, &line, "  ", "    ", w);
        let retry = if e.action.retry() {
            "resubmitting the job without this node can succeed"
        } else {
            "resubmitting the same job will not help"
        };
        wrap_into(
            out,
            &format!("For the job: {}; {retry}.", e.action),
            "  ",
            "    ",
            w,
        );
    }
    if !e.fixes.is_empty() {
        out.push_str("\n  What to do:\n");
        for (i, f) in e.fixes.iter().enumerate() {
            let first = format!("  {}. ", i + 1);
            wrap_into(out, f, &first, &" ".repeat(first.len()), w);
        }
    }
    if let Some(source) = &e.source {
        out.push('\n');
        wrap_into(out, &format!("Source: {source}"), "  ", "    ", w);
    }
}

/// The answer as JSON: `{query, found, entries}` or `{query, found,
/// suggestions}`.
pub fn json(query: &str, answer: &Answer) -> String {
    let value = match answer {
        Answer::Found(entries) => serde_json::json!({
            "query": query,
            "found": true,
            "entries": entries,
        }),
        Answer::NotFound { suggestions } => serde_json::json!({
            "query": query,
            "found": false,
            "suggestions": suggestions,
        }),
    };
    let mut out = serde_json::to_string_pretty(&value).unwrap_or_default();
    out.push('\n');
    out
}
