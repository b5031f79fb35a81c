//! Arbitrary bytes as a log: each line cleaned of CR and colour codes,
//! stripped of launcher prefixes, read for a time, a host, NCCL's process header and
//! `mp.spawn`'s child header, for whether it continues
//! the line before, and for its template, then the whole input
//! through the built-in rules as the pipeline scans a file (which also
//! reads Python tracebacks).
#![no_main]

#[path = "shared/builtin_rules.rs"]
mod builtin_rules;

use builtin_rules::rules;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let mut cleaned = Vec::new();
    for raw in data.split(|&b| b == b'\n') {
        let clean = coroner_ingest::clean_line(raw, &mut cleaned);
        assert!(clean.len() <= raw.len());
        let text = String::from_utf8_lossy(clean);
        let prefixed = coroner_logs::strip_rank_prefix(&text);
        assert!(prefixed.rest.len() <= text.len());
        let _ = coroner_logs::continues_message(prefixed.rest);
        if coroner_logs::spawned_process(prefixed.rest).is_some() {
            assert!(prefixed.rest.contains("terminated with the following error:"));
        }
        if let Some(host) = coroner_logs::line_host(prefixed.rest) {
            assert!(!host.is_empty() && host.len() <= 253 && prefixed.rest.contains(host));
        }
        if let Some(process) = coroner_logs::nccl_process(prefixed.rest) {
            assert!(process.host.is_none_or(|h| prefixed.rest.contains(h)));
        }
        if let Some(template) = coroner_logs::suspicious_template(prefixed.rest) {
            assert!(template.chars().count() <= 201);
        }
        if let Some(time) = coroner_logs::line_time(prefixed.rest) {
            assert!((1..=12).contains(&time.month) && (1..=31).contains(&time.day));
            assert!(time.nanos < 86_401 * 1_000_000_000);
        }
    }
    for finding in coroner_analyze::examples::findings_in_bytes(rules(), data) {
        assert!(finding.count >= 1);
        assert!(finding.first_seen.line >= 1);
    }
});
