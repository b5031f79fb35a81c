//! Hostile inputs that try to act on whoever reads a report: escape
//! sequences for a terminal (clipboard writes, clearing the screen, links,
//! hidden text, C1 controls, a carriage return that rewrites a line),
//! workflow commands for a CI runner (`::add-mask::`, `::error`), and
//! Markdown or HTML for a renderer. They come from every place input text
//! enters a report: file names, log lines, user rule files, host and GPU
//! core dumps. Every byte must reach every format, and stderr, visible
//! and inert.

use crate::util::{coroner, root, Scratch};
use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::process::{Output, Stdio};

const FORMATS: [&str; 7] = [
    "human", "markdown", "github", "junit", "sarif", "json", "jsonl",
];

/// Everything a hostile input might try: OSC 52 (clipboard), CSI 2J,
/// an OSC 8 link, hidden text (SGR 8), C1 CSI and OSC, CR, BS, NUL, VT,
/// FF, DEL, BEL and a bidi override.
const ATTACK: &str = "\x1b]52;c;aGk=\x07\x1b[2J\x1b]8;;http://x.example/\x07L\x1b]8;;\x07\x1b[8mhid\u{9b}2J\u{9d}0;t\x07\r\x08\0\x0b\x0c\x7f\u{202e}";

/// A character no byte from an input may become in any output: every C0
/// control but LF and TAB, DEL, C1 controls, bidi overrides and isolates.
pub(crate) fn acts(c: char) -> bool {
    (c < ' ' && c != '\n' && c != '\t')
        || ('\u{7f}'..='\u{9f}').contains(&c)
        || ('\u{202a}'..='\u{202e}').contains(&c)
        || ('\u{2066}'..='\u{2069}').contains(&c)
}

fn analyze(args: &[&OsStr], cwd: &Path) -> Output {
    let mut cmd = coroner();
    cmd.current_dir(cwd)
        .arg("analyze")
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    cmd.output().expect("run coroner")
}

/// Asserts that `out` holds nothing that acts, and no workflow command but
/// the github format's own annotations on stdout.
pub(crate) fn assert_inert(what: &str, format: &str, out: &Output) {
    for (stream, bytes) in [("stdout", &out.stdout), ("stderr", &out.stderr)] {
        let text = String::from_utf8_lossy(bytes);
        if let Some(c) = text.chars().find(|&c| acts(c)) {
            panic!("{what}: {format} {stream} holds {c:?}:\n{text}");
        }
        for line in text.lines() {
            let own = stream == "stdout"
                && format == "github"
                && [
                    "::error ",
                    "::warning ",
                    "::notice ",
                    "::group::",
                    "::endgroup::",
                ]
                .iter()
                .any(|p| line.starts_with(p));
            assert!(
                own || !line.trim_start().starts_with("::"),
                "{what}: {format} {stream} holds a workflow command: {line:?}\n{text}"
            );
            // The runner's older syntax (and Azure's, TeamCity's) acts
            // anywhere in a line.
            let lower = line.to_ascii_lowercase();
            for legacy in ["##[", "##vso[", "##teamcity["] {
                assert!(
                    !lower.contains(legacy),
                    "{what}: {format} {stream} holds a workflow command: {line:?}\n{text}"
                );
            }
        }
    }
}

fn evil_rules(dir: &Scratch) -> String {
    let rules = dir.path("rules");
    std::fs::create_dir_all(&rules).unwrap();
    let escaped: String = ATTACK
        .chars()
        .map(|c| format!("\\u{:04x}", c as u32))
        .collect();
    std::fs::write(
        rules.join("evil-rule.toml"),
        format!(
            r#"id = "evil-rule"
title = "evil {escaped} title"
category = "gpu-oom"
severity = "error"
message = "got {{what}} and {escaped}"
remediation = ["do {escaped} [x](http://evil.example/) <img src=x>"]
[match]
literals = ["boom"]
any = ['''boom (?P<what>.+)''']
[[examples]]
fires = true
input = "boom x"
[[examples]]
fires = false
input = "quiet"
"#
        ),
    )
    .unwrap();
    rules.to_string_lossy().into_owned()
}

const OOM_LINE: &str = "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 139.80 GiB of which 4.98 GiB is free.";

