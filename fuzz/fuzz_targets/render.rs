//! Arbitrary bytes as a log and its file name, through every renderer and
//! then the output guard, as `coroner analyze --format F` writes them.
//!
//! The first byte gives the length of the file name (the bytes after it,
//! `/` and NUL replaced), the rest is the log. Two reports are rendered:
//! the pipeline's own report of that file, and a report of a real run
//! (root cause, evidence, a Python traceback, remediation, other findings,
//! an input error, notes) with every text an input fills replaced by
//! pieces of the log and the name, made inert as the pipeline makes them
//! when they enter a report (so that every escaping path is reached
//! whether or not a rule fires).
//!
//! Invariants, for every format:
//! - no character that acts on a terminal (C0 controls but LF and TAB,
//!   DEL, C1 controls, bidi overrides and isolates, invisible marks),
//!   before the guard as after it, and none in any decoded JSON string or
//!   XML value either;
//! - after the guard, no line a CI runner obeys: none that starts with
//!   `::` after white space but the `github` format's own annotations, and
//!   no `##[`, `##vso[` (`##`, ASCII letters, `[`) anywhere.
//!
//! And per format: `json`, `jsonl` and `sarif` parse (SARIF's URIs are
//! percent-encoded, its plain texts escape square brackets); `junit`
//! parses as XML; every `github` line is either an annotation whose
//! properties are only `file`, `line` and `title` or a plain `coroner:`
//! line; `markdown` (and SARIF's rule help), parsed as
//! CommonMark with GitHub's extensions, holds no HTML but coroner's own
//! tags, no link, image, emphasis, strikethrough, math, footnote, task,
//! quote or rule, no heading but coroner's, exactly coroner's lists, bold
//! labels and code blocks, table rows of six cells, and no text that
//! GitHub would autolink (`://`, `www.`, an unescaped `@`).
#![no_main]

use coroner_model::{
    inert_commands_output, inert_output, shown_bytes, Evidence, InputError, Report, Severity,
};
use coroner_report::{PathBase, Style};
#[path = "shared/builtin_rules.rs"]
mod builtin_rules;

use builtin_rules::rules;
use libfuzzer_sys::fuzz_target;
use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

/// A real run: a Python exception that ends torchrun's workers, with
/// consequences, a traceback and remediation.
const TEMPLATE_LOG: &[u8] = include_bytes!("../../fixtures/real-gpu/logs/torchrun_raise.log");

/// This process's scratch directory.
fn scratch() -> &'static Path {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        std::env::temp_dir().join(format!("coroner-fuzz-render-{}", std::process::id()))
    })
}

/// The report of one file named `name` holding `log`, analysed alone.
fn analyze(name: &[u8], log: &[u8]) -> Report {
    let dir = scratch().join("input");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("scratch directory");
    let file = dir.join(OsStr::from_bytes(name));
    std::fs::write(&file, log).expect("scratch file");
    // A name that is not UTF-8 is found by walking its directory.
    let path = match file.to_str() {
        Some(p) => p.to_owned(),
        None => dir.to_string_lossy().into_owned(),
    };
    coroner_analyze::analyze(&[path], rules())
}

fn template() -> &'static Report {
    static TEMPLATE: OnceLock<Report> = OnceLock::new();
    TEMPLATE.get_or_init(|| {
        let report = analyze(b"torchrun_raise.log", TEMPLATE_LOG);
        assert!(report.findings.len() > 2, "the template has findings");
        assert!(
            coroner_report::root_finding(&report).is_some_and(|f| f.traceback.is_some()),
            "the template has a traceback"
        );
        report
    })
}

/// Pieces of input text, each made inert as the pipeline makes a line
/// (one line) or a rule's text (its own line breaks kept).
struct Pieces {
    lines: Vec<String>,
    name: String,
    next: usize,
}

impl Pieces {
    fn new(name: &[u8], log: &[u8]) -> Pieces {
        let mut lines: Vec<String> = log.split(|&b| b == b'\n').map(shown_bytes).collect();
        lines.retain(|l| !l.is_empty());
        if lines.is_empty() {
            lines.push(shown_bytes(name));
        }
        Pieces {
            lines,
            name: shown_bytes(name),
            next: 0,
        }
    }

