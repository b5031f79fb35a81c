//! Named regex pieces that several rules share.
//!
//! A rule directory may hold a `patterns.toml` with a `[patterns]` table
//! of names and regexes. A rule's pattern uses one as `(?&name)`, which is
//! replaced by the named regex in a non-capturing group before the rule's
//! pattern is compiled. The Rust regex syntax gives `(?&` no meaning, so
//! the form cannot be mistaken for anything a pattern already says.
//!
//! Names are the built-in pack's plus those of the user directories; a
//! name may be defined once. A named regex cannot use another name.

use crate::error::{RuleError, RuleErrorKind};
use serde::Deserialize;
use std::borrow::Cow;
use std::collections::BTreeMap;
use std::sync::OnceLock;
use toml::Spanned;

/// The file name of a directory's pattern table.
pub const PATTERNS_FILE: &str = "patterns.toml";

/// Named regexes, by name.
#[derive(Debug, Clone, Default)]
pub struct Patterns {
    named: BTreeMap<String, String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct PatternsFile {
    #[serde(default)]
    patterns: BTreeMap<Spanned<String>, Spanned<String>>,
}

impl Patterns {
    /// The built-in pack's named regexes (its `rules/patterns.toml`). The
    /// file is checked by the crate's tests, so a fault leaves it empty
    /// rather than stopping a run.
    pub fn builtin() -> &'static Patterns {
        static BUILTIN: OnceLock<Patterns> = OnceLock::new();
        BUILTIN.get_or_init(|| {
            Patterns::parse(
                crate::set::BUILTIN_PATTERNS.0,
                crate::set::BUILTIN_PATTERNS.1,
            )
            .unwrap_or_default()
        })
    }

    /// Reads a pattern table; every name must be a lowercase word and every
    /// regex must compile on its own.
    pub fn parse(path: &str, text: &str) -> Result<Patterns, Vec<RuleError>> {
        let file: PatternsFile =
            toml::from_str(text).map_err(|e| vec![RuleError::syntax(path, text, &e)])?;
        let mut errors = Vec::new();
        let mut named = BTreeMap::new();
        for (name, regex) in file.patterns {
            let bad =
                |kind, span, message: String| RuleError::new(kind, path, text, Some(span), message);
            if !is_name(name.get_ref()) {
                errors.push(bad(
                    RuleErrorKind::BadId,
                    name.span(),
                    format!(
                        "pattern name `{}` is not lowercase letters, digits and `_`",
                        name.get_ref()
                    ),
                ));
            } else if regex.get_ref().contains("(?&") {
                errors.push(bad(
                    RuleErrorKind::BadRegex,
                    regex.span(),
                    "a named pattern cannot use another one".to_owned(),
                ));
            } else if let Err(e) = crate::rule::build_regex(regex.get_ref()) {
                errors.push(bad(
                    RuleErrorKind::BadRegex,
                    regex.span(),
                    format!("invalid regex: {}", crate::rule::one_line(&e.to_string())),
                ));
            } else {
                named.insert(name.into_inner(), regex.into_inner());
            }
        }
        if errors.is_empty() {
            Ok(Patterns { named })
        } else {
            Err(errors)
        }
    }

    /// Adds `other`'s names; a name already defined as another regex is an
    /// error naming `path`, the file `other` came from (the same definition
    /// again is accepted, so that the built-in pack's own directory can be
    /// read beside the built-in rules).
    pub fn merge(&mut self, other: Patterns, path: &str) -> Result<(), Vec<RuleError>> {
        let mut errors = Vec::new();
        for (name, regex) in other.named {
            if self.named.get(&name).is_some_and(|r| *r != regex) {
                errors.push(RuleError::new(
                    RuleErrorKind::DuplicateId,
                    path,
                    "",
                    None,
                    format!("pattern `{name}` is already defined"),
                ));
            } else {
                self.named.insert(name, regex);
            }
        }
        if errors.is_empty() {
            Ok(())
        } else {
            Err(errors)
        }
    }

    /// `pattern` with every `(?&name)` replaced by `(?:regex)`; the
    /// error names the first unknown name.
    pub fn expand<'a>(&self, pattern: &'a str) -> Result<Cow<'a, str>, String> {
        if !pattern.contains("(?&") {
            return Ok(Cow::Borrowed(pattern));
        }
        let mut out = String::with_capacity(pattern.len() * 2);
        let mut rest = pattern;
        while let Some(at) = rest.find("(?&") {
            let (before, from) = rest.split_at(at);
            out.push_str(before);
            let body = from.get(3..).unwrap_or("");
            let Some(end) = body.find(')') else {
                return Err("`(?&` is not closed by `)`".to_owned());
            };
            let name = body.get(..end).unwrap_or("");
            let Some(regex) = self.named.get(name) else {
                return Err(format!("`(?&{name})` names no pattern"));
            };
            out.push_str("(?:");
            out.push_str(regex);
            out.push(')');
            rest = body.get(end + 1..).unwrap_or("");
        }
        out.push_str(rest);
        Ok(Cow::Owned(out))
    }

    /// The names defined, in order.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.named.keys().map(String::as_str)
    }
}

fn is_name(name: &str) -> bool {
    !name.is_empty()
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_')
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table(text: &str) -> Patterns {
        Patterns::parse("p.toml", text).unwrap_or_else(|e| panic!("{e:?}"))
    }

    #[test]
    fn a_name_is_replaced_by_its_regex_in_a_group() {
        let p = table("[patterns]\ninfo = '''\\bINFO\\b|^I\\d{4} '''\n");
        let out = p.expand(r"(?&info)[^\n]*Unable").map(Cow::into_owned);
        assert_eq!(out.as_deref(), Ok(r"(?:\bINFO\b|^I\d{4} )[^\n]*Unable"));
        assert!(matches!(p.expand("plain (?:x)"), Ok(Cow::Borrowed(_))));
    }

    #[test]
    fn unknown_names_and_unclosed_uses_are_errors() {
        let p = table("[patterns]\na = 'x'\n");
        assert_eq!(
            p.expand("(?&b) y"),
            Err("`(?&b)` names no pattern".to_owned())
        );
        assert!(p.expand("(?&a").is_err());
    }

    #[test]
    fn bad_tables_are_rejected_with_every_fault() {
        let errors = Patterns::parse(
            "p.toml",
            "[patterns]\nBad = 'x'\nopen = '(x'\nnested = '(?&open)'\n",
        )
        .err()
        .unwrap_or_default();
        assert_eq!(errors.len(), 3, "{errors:?}");
        assert!(Patterns::parse("p.toml", "[other]\n").is_err());
        assert!(Patterns::parse("p.toml", "").is_ok());
    }

    #[test]
    fn a_name_may_not_be_given_another_regex() {
        let mut base = table("[patterns]\na = 'x'\n");
        assert!(base
            .merge(table("[patterns]\na = 'y'\n"), "u.toml")
            .is_err());
        assert!(base.merge(table("[patterns]\na = 'x'\n"), "u.toml").is_ok());
        assert!(base.merge(table("[patterns]\nb = 'y'\n"), "u.toml").is_ok());
        assert_eq!(base.names().collect::<Vec<_>>(), ["a", "b"]);
    }

    #[test]
    fn the_builtin_table_reads() {
        assert!(Patterns::parse(
            crate::set::BUILTIN_PATTERNS.0,
            crate::set::BUILTIN_PATTERNS.1
        )
        .is_ok());
    }
}
