//! A validated, compiled rule.

use crate::always_set::always_set;
use crate::condition::Condition;
use crate::error::{RuleError, RuleErrorKind};
use crate::patterns::Patterns;
use crate::schema::{ExampleSpec, RuleFile};
use coroner_model::{ActionKind, Category, InputKind, Role, Severity};
use regex::{Regex, RegexBuilder};
use std::collections::BTreeSet;
use std::sync::OnceLock;
use toml::Spanned;

/// Compiled regexes may not exceed this many bytes of program, so that a
/// rule from an untrusted directory cannot exhaust memory.
const REGEX_SIZE_LIMIT: usize = 1 << 20;

/// A rule ready to match.
#[derive(Debug, Clone)]
pub struct Rule {
    /// Kebab-case id; equals the file stem.
    pub id: String,
    /// One-line title.
    pub title: String,
    /// Taxonomy category.
    pub category: Category,
    /// Severity of a match.
    pub severity: Severity,
    /// Cause, symptom or context.
    pub role: Role,
    /// Message template with `{capture}` placeholders.
    pub message: String,
    /// Ordered remediation steps.
    pub remediation: coroner_model::RuleText,
    /// Links and document names.
    pub references: coroner_model::RuleText,
    /// Ids of rules whose matches on the same line this one replaces.
    pub supersedes: Vec<String>,
    /// Dropped on a line that any other rule matched.
    pub fallback: bool,
    /// Categories of other findings in the incident that this rule's
    /// finding explains (their consequences, listed as symptoms of it).
    pub explains: Vec<Category>,
    /// Its findings feed correlation (a rank's GPU address) and are left
    /// out of the report.
    pub internal: bool,
    /// A warning that names the root cause, with low confidence, when
    /// nothing of error severity is found.
    pub sole_sign: bool,
    /// A failure named only in general terms: any specific cause found in
    /// the incident is named root cause before it.
    pub generic: bool,
    /// It says only that the process stopped itself: a cause found before
    /// it in the same input, however general, is named root cause first.
    pub yields_to_earlier: bool,
    /// It reads a launcher's account of which rank failed first: its rank
    /// is the root cause's when their categories agree.
    pub first_failure: bool,
    /// Its category is the usual reading of the line, not a record of it:
    /// as root cause, unconfirmed, it has medium confidence at most.
    pub presumed: bool,
    /// Its match counts only within the last this many lines of its input.
    pub tail_lines: Option<u64>,
    /// What to do with the job and the node after this failure: the
    /// file's `action`, else the category's.
    pub action: ActionKind,
    /// Path of the rule file (relative to the repository for built-ins).
    pub source: String,
    /// The rule file's text.
    pub text: String,
    /// Firing and quiet examples.
    pub examples: Vec<ExampleSpec>,
    pub(crate) pattern: Pattern,
}

/// The compiled `[match]` table.
#[derive(Debug, Clone)]
pub(crate) struct Pattern {
    pub literals: Vec<String>,
    pub literals_match_case: bool,
    /// Input kinds the rule applies to; empty for all.
    pub kinds: Vec<InputKind>,
    pub any: Vec<LazyRegex>,
    pub all: Vec<LazyRegex>,
    pub not: Vec<LazyRegex>,
    pub window: u32,
    /// Comparisons between captures that a complete match must satisfy.
    pub when: Vec<Condition>,
    /// Patterns for the lines just before the anchor.
    pub before: Vec<LazyRegex>,
    /// Whether a match counts only when one of `before` matched.
    pub before_required: bool,
}

/// How a rule's regexes are compiled.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Compile {
    /// All at once, reporting every error: rules from users.
    Now,
    /// Each the first time a line needs it: the built-in rules, which the
    /// test suite compiles and validates with [`Compile::Now`]. Most of a
    /// run's regexes are never needed (no line holds their literals), and
    /// compiling them all would dominate the start-up of every run.
    OnFirstUse,
}

/// A rule's regex, compiled now or on first use.
#[derive(Debug, Clone)]
pub(crate) struct LazyRegex {
    source: String,
    compiled: OnceLock<Option<Regex>>,
}