    /// The next line.
    fn line(&mut self) -> String {
        let line = self.lines[self.next % self.lines.len()].clone();
        self.next += 1;
        line
    }

    /// The next two lines as one text with a line break, as a user's rule
    /// file can write its message or remediation.
    fn text(&mut self) -> String {
        let (a, b) = (self.line(), self.line());
        // Rule text keeps its line breaks and nothing else that acts.
        inert_output(&format!("{a}\n{b}"), false).into_owned()
    }
}

/// The template with every input-filled text replaced by `pieces`.
fn planted(pieces: &mut Pieces) -> Report {
    let mut report = template().clone();
    let name = pieces.name.clone();
    let plant_evidence = |e: &mut Evidence, pieces: &mut Pieces| {
        e.input = name.clone();
        e.text = pieces.line();
        if let Some(context) = &mut e.context {
            for l in context.before.iter_mut().chain(context.after.iter_mut()) {
                *l = pieces.line();
            }
            context.span = None;
        }
    };
    for f in &mut report.findings {
        f.title = pieces.text();
        f.message = pieces.text();
        f.first_seen.input = name.clone();
        for e in &mut f.evidence {
            plant_evidence(e, pieces);
        }
        let names: Vec<String> = f.captures.iter().map(|(name, _)| name.clone()).collect();
        for name in names {
            f.captures.insert(name, pieces.line());
        }
        f.remediation = vec![pieces.text(), pieces.text()].into();
        f.references = vec![pieces.line(), "https://example.com/a_b".to_owned()].into();
        if let Some(traceback) = &mut f.traceback {
            for exception in &mut traceback.exceptions {
                exception.exception = pieces.line();
                exception.message = pieces.line();
                for frame in &mut exception.frames {
                    frame.file = pieces.line();
                    frame.function = pieces.line();
                    frame.code = Some(pieces.line());
                }
            }
        }
    }
    let root = &mut report.root_cause;
    root.summary = pieces.text();
    for e in &mut root.evidence {
        plant_evidence(e, pieces);
    }
    root.remediation = vec![pieces.text(), pieces.line(), pieces.text()];
    root.host = Some(pieces.line());
    for input in &mut report.inputs {
        input.path = name.clone();
        input.errors.push(InputError {
            message: pieces.line(),
            offset: Some(7),
        });
        input.notes.push(pieces.line());
    }
    report.notes.push(pieces.text());
    for unread in &mut report.unread {
        unread.template = pieces.line();
        plant_evidence(&mut unread.first, pieces);
    }
    report
}

/// A character that acts on a terminal or hides or reorders text.
fn acts(c: char) -> bool {
    (c < ' ' && c != '\n' && c != '\t')
        || ('\u{7f}'..='\u{9f}').contains(&c)
        || matches!(
            c,
            '\u{61c}' | '\u{200b}'..='\u{200f}' | '\u{2028}'..='\u{202e}' | '\u{2060}'..='\u{2069}' | '\u{feff}'
        )
}

fn assert_inert_text(what: &str, text: &str) {
    // Every such character has a byte below 0x20, 0x7f, or a lead byte of
    // 0xc2, 0xd8, 0xe2 or 0xef in UTF-8.
    let suspect = |b: u8| {
        (b < 0x20 && b != b'\n' && b != b'\t') || matches!(b, 0x7f | 0xc2 | 0xd8 | 0xe2 | 0xef)
    };
    if !text.bytes().any(suspect) {
        return;
    }
    if let Some(c) = text.chars().find(|&c| acts(c)) {
        panic!("{what} holds {c:?}:\n{text}");
    }
}

/// Where a runner's older command syntax (`##`, letters, `[`) is in `line`.
fn legacy_command(line: &str) -> bool {
    line.match_indices('#').any(|(at, _)| {
        line[at + 1..].strip_prefix('#').is_some_and(|rest| {
            rest.trim_start_matches(|c: char| c.is_ascii_alphabetic())
                .starts_with('[')
        })
    })
}