#[test]
fn names_log_lines_and_rule_messages_are_inert_on_every_stream() {
    let dir = Scratch::new("inert-names");
    let logs = dir.path("logs");
    std::fs::create_dir_all(&logs).unwrap();
    let name = format!("x{ATTACK}\n::add-mask::secret\n::error::pwned").replace(['\0', '/'], "");
    let log = format!("step 1\n{OOM_LINE} {ATTACK}FAKE\nboom {ATTACK} `<img src=x>`\n");
    std::fs::write(logs.join(format!("{name}.log")), &log).unwrap();
    // A broken compressed file: its name is said in a warning on stderr.
    let zst = zstd::encode_all(log.repeat(200).as_bytes(), 3).unwrap();
    std::fs::write(logs.join(format!("{name}.zst")), &zst[..zst.len() / 2]).unwrap();
    let rules = evil_rules(&dir);
    let sgr = regex::Regex::new("\x1b\\[[0-9;]*m").unwrap();
    for format in FORMATS {
        for color in ["never", "always"] {
            let out = analyze(
                &[
                    "--format".as_ref(),
                    format.as_ref(),
                    "--color".as_ref(),
                    color.as_ref(),
                    "--rules".as_ref(),
                    rules.as_ref(),
                    logs.as_os_str(),
                ],
                &root(),
            );
            assert_eq!(out.status.code(), Some(1), "{format}: {out:?}");
            if color == "never" {
                assert_inert("names", format, &out);
            } else {
                // Only coroner's own colours: SGR sequences, nothing else.
                let text = String::from_utf8_lossy(&out.stdout);
                let stripped = sgr.replace_all(&text, "");
                let again = Output {
                    stdout: stripped.as_bytes().to_vec(),
                    ..out.clone()
                };
                assert_inert("names (colour)", format, &again);
            }
        }
    }
}

/// A workflow command needs no line break of its own to start a line: a
/// file name at the start of an evidence line, or a word that the terminal
/// report's wrapping puts first on a line, and the runner's older syntax
/// (`##[error]`), which it obeys anywhere in a line.
#[test]
fn no_input_starts_a_workflow_command_anywhere() {
    let dir = Scratch::new("inert-commands");
    let name = "::error::pwned.log";
    let words = " ::warning::x ##[error]y ##vso[task.complete result=Failed]z".repeat(12);
    let log = format!("step 1\n{OOM_LINE}{words} ##[add-mask]secret\nboom ::notice::n{words}\n");
    std::fs::write(dir.path(name), &log).unwrap();
    let rules = evil_rules(&dir);
    for format in FORMATS {
        let mut cmd = coroner();
        cmd.current_dir(&dir.0)
            .env("COLUMNS", "80")
            .args(["analyze", "--format", format, "--rules", &rules, name])
            .stdin(Stdio::null());
        let out = cmd.output().unwrap();
        assert_eq!(out.status.code(), Some(1), "{format}: {out:?}");
        assert_inert("commands", format, &out);
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(
            text.contains("pwned.log"),
            "{format}: the name is shown: {text}"
        );
    }
}

/// `text` replaced by `with` (of the same length) everywhere in `bytes`.
fn patch(bytes: &mut [u8], text: &[u8], with: &[u8]) -> usize {
    assert_eq!(text.len(), with.len());
    let mut n = 0;
    let mut i = 0;
    while i + text.len() <= bytes.len() {
        if &bytes[i..i + text.len()] == text {
            bytes[i..i + text.len()].copy_from_slice(with);
            n += 1;
            i += text.len();
        } else {
            i += 1;
        }
    }
    n
}

fn decompressed(rel: &str) -> Vec<u8> {
    zstd::decode_all(&std::fs::read(root().join(rel)).unwrap()[..]).unwrap()
}

/// `ATTACK` cut or padded to `len` bytes (padding with `.`).
fn attack_of(len: usize) -> Vec<u8> {
    let mut a = b"\x1b]52;c;aGk=\x07\x1b[2J\n::error::x\r\x08\xc2\x9b2J\xe2\x80\xae".to_vec();
    a.resize(len, b'.');
    a
}