impl LazyRegex {
    fn ready(source: &str, regex: Regex) -> LazyRegex {
        LazyRegex {
            source: source.to_owned(),
            compiled: OnceLock::from(Some(regex)),
        }
    }

    fn deferred(source: &str) -> LazyRegex {
        LazyRegex {
            source: source.to_owned(),
            compiled: OnceLock::new(),
        }
    }

    /// The compiled regex; `None` only for a deferred pattern that does not
    /// compile, which then never matches.
    pub(crate) fn get(&self) -> Option<&Regex> {
        self.compiled
            .get_or_init(|| build_regex(&self.source).ok())
            .as_ref()
    }

    /// The named captures (trimmed) of the first match in `text`, and the
    /// byte range of the whole match.
    pub(crate) fn captures(&self, text: &str) -> Option<(Captures, (usize, usize))> {
        let re = self.get()?;
        let caps = re.captures(text)?;
        let whole = caps.get(0)?;
        let named = re
            .capture_names()
            .flatten()
            .filter_map(|name| {
                caps.name(name)
                    .map(|m| (name.to_owned(), m.as_str().trim().to_owned()))
            })
            .collect();
        Some((named, (whole.start(), whole.end())))
    }
}

/// Named captures, in pattern order.
pub(crate) type Captures = Vec<(String, String)>;

/// Adds the captures of `from` whose names `into` does not have yet.
pub(crate) fn merge_captures(into: &mut Captures, from: Captures) {
    for (k, v) in from {
        if !into.iter().any(|(existing, _)| *existing == k) {
            into.push((k, v));
        }
    }
}

pub(crate) fn build_regex(source: &str) -> Result<Regex, regex::Error> {
    RegexBuilder::new(source)
        .size_limit(REGEX_SIZE_LIMIT)
        .dfa_size_limit(REGEX_SIZE_LIMIT)
        .build()
}

impl Rule {
    /// Fills `{name}` placeholders of the message from `captures`. Text
    /// between `[[` and `]]` appears only when every placeholder in it has
    /// a non-blank value; validation makes sure a placeholder outside them
    /// is set by every match.
    pub fn render_message(&self, captures: &[(String, String)]) -> String {
        fill_message(&self.message, |name| {
            captures
                .iter()
                .find(|(k, _)| k == name)
                .map(|(_, v)| v.as_str())
        })
    }

    /// The literals of the prefilter.
    pub fn literals(&self) -> &[String] {
        &self.pattern.literals
    }

    /// Lines the rule looks at before its anchor, for [`Rule::capture_before`].
    pub const LOOK_BACK: usize = 2;

    /// Adds to `captures` those of the rule's `before` patterns on `lines`,
    /// the lines just before the anchor, nearest first (at most
    /// [`Rule::LOOK_BACK`]): for each pattern, the nearest line it matches.
    /// Names already captured keep their values. Returns whether the match
    /// counts: `false` only for a rule whose `before` is required and
    /// matched no line.
    pub fn capture_before<'t>(
        &self,
        lines: impl Iterator<Item = &'t str> + Clone,
        captures: &mut Vec<(String, String)>,
    ) -> bool {
        let mut matched = false;
        for re in &self.pattern.before {
            if let Some((found, _)) = lines
                .clone()
                .take(Self::LOOK_BACK)
                .find_map(|l| re.captures(l))
            {
                merge_captures(captures, found);
                matched = true;
            }
        }
        matched || !self.pattern.before_required
    }

    /// Whether the rule has patterns for the lines before its anchor.
    pub fn looks_back(&self) -> bool {
        !self.pattern.before.is_empty()
    }

    /// Whether the rule's `when` conditions hold for a complete match's
    /// captures.
    pub(crate) fn conditions_hold(&self, captures: &[(String, String)]) -> bool {
        self.pattern.when.iter().all(|c| c.holds(captures))
    }

    /// How many lines after the anchor the rule looks at.
    pub fn window(&self) -> u32 {
        self.pattern.window
    }

    /// Whether the rule applies to inputs of `kind`.
    /// A rule without `kinds` applies to every text kind; the summaries
    /// of core dumps are read only by rules that name their kind.
    pub fn applies_to(&self, kind: InputKind) -> bool {
        (self.pattern.kinds.is_empty() && kind.is_text()) || self.pattern.kinds.contains(&kind)
    }

    /// The input kind the rule's examples are read as.
    pub fn example_kind(&self) -> InputKind {
        self.pattern
            .kinds
            .first()
            .copied()
            .unwrap_or(InputKind::Log)
    }
}