/// The `github` format's own annotation: `::error`, `::warning` or
/// `::notice`, properties `file`, `line` and `title` only, then `::` and
/// the message, read as the runner reads it.
fn own_annotation(line: &str) -> bool {
    let Some(rest) = line.strip_prefix("::") else {
        return false;
    };
    let Some(end) = rest.find("::") else {
        return false;
    };
    let info = &rest[..end];
    let (command, properties) = info.split_once(' ').unwrap_or((info, ""));
    if !matches!(command, "error" | "warning" | "notice") {
        return false;
    }
    let mut seen = Vec::new();
    properties.split(',').filter(|p| !p.is_empty()).all(|p| {
        let Some((key, value)) = p.split_once('=') else {
            return false;
        };
        let fresh = !seen.contains(&key);
        seen.push(key);
        fresh && matches!(key, "file" | "line" | "title") && !value.contains(':')
    })
}

/// What every guarded output must hold: nothing that acts, no command.
fn assert_guarded(format: &str, text: &str) {
    assert_inert_text(format, text);
    for line in text.split('\n') {
        let trimmed = line.trim_start_matches(char::is_whitespace);
        if format == "github" {
            assert!(
                own_annotation(line) || line.starts_with("coroner: ") || line.is_empty(),
                "github: a line that is neither an annotation nor coroner's: {line:?}"
            );
        } else {
            assert!(
                !trimmed.starts_with("::"),
                "{format}: a workflow command: {line:?}"
            );
        }
        assert!(
            !line.contains("##") || !legacy_command(&line.to_ascii_lowercase()),
            "{format}: an older workflow command: {line:?}"
        );
    }
}

/// Every string in `value`, keys included, is inert; SARIF's URIs are
/// percent-encoded.
fn assert_json_inert(format: &str, value: &serde_json::Value) {
    match value {
        serde_json::Value::String(s) => assert_inert_text(format, s),
        serde_json::Value::Array(all) => all.iter().for_each(|v| assert_json_inert(format, v)),
        serde_json::Value::Object(map) => {
            for (key, v) in map {
                assert_inert_text(format, key);
                if key == "uri" {
                    let uri = v.as_str().unwrap_or_default();
                    let path = uri.strip_prefix("file://").unwrap_or(uri);
                    assert!(
                        path.bytes().all(|b| b.is_ascii_alphanumeric()
                            || matches!(b, b'-' | b'.' | b'_' | b'~' | b'/' | b'%')),
                        "{format}: a URI that is not percent-encoded: {uri:?}"
                    );
                }
                assert_json_inert(format, v);
            }
        }
        _ => {}
    }
}

/// Every plain text of a SARIF log (all `text` values but snippets, which
/// are the log's own bytes) escapes its square brackets, but for the
/// report's own link from a consequence to its cause.
fn assert_no_embedded_link(value: &serde_json::Value) {
    match value {
        serde_json::Value::Array(all) => all.iter().for_each(assert_no_embedded_link),
        serde_json::Value::Object(map) => {
            for (key, v) in map {
                match (key.as_str(), v) {
                    ("snippet", _) => {}
                    ("text", serde_json::Value::String(text)) => {
                        let text = match text.rfind(" (a consequence of [") {
                            Some(at) if text.ends_with("](0))") => &text[..at],
                            _ => text.as_str(),
                        };
                        assert_eq!(
                            coroner_report::sarif::unescaped_bracket(text),
                            None,
                            "sarif: an unescaped bracket in {text:?}"
                        );
                    }
                    _ => assert_no_embedded_link(v),
                }
            }
        }
        _ => {}
    }
}

fn parse_json(format: &str, text: &str) -> serde_json::Value {
    match serde_json::from_str(text) {
        Ok(v) => v,
        Err(e) => panic!("{format} is not JSON ({e}):\n{text}"),
    }
}

/// What coroner's Markdown may hold.
struct Expected {
    headings: usize,
    strong: usize,
    items: usize,
    code_blocks: usize,
    /// The links coroner makes: a rule's plain `https://` references.
    links: Vec<String>,
}