#[test]
fn core_dump_strings_are_inert_on_every_stream() {
    let dir = Scratch::new("inert-cores");
    let mut host = decompressed("fixtures/host-cores/core.null_read.zst");
    let path = b"/work/main/fixtures/host-cores/null_read";
    assert!(patch(&mut host, path, &attack_of(path.len())) > 0);
    assert!(patch(&mut host, b"null_read\0", &attack_of(10)) > 0);
    std::fs::write(dir.path("host.core"), &host).unwrap();
    let mut gpu =
        decompressed("fixtures/incidents/gpu-exception/core_1795976329_vm_3627.nvcudmp.zst");
    assert!(patch(&mut gpu, b"trainer.cu", &attack_of(10)) > 0);
    assert!(patch(&mut gpu, b"fetch_row", &attack_of(9)) > 0);
    std::fs::write(dir.path("gpu.nvcudmp"), &gpu).unwrap();
    for core in ["host.core", "gpu.nvcudmp"] {
        for format in FORMATS {
            let out = analyze(
                &[
                    "--format".as_ref(),
                    format.as_ref(),
                    "--verbose".as_ref(),
                    dir.path(core).as_os_str(),
                ],
                &root(),
            );
            assert_eq!(out.status.code(), Some(1), "{core} {format}: {out:?}");
            assert_inert(core, format, &out);
            if format == "json" {
                // The strings are still there, shown.
                let text = String::from_utf8_lossy(&out.stdout);
                assert!(text.contains("^[]52;c;aGk"), "{core}: {text}");
            }
        }
    }
}

#[test]
fn names_that_are_not_utf8_stay_distinct() {
    let dir = Scratch::new("inert-bytes");
    let zst = zstd::encode_all(format!("{OOM_LINE}\n").repeat(500).as_bytes(), 3).unwrap();
    for byte in [0xffu8, 0xfe] {
        let bytes = [b'a', byte, b'.', b'z', b's', b't'];
        std::fs::write(dir.0.join(OsStr::from_bytes(&bytes)), &zst[..zst.len() / 2]).unwrap();
    }
    for format in FORMATS {
        let out = analyze(
            &["--format".as_ref(), format.as_ref(), dir.0.as_os_str()],
            &root(),
        );
        let both = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(!both.contains('\u{fffd}'), "{format}: {both}");
        for shown in ["a\\xff.zst", "a\\xfe.zst"] {
            // JSON doubles the backslash, a URI percent-encodes it.
            let json = shown.replace('\\', "\\\\");
            let uri = shown.replace('\\', "%5C");
            assert!(
                both.contains(shown) || both.contains(&json) || both.contains(&uri),
                "{format}: {shown} in {both}"
            );
        }
    }
}

/// The Markdown report, parsed as GitHub renders it: no HTML, no link, no
/// image and no heading but coroner's own can come from an input.
#[test]
fn markdown_holds_no_live_html_link_or_heading_from_an_input() {
    let dir = Scratch::new("inert-markdown");
    let rules = evil_rules(&dir);
    let name = "a`b`<img src=x onerror=alert(1)>[l](http:e.example).zst";
    let attacks = [
        "`<img src=x onerror=alert(1)>`",
        "``<img src=x>` `",
        "`a` <img src=x> `b",
        "[click](http://evil.example/) ![i](http://evil.example/x.png)",
        "<http://evil.example/> www.evil.example http://evil.example/ a@evil.example",
        "# heading <script>alert(1)</script> <!-- c -->",
        "| a | b |\n",
    ];
    let log: String = attacks.iter().map(|a| format!("boom {a}\n")).collect();
    std::fs::write(dir.path("a.log"), &log).unwrap();
    let zst = zstd::encode_all(log.repeat(100).as_bytes(), 3).unwrap();
    std::fs::write(dir.path(name), &zst[..zst.len() / 2]).unwrap();
    for attack in attacks {
        std::fs::write(dir.path("one.log"), format!("boom {attack}\n")).unwrap();
        for inputs in [vec!["one.log", name], vec!["a.log"]] {
            let mut args: Vec<&OsStr> = vec![
                "--format".as_ref(),
                "markdown".as_ref(),
                "--rules".as_ref(),
                rules.as_ref(),
            ];
            args.extend(inputs.iter().map(OsStr::new));
            let out = analyze(&args, &dir.0);
            assert_eq!(out.status.code(), Some(1), "{out:?}");
            let md = String::from_utf8_lossy(&out.stdout);
            assert_markdown_inert(&md);
        }
    }
    // SARIF's rule help is Markdown too.
    let sarif = sarif_of(&dir.0, &rules, &["a.log"]);
    let help = &sarif["runs"][0]["tool"]["driver"]["rules"][0]["help"]["markdown"];
    assert!(help.as_str().is_some_and(|h| h.contains("img")), "{help}");
    assert_markdown_inert(help.as_str().unwrap());
}