#[cfg(test)]
fn fill_placeholders<'a>(
    template: &str,
    mut lookup: impl FnMut(&str) -> Option<&'a str>,
) -> String {
    let mut out = Filled::default();
    out.placeholders(template, &mut lookup);
    out.text
}

/// Longest message a rule's placeholders are filled into, in bytes: a
/// message that repeats a long capture stops here, ended with `…`.
pub const MAX_MESSAGE_BYTES: usize = 4096;

/// A message being filled, at most [`MAX_MESSAGE_BYTES`] long.
#[derive(Default)]
struct Filled {
    text: String,
    cut: bool,
}

impl Filled {
    /// Appends as much of `s` as fits.
    fn push(&mut self, s: &str) {
        let room = MAX_MESSAGE_BYTES.saturating_sub(self.text.len());
        if s.len() <= room {
            self.text.push_str(s);
            return;
        }
        let mut at = room;
        while !s.is_char_boundary(at) {
            at -= 1;
        }
        self.text.push_str(&s[..at]);
        self.cut = true;
    }

    /// Appends `template` with its `{name}` placeholders filled.
    fn placeholders<'a>(
        &mut self,
        template: &str,
        lookup: &mut impl FnMut(&str) -> Option<&'a str>,
    ) {
        let mut rest = template;
        while let Some(open) = rest.find('{') {
            self.push(&rest[..open]);
            let after = &rest[open + 1..];
            match after.find('}') {
                Some(close) if is_name(&after[..close]) => {
                    self.push(lookup(&after[..close]).unwrap_or_default());
                    rest = &after[close + 1..];
                }
                Some(_) => {
                    self.push("{");
                    rest = after;
                }
                None => {
                    rest = &rest[open..];
                    break;
                }
            }
            if self.cut {
                return;
            }
        }
        self.push(rest);
    }

    fn finish(mut self) -> String {
        if self.cut {
            self.text.push('…');
        }
        self.text
    }
}

/// [`fill_placeholders`], keeping each `[[optional part]]` only when all of
/// its placeholders have a value (the brackets themselves never show).
fn fill_message<'a>(template: &str, lookup: impl Fn(&str) -> Option<&'a str>) -> String {
    let mut out = Filled::default();
    let mut lookup = lookup;
    let mut rest = template;
    while let Some(open) = rest.find("[[") {
        out.placeholders(&rest[..open], &mut lookup);
        let after = &rest[open + 2..];
        let Some(close) = after.find("]]") else {
            out.placeholders(&rest[open..], &mut lookup);
            return out.finish();
        };
        let part = &after[..close];
        if placeholders(part)
            .iter()
            .all(|name| lookup(name).is_some_and(|v| !v.trim().is_empty()))
        {
            out.placeholders(part, &mut lookup);
        }
        rest = &after[close + 2..];
    }
    out.placeholders(rest, &mut lookup);
    out.finish()
}

/// The captures every complete match sets: those every `any` pattern
/// always sets, those any `all` pattern always sets (every one of them
/// must match), and those a `when` condition needs (a match without them
/// is dropped).
fn always_set_by_every_match(
    any: &[LazyRegex],
    all: &[LazyRegex],
    when: &[Condition],
) -> BTreeSet<String> {
    let mut any = any.iter().map(|p| always_set(&p.source));
    let mut set = any.next().unwrap_or_default();
    for other in any {
        set = set.intersection(&other).cloned().collect();
    }
    for p in all {
        set.extend(always_set(&p.source));
    }
    for c in when {
        set.extend(c.captures().map(str::to_owned));
    }
    set
}