fn assert_markdown_inert(what: &str, md: &str, expected: &Expected) {
    use pulldown_cmark::{Event, Options, Parser, Tag, TagEnd};
    let options = Options::ENABLE_TABLES
        | Options::ENABLE_STRIKETHROUGH
        | Options::ENABLE_FOOTNOTES
        | Options::ENABLE_TASKLISTS
        | Options::ENABLE_MATH
        | Options::ENABLE_GFM;
    let ours = coroner_report::markdown::OWN_HTML_TAGS;
    let (mut headings, mut strong, mut items, mut code_blocks) = (0, 0, 0, 0);
    let mut in_code = false;
    let mut in_link = false;
    let mut cells = 0;
    for (event, range) in Parser::new_ext(md, options).into_offset_iter() {
        let start = range.start;
        let source = &md[range];
        match event {
            Event::Html(h) | Event::InlineHtml(h) => {
                let rest = ours.iter().fold(h.to_string(), |t, o| t.replace(o, ""));
                assert!(
                    rest.trim().is_empty() || rest.trim() == "Python traceback",
                    "{what}: HTML {h:?} in\n{md}"
                );
            }
            Event::Start(Tag::Heading { .. }) => headings += 1,
            Event::Start(Tag::Strong) => strong += 1,
            Event::Start(Tag::Item) => items += 1,
            Event::Start(Tag::CodeBlock(_)) => {
                code_blocks += 1;
                in_code = true;
            }
            Event::End(TagEnd::CodeBlock) => in_code = false,
            Event::Start(Tag::TableHead | Tag::TableRow) => cells = 0,
            Event::Start(Tag::TableCell) => cells += 1,
            Event::End(TagEnd::TableHead | TagEnd::TableRow) => {
                assert_eq!(cells, 6, "{what}: a table row of {cells} cells in\n{md}");
            }
            Event::Start(Tag::Link { dest_url, .. })
                if expected.links.iter().any(|l| **l == *dest_url) =>
            {
                in_link = true;
            }
            Event::End(TagEnd::Link) => in_link = false,
            Event::Start(
                tag @ (Tag::Link { .. }
                | Tag::Image { .. }
                | Tag::Emphasis
                | Tag::Strikethrough
                | Tag::BlockQuote(_)
                | Tag::FootnoteDefinition(_)),
            ) => panic!("{what}: {tag:?} in\n{md}"),
            Event::InlineMath(_)
            | Event::DisplayMath(_)
            | Event::FootnoteReference(_)
            | Event::TaskListMarker(_)
            | Event::Rule => panic!("{what}: {event:?} in\n{md}"),
            Event::Text(t) if !in_code && !in_link => {
                // GitHub links bare URLs and addresses in text: a `:`
                // before `//` and an `@` must be escaped, `www.` broken.
                let lower = source.to_ascii_lowercase();
                let unescaped = |pattern: &str| {
                    source
                        .match_indices(pattern)
                        .any(|(i, _)| !md[..start + i].ends_with('\\'))
                };
                assert!(
                    !unescaped("://") && !unescaped("@") && !lower.contains("www."),
                    "{what}: autolink {t:?} in\n{md}"
                );
            }
            _ => {}
        }
    }
    assert_eq!(headings, expected.headings, "{what}: headings in\n{md}");
    assert_eq!(strong, expected.strong, "{what}: bold labels in\n{md}");
    assert_eq!(items, expected.items, "{what}: list items in\n{md}");
    assert_eq!(
        code_blocks, expected.code_blocks,
        "{what}: code blocks in\n{md}"
    );
}