/// SARIF's plain-text messages: a `[text](id)` or `[text](url)` from an
/// input would become a link in a viewer; every bracket that did not come
/// from coroner itself is escaped.
#[test]
fn sarif_messages_hold_no_embedded_link_from_an_input() {
    let dir = Scratch::new("inert-sarif");
    let rules = evil_rules(&dir);
    let name = "[n](0)[m](http:e.example).zst";
    std::fs::write(
        dir.path("a.log"),
        "boom [click](0) [x](http://evil.example/) \\[y](1) ]]\n",
    )
    .unwrap();
    let zst = zstd::encode_all(format!("{OOM_LINE}\n").repeat(500).as_bytes(), 3).unwrap();
    std::fs::write(dir.path(name), &zst[..zst.len() / 2]).unwrap();
    let sarif = sarif_of(&dir.0, &rules, &["a.log", name]);
    let mut texts = Vec::new();
    collect_texts(&sarif, &mut texts);
    let messages: Vec<&String> = texts.iter().filter(|t| t.contains("click")).collect();
    assert!(
        !messages.is_empty(),
        "no message carries the log line: {sarif}"
    );
    assert!(texts.iter().any(|t| t.contains("[n\\](0)")), "{texts:?}");
    // The only link coroner writes: to the finding that explains a
    // consequence.
    let own = regex::Regex::new(r"\(a consequence of \[[a-z0-9-]+\]\(0\)\)$").unwrap();
    for text in &texts {
        let text = own.replace(text, "");
        assert_eq!(
            coroner_report::sarif::unescaped_bracket(&text),
            None,
            "unescaped bracket in {text:?}"
        );
    }
}

/// The SARIF report of `inputs` (in `cwd`) with the rules under `rules`.
fn sarif_of(cwd: &Path, rules: &str, inputs: &[&str]) -> serde_json::Value {
    let mut args: Vec<&OsStr> = vec![
        "--format".as_ref(),
        "sarif".as_ref(),
        "--rules".as_ref(),
        rules.as_ref(),
    ];
    args.extend(inputs.iter().map(OsStr::new));
    let out = analyze(&args, cwd);
    serde_json::from_slice(&out.stdout).unwrap()
}

/// Every `text` of a message or a description, depth first.
fn collect_texts(value: &serde_json::Value, out: &mut Vec<String>) {
    match value {
        serde_json::Value::Object(map) => {
            for (key, v) in map {
                match (key.as_str(), v) {
                    ("text", serde_json::Value::String(s)) => out.push(s.clone()),
                    // Snippets are the log's own bytes, not messages.
                    ("snippet", _) => {}
                    _ => collect_texts(v, out),
                }
            }
        }
        serde_json::Value::Array(items) => items.iter().for_each(|v| collect_texts(v, out)),
        _ => {}
    }
}

fn assert_markdown_inert(md: &str) {
    use pulldown_cmark::{Event, Options, Parser, Tag, TagEnd};
    let mut headings = 0;
    let mut in_block = false;
    let parser = Parser::new_ext(md, Options::ENABLE_TABLES | Options::ENABLE_STRIKETHROUGH);
    for (event, range) in parser.into_offset_iter() {
        let start = range.start;
        let source = &md[range];
        match event {
            Event::Html(h) | Event::InlineHtml(h) => {
                let rest = coroner_report::markdown::OWN_HTML_TAGS
                    .iter()
                    .fold(h.to_string(), |t, o| t.replace(o, ""));
                assert!(
                    rest.trim().is_empty() || rest.trim() == "Python traceback",
                    "HTML {h:?} in\n{md}"
                );
            }
            Event::Start(Tag::Link { .. }) | Event::Start(Tag::Image { .. }) => {
                panic!("a link in\n{md}")
            }
            Event::Start(Tag::Heading { .. }) => headings += 1,
            Event::Start(Tag::CodeBlock(_)) => in_block = true,
            Event::End(TagEnd::CodeBlock) => in_block = false,
            Event::Text(t) if !in_block => {
                // GitHub links bare URLs and addresses in text.
                let at = source
                    .match_indices('@')
                    .any(|(i, _)| !md[..start + i].ends_with('\\'));
                for bare in ["http://", "www."] {
                    assert!(!source.contains(bare) && !at, "autolink {t:?} in\n{md}");
                }
            }
            _ => {}
        }
    }
    assert!(headings <= 1, "{headings} headings in\n{md}");
}