/// The placeholders of `template` outside `[[ ... ]]`: those printed
/// whatever the match.
fn required_placeholders(template: &str) -> Vec<String> {
    let mut outside = String::new();
    let mut rest = template;
    while let Some(open) = rest.find("[[") {
        outside.push_str(&rest[..open]);
        match rest[open + 2..].find("]]") {
            Some(close) => rest = &rest[open + 2 + close + 2..],
            None => {
                outside.push_str(&rest[open..]);
                rest = "";
            }
        }
    }
    outside.push_str(rest);
    placeholders(&outside)
}

fn placeholders(template: &str) -> Vec<String> {
    let mut found = Vec::new();
    let mut rest = template;
    while let Some(open) = rest.find('{') {
        let after = &rest[open + 1..];
        match after.find('}') {
            Some(close) if is_name(&after[..close]) => {
                found.push(after[..close].to_owned());
                rest = &after[close + 1..];
            }
            Some(_) => rest = after,
            None => break,
        }
    }
    found
}

fn is_name(s: &str) -> bool {
    !s.is_empty() && s.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
}

fn is_kebab(s: &str) -> bool {
    !s.is_empty()
        && !s.starts_with('-')
        && !s.ends_with('-')
        && !s.contains("--")
        && s.chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
}

/// Parses and validates one rule file. `stem` is the file name without
/// `.toml`; every problem found is returned, not only the first.
pub fn parse_rule(path: &str, stem: &str, text: &str) -> Result<Rule, Vec<RuleError>> {
    parse_rule_with(path, stem, text, Compile::Now, Patterns::builtin())
}