fn check(report: &Report, style: Style) {
    let base = PathBase::new(scratch());
    let mut jsonl: String = report
        .findings
        .iter()
        .map(coroner_report::jsonl::finding)
        .collect();
    jsonl.push_str(&coroner_report::jsonl::verdict(report));
    let outputs = [
        ("human", coroner_report::human::render(report, style)),
        ("json", coroner_report::json::render(report)),
        ("jsonl", jsonl),
        ("sarif", coroner_report::sarif::render(report, &base)),
        ("github", coroner_report::github::render(report, &base)),
        ("markdown", coroner_report::markdown::render(report)),
        (
            "junit",
            coroner_report::junit::render(report, Severity::Error),
        ),
    ];
    for (format, text) in outputs {
        let guarded = if format == "github" {
            inert_commands_output(&text)
        } else {
            inert_output(&text, false)
        };
        // Input text was made inert as it entered the report: the renderers
        // add nothing that acts, before the guard (which changed nothing
        // if it gave the text back as it was).
        if matches!(guarded, std::borrow::Cow::Owned(_)) {
            assert_inert_text(format, &text);
        }
        assert_guarded(format, &guarded);
        match format {
            "json" => assert_json_inert(format, &parse_json(format, &guarded)),
            "jsonl" => {
                for line in guarded.lines() {
                    assert_json_inert(format, &parse_json(format, line));
                }
            }
            "sarif" => {
                let sarif = parse_json(format, &guarded);
                assert_json_inert(format, &sarif);
                assert_no_embedded_link(&sarif);
                let rules = sarif["runs"][0]["tool"]["driver"]["rules"].as_array();
                for rule in rules.into_iter().flatten() {
                    let help = rule["help"]["markdown"].as_str().unwrap_or_default();
                    let id = rule["id"].as_str().unwrap_or_default();
                    let f = report.findings.iter().find(|f| f.rule == id);
                    let steps = f.map_or(0, |f| f.remediation.len());
                    let references = f.map_or(&[][..], |f| &f.references[..]);
                    let expected = Expected {
                        headings: 0,
                        strong: usize::from(!references.is_empty()),
                        items: steps + references.len(),
                        code_blocks: 0,
                        links: references.to_vec(),
                    };
                    assert_markdown_inert("sarif help", help, &expected);
                }
            }
            "junit" => {
                let doc = match roxmltree::Document::parse(&guarded) {
                    Ok(doc) => doc,
                    Err(e) => panic!("junit is not XML ({e}):\n{guarded}"),
                };
                for node in doc.descendants() {
                    if let Some(t) = node.text() {
                        assert_inert_text(format, t);
                    }
                    for a in node.attributes() {
                        assert_inert_text(format, a.value());
                    }
                }
            }
            "markdown" => {
                let root = coroner_report::root_finding(report);
                let others = coroner_report::other_findings(report).len();
                let errors: usize = report.inputs.iter().map(|i| i.errors.len()).sum();
                let remediation = report.root_cause.remediation.len();
                let evidence = !report.root_cause.evidence.is_empty();
                let traceback = root.is_some_and(|f| f.traceback.is_some());
                let expected = Expected {
                    headings: 1,
                    strong: usize::from(evidence)
                        + usize::from(remediation > 0)
                        + usize::from(others > 0)
                        + usize::from(errors > 0),
                    items: remediation + errors + report.notes.len(),
                    code_blocks: usize::from(evidence) + usize::from(traceback),
                    links: Vec::new(),
                };
                assert_markdown_inert(format, &guarded, &expected);
            }
            _ => {}
        }
    }
}

/// A file name from `bytes`: no `/`, no NUL, never `.` or `..` or empty.
fn file_name(bytes: &[u8]) -> Vec<u8> {
    let mut name: Vec<u8> = bytes
        .iter()
        .map(|&b| if b == b'/' || b == 0 { b'_' } else { b })
        .collect();
    if name.is_empty() || name == b"." || name == b".." {
        name.insert(0, b'x');
    }
    name
}

fuzz_target!(|data: &[u8]| {
    let Some((&first, rest)) = data.split_first() else {
        return;
    };
    let len = usize::from(first % 48).min(rest.len());
    let (name, log) = rest.split_at(len);
    let name = file_name(name);
    let style = Style {
        color: false,
        width: 40 + usize::from(first) % 161,
        verbose: first & 1 == 1,
    };
    let report = analyze(&name, log);
    check(&report, style);
    let mut pieces = Pieces::new(&name, log);
    check(&planted(&mut pieces), style);
});