/// [`parse_rule`], compiling the regexes as `compile` says and reading
/// `(?&name)` from `patterns`. With [`Compile::OnFirstUse`] regex errors
/// and placeholders naming no capture group are not looked for.
pub fn parse_rule_with(
    path: &str,
    stem: &str,
    text: &str,
    compile: Compile,
    patterns: &Patterns,
) -> Result<Rule, Vec<RuleError>> {
    let when = compile;
    let file: RuleFile =
        toml::from_str(text).map_err(|e| vec![RuleError::syntax(path, text, &e)])?;
    let mut errors = Vec::new();
    let err = |kind, span: std::ops::Range<usize>, msg: String| {
        RuleError::new(kind, path, text, Some(span), msg)
    };

    let id = file.id.get_ref().clone();
    if !is_kebab(&id) {
        errors.push(err(
            RuleErrorKind::BadId,
            file.id.span(),
            format!("rule id `{id}` is not kebab-case"),
        ));
    } else if id != stem {
        errors.push(
            err(
                RuleErrorKind::BadId,
                file.id.span(),
                format!("rule id `{id}` differs from the file name `{stem}.toml`"),
            )
            .with_help("name the file after the rule: <id>.toml"),
        );
    }

    let category = file
        .category
        .get_ref()
        .parse::<Category>()
        .and_then(|c| {
            if c == Category::Unknown {
                Err(coroner_model::UnknownCategory(
                    "unknown` is the answer when no rule matched, not a rule's category (`unknown"
                        .to_owned(),
                ))
            } else {
                Ok(c)
            }
        })
        .map_err(|e| {
            err(
                RuleErrorKind::UnknownCategory,
                file.category.span(),
                e.to_string(),
            )
            .with_help(format!(
                "use one of: {}",
                Category::ALL
                    .iter()
                    .map(|c| c.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            ))
        });
    let severity = file.severity.get_ref().parse::<Severity>().map_err(|e| {
        err(
            RuleErrorKind::UnknownValue,
            file.severity.span(),
            e.to_string(),
        )
    });
    let role = match &file.role {
        None => Ok(Role::Cause),
        Some(r) => match r.get_ref().as_str() {
            "cause" => Ok(Role::Cause),
            "symptom" => Ok(Role::Symptom),
            "context" => Ok(Role::Context),
            other => Err(err(
                RuleErrorKind::UnknownValue,
                r.span(),
                format!("unknown role `{other}` (expected cause, symptom or context)"),
            )),
        },
    };

    let spec = file.matching.get_ref();
    let compile = |list: &[Spanned<String>], errors: &mut Vec<RuleError>| -> Vec<LazyRegex> {
        list.iter()
            .filter_map(|p| {
                let source = match patterns.expand(p.get_ref()) {
                    Ok(source) => source,
                    Err(e) => {
                        errors.push(err(RuleErrorKind::UnknownPattern, p.span(), e));
                        return None;
                    }
                };
                if when == Compile::OnFirstUse {
                    return Some(LazyRegex::deferred(&source));
                }
                build_regex(&source)
                    .map(|re| LazyRegex::ready(&source, re))
                    .map_err(|e| {
                        errors.push(err(
                            RuleErrorKind::BadRegex,
                            p.span(),
                            format!("invalid regex: {}", one_line(&e.to_string())),
                        ))
                    })
                    .ok()
            })
            .collect()
    };
    let any = compile(&spec.any, &mut errors);
    let all = compile(&spec.all, &mut errors);
    let not = compile(&spec.not, &mut errors);
    let before = compile(&spec.before, &mut errors);
    let patterns_compiled = errors.is_empty() && when == Compile::Now;
    if spec.any.is_empty() && spec.all.is_empty() {
        errors.push(err(
            RuleErrorKind::EmptyMatch,
            file.matching.span(),
            "[match] needs at least one pattern in `any` or `all`".to_owned(),
        ));
    }
    if spec.before_required && spec.before.is_empty() {
        errors.push(err(
            RuleErrorKind::EmptyMatch,
            file.matching.span(),
            "`before_required` needs at least one pattern in `before`".to_owned(),
        ));
    }
    if let Some(first) = file.supersedes.first().filter(|_| spec.before_required) {
        errors.push(err(
            RuleErrorKind::Conflict,
            first.span(),
            "a rule with `before_required` supersedes nothing (its match is decided after the rules of its line): name what it explains with `explains`".to_owned(),
        ));
    }
    let literals: Vec<String> = spec
        .literals
        .get_ref()
        .iter()
        .filter(|l| !l.is_empty())
        .cloned()
        .collect();
    if literals.is_empty() {
        errors.push(
            err(
                RuleErrorKind::EmptyMatch,
                spec.literals.span(),
                "`literals` must list at least one non-empty string".to_owned(),
            )
            .with_help("a line is tried against the regexes only if it contains one of the literals (ASCII case is ignored)"),
        );
    }

    let mut kinds = Vec::new();
    for k in &spec.kinds {
        match InputKind::rule_kind(k.get_ref()) {
            Some(kind) => kinds.push(kind),
            None => errors.push(err(RuleErrorKind::UnknownValue, k.span(), {
                let names = InputKind::RULE_KINDS.map(InputKind::as_str);
                let (last, rest) = names.split_last().unwrap_or((&"", &[]));
                format!(
                    "unknown input kind `{}` (expected {} or {last})",
                    k.get_ref(),
                    rest.join(", ")
                )
            })),
        }
    }
    let defined: BTreeSet<String> = if patterns_compiled {
        any.iter()
            .chain(&all)
            .chain(&before)
            .filter_map(LazyRegex::get)
            .flat_map(|r| r.capture_names().flatten().map(str::to_owned))
            .collect()
    } else {
        BTreeSet::new()
    };
    let mut when = Vec::new();
    for text in &spec.when {
        match Condition::parse(text.get_ref()) {
            Ok(c) => {
                for name in c.captures() {
                    if patterns_compiled && !defined.contains(name) {
                        errors.push(err(
                            RuleErrorKind::BadCondition,
                            text.span(),
                            format!("condition names `{name}`, which no pattern captures"),
                        ));
                    }
                }
                when.push(c);
            }
            Err(e) => errors.push(err(RuleErrorKind::BadCondition, text.span(), e.to_string())),
        }
    }
    for name in placeholders(file.message.get_ref()) {
        if patterns_compiled && !defined.contains(&name) {
            errors.push(err(
                RuleErrorKind::UndefinedPlaceholder,
                file.message.span(),
                format!("message placeholder `{{{name}}}` names no capture group"),
            ));
        }
    }
    // Remediation is printed as written: a capture's placeholder there
    // would reach the user unfilled.
    for step in &file.remediation {
        if let Some(name) = placeholders(step).into_iter().find(|n| defined.contains(n)) {
            errors.push(err(
                RuleErrorKind::UndefinedPlaceholder,
                file.message.span(),
                format!("a remediation step names capture `{{{name}}}`, but remediation is not filled from captures"),
            ).with_help("say it without the value, or move it into the message"));
        }
    }
    if patterns_compiled {
        let always = always_set_by_every_match(&any, &all, &when);
        for name in required_placeholders(file.message.get_ref()) {
            if defined.contains(&name) && !always.contains(&name) {
                errors.push(
                    err(
                        RuleErrorKind::UndefinedPlaceholder,
                        file.message.span(),
                        format!("message placeholder `{{{name}}}` is left unset by some match"),
                    )
                    .with_help(format!(
                        "put the words that need it inside [[ ... ]], or capture `{name}` in every pattern of `any` (or in one of `all`)"
                    )),
                );
            }
        }
    }
    for ex in &file.examples {
        for key in ex.captures.keys() {
            if patterns_compiled && !defined.contains(key) {
                errors.push(err(
                    RuleErrorKind::UndefinedPlaceholder,
                    file.id.span(),
                    format!("an example expects capture `{key}`, which no pattern defines"),
                ));
            }
        }
    }
    for (fires, what) in [(true, "firing"), (false, "quiet")] {
        if !file.examples.iter().any(|e| e.fires == fires) {
            errors.push(
                err(
                    RuleErrorKind::MissingExample,
                    file.id.span(),
                    format!("rule `{id}` has no {what} example"),
                )
                .with_help(format!(
                    "add [[examples]] with fires = {fires} and real log text as input"
                )),
            );
        }
    }

    let mut explains = Vec::new();
    for name in &file.explains {
        match name.get_ref().parse::<Category>() {
            Ok(c) if c != Category::Unknown => explains.push(c),
            _ => errors.push(err(
                RuleErrorKind::UnknownCategory,
                name.span(),
                format!(
                    "`explains` names `{}`, which is not a taxonomy category",
                    name.get_ref()
                ),
            )),
        }
    }

    let action = match &file.action {
        None => None,
        Some(name) => match name.get_ref().parse::<ActionKind>() {
            Ok(kind) => Some(kind),
            Err(_) => {
                errors.push(
                    err(
                        RuleErrorKind::UnknownValue,
                        name.span(),
                        format!("`action` is `{}`, which is not an action", name.get_ref()),
                    )
                    .with_help(format!(
                        "use one of: {}",
                        ActionKind::ALL
                            .iter()
                            .map(|k| k.as_str())
                            .collect::<Vec<_>>()
                            .join(", ")
                    )),
                );
                None
            }
        },
    };

    let (category, severity, role) = match (category, severity, role) {
        (Ok(c), Ok(s), Ok(r)) if errors.is_empty() => (c, s, r),
        (c, s, r) => {
            errors.extend(c.err());
            errors.extend(s.err());
            errors.extend(r.err());
            return Err(errors);
        }
    };

    // A rule file is input like any other: its text reaches reports, with
    // its own line breaks but nothing else that could act (and invisible
    // characters as `\uXXXX`, which no placeholder reads as its name).
    let shown = |s: String| coroner_model::inert_output(&s, false).into_owned();
    Ok(Rule {
        id,
        title: shown(file.title),
        category,
        severity,
        role,
        message: shown(file.message.into_inner()),
        remediation: file
            .remediation
            .into_iter()
            .map(shown)
            .collect::<Vec<_>>()
            .into(),
        references: file
            .references
            .into_iter()
            .map(shown)
            .collect::<Vec<_>>()
            .into(),
        supersedes: file
            .supersedes
            .into_iter()
            .map(|s| s.into_inner())
            .collect(),
        fallback: file.fallback,
        explains,
        internal: file.internal,
        sole_sign: file.sole_sign,
        generic: file.generic,
        yields_to_earlier: file.yields_to_earlier,
        first_failure: file.first_failure,
        presumed: file.presumed,
        tail_lines: file.tail_lines,
        action: action.unwrap_or_else(|| category.default_action()),
        source: path.to_owned(),
        text: text.to_owned(),
        examples: file.examples,
        pattern: Pattern {
            literals,
            literals_match_case: spec.literals_match_case,
            kinds,
            any,
            all,
            not,
            window: spec.window,
            when,
            before,
            before_required: spec.before_required,
        },
    })
}

pub(crate) fn one_line(s: &str) -> String {
    s.lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect::<Vec<_>>()
        .join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn optional_parts_show_only_with_all_their_values() {
        let template = "{exception}: {detail}[[ (raised at {file}:{line})]]";
        let with = fill_message(template, |k| match k {
            "exception" => Some("ValueError"),
            "detail" => Some("bad"),
            "file" => Some("a.py"),
            "line" => Some("3"),
            _ => None,
        });
        assert_eq!(with, "ValueError: bad (raised at a.py:3)");
        let without = fill_message(template, |k| match k {
            "exception" => Some("ValueError"),
            "detail" => Some("bad"),
            "file" => Some("a.py"),
            _ => None,
        });
        assert_eq!(without, "ValueError: bad");
    }

    #[test]
    fn placeholders_are_filled_and_missing_ones_print_nothing() {
        let f = fill_placeholders("rank {rank} got {what} {not a name}", |k| {
            (k == "rank").then_some("3")
        });
        assert_eq!(f, "rank 3 got  {not a name}");
    }

    #[test]
    fn a_message_may_not_print_a_capture_some_match_leaves_unset() {
        let rule = |message: &str, any: &str| {
            let text = format!(
                "id = \"r\"\ntitle = \"t\"\ncategory = \"python-error\"\nseverity = \"error\"\n\
                 message = \"{message}\"\n[match]\nliterals = [\"Error\"]\nany = [{any}]\n\
                 [[examples]]\nfires = true\ninput = \"MemoryError\"\n\
                 [[examples]]\nfires = false\ninput = \"y\"\n"
            );
            parse_rule("r.toml", "r", &text)
        };
        let optional = r"'(?P<e>\w+Error)(?::\s*(?P<d>.*))?'";
        assert!(rule("{e}: {d}", optional).is_err());
        assert!(rule("{e}[[: {d}]]", optional).is_ok());
        let one_form_only = r"'(?P<e>\w+Error): (?P<d>.+)', '(?P<e2>\w+Error)$'";
        assert!(rule("{d}", one_form_only).is_err());
    }

    #[test]
    fn a_required_before_needs_patterns_and_counts_only_when_one_matched() {
        let rule = |top: &str, before: &str| {
            let text = format!(
                "id = \"r\"\ntitle = \"t\"\ncategory = \"python-error\"\nseverity = \"error\"\n\
                 message = \"m\"\n{top}[match]\nliterals = [\"Error\"]\nany = ['Error']\n\
                 {before}before_required = true\n\
                 [[examples]]\nfires = true\ninput = \"MemoryError\"\n\
                 [[examples]]\nfires = false\ninput = \"y\"\n"
            );
            parse_rule("r.toml", "r", &text)
        };
        let frame = "before = ['^  File \"(?P<f>[^\"]+)\"']\n";
        assert!(rule("", "").is_err());
        assert!(rule("supersedes = [\"r\"]\n", frame).is_err());
        let Ok(rule) = rule("", frame) else {
            panic!("a rule with a before pattern");
        };
        let mut captures = Vec::new();
        assert!(!rule.capture_before(["x = 1", "y = 2"].into_iter(), &mut captures));
        assert!(rule.capture_before(["    call()", "  File \"a.py\""].into_iter(), &mut captures));
        assert_eq!(captures, [("f".to_owned(), "a.py".to_owned())]);
    }

    #[test]
    fn kebab_case_ids() {
        assert!(is_kebab("cuda-oom"));
        assert!(is_kebab("xid-79"));
        assert!(!is_kebab("Cuda-oom"));
        assert!(!is_kebab("cuda_oom"));
        assert!(!is_kebab("-x"));
    }
}
