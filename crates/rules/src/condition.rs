//! Conditions on a match's captures: `when = ["requested > capacity"]`,
//! `when = ["reserved - allocated > requested"]`.
//!
//! A rule's regexes find a failure's line and capture its numbers; a
//! condition compares them, so that a rule can say what the numbers mean
//! (an allocation larger than the whole GPU, memory that another process
//! holds). Captured values are quantities: a number with an optional unit,
//! sizes in bytes (`64.00 GiB`, `518.00 MiB`, `0 bytes`), percentages, or
//! plain numbers. A condition whose capture is missing or not a quantity
//! does not hold.

use std::fmt;

/// A comparison between two quantities.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Condition {
    left: Operand,
    op: Op,
    right: Operand,
}

/// One side of a comparison: the sum of its terms (`reserved - allocated`
/// is `reserved` plus `-1 * allocated`).
#[derive(Debug, Clone, PartialEq)]
struct Operand {
    terms: Vec<Term>,
}

#[derive(Debug, Clone, PartialEq)]
enum Term {
    /// A capture, times a factor (`0.5 * capacity`).
    Capture(f64, String),
    /// A constant (`1 GiB`, `100`).
    Value(f64),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Op {
    Lt,
    Le,
    Gt,
    Ge,
}

/// Why a condition could not be read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct BadCondition(pub String);

impl fmt::Display for BadCondition {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl Condition {
    /// Reads `left op right`, where each side is a capture name, a factor
    /// times a capture name (`0.5 * capacity`), a quantity (`1 GiB`), or
    /// a sum or difference of those (`reserved - allocated`, with spaces
    /// around the sign).
    pub(crate) fn parse(text: &str) -> Result<Condition, BadCondition> {
        let (at, op, len) = [(">=", Op::Ge), ("<=", Op::Le), (">", Op::Gt), ("<", Op::Lt)]
            .iter()
            .find_map(|(s, op)| text.find(s).map(|at| (at, *op, s.len())))
            .ok_or_else(|| {
                BadCondition(format!(
                    "`{text}` compares nothing: write `left > right` with <, <=, > or >="
                ))
            })?;
        let left = Operand::parse(text.get(..at).unwrap_or(""))?;
        let right = Operand::parse(text.get(at + len..).unwrap_or(""))?;
        Ok(Condition { left, op, right })
    }

    /// The capture names the condition uses.
    pub(crate) fn captures(&self) -> impl Iterator<Item = &str> {
        [&self.left, &self.right]
            .into_iter()
            .flat_map(|o| o.terms.iter())
            .filter_map(|t| match t {
                Term::Capture(_, name) => Some(name.as_str()),
                Term::Value(_) => None,
            })
    }

    /// Whether it holds for `captures`.
    pub(crate) fn holds(&self, captures: &[(String, String)]) -> bool {
        let (Some(a), Some(b)) = (self.left.value(captures), self.right.value(captures)) else {
            return false;
        };
        match self.op {
            Op::Lt => a < b,
            Op::Le => a <= b,
            Op::Gt => a > b,
            Op::Ge => a >= b,
        }
    }
}

impl Operand {
    fn parse(text: &str) -> Result<Operand, BadCondition> {
        let mut terms = Vec::new();
        let mut sign = 1.0;
        let mut rest = text.trim();
        loop {
            let next = [(" - ", -1.0), (" + ", 1.0)]
                .iter()
                .filter_map(|(s, k)| rest.find(s).map(|at| (at, *k)))
                .min_by_key(|(at, _)| *at);
            let (part, after) = match next {
                Some((at, k)) => (rest.get(..at).unwrap_or(""), Some((at + 3, k))),
                None => (rest, None),
            };
            terms.push(Term::parse(part, sign)?);
            let Some((skip, k)) = after else { break };
            rest = rest.get(skip..).unwrap_or("");
            sign = k;
        }
        Ok(Operand { terms })
    }

    fn value(&self, captures: &[(String, String)]) -> Option<f64> {
        self.terms.iter().map(|t| t.value(captures)).sum()
    }
}

impl Term {
    fn parse(text: &str, sign: f64) -> Result<Term, BadCondition> {
        let text = text.trim();
        if let Some((factor, name)) = text.split_once('*') {
            let factor = quantity(factor.trim())
                .ok_or_else(|| BadCondition(format!("`{}` is not a number", factor.trim())))?;
            return Ok(Term::Capture(sign * factor, capture_name(name.trim())?));
        }
        if let Some(value) = quantity(text) {
            return Ok(Term::Value(sign * value));
        }
        Ok(Term::Capture(sign, capture_name(text)?))
    }

    fn value(&self, captures: &[(String, String)]) -> Option<f64> {
        match self {
            Term::Value(v) => Some(*v),
            Term::Capture(factor, name) => captures
                .iter()
                .find(|(k, _)| k == name)
                .and_then(|(_, v)| quantity(v))
                .map(|v| v * factor),
        }
    }
}

fn capture_name(text: &str) -> Result<String, BadCondition> {
    if !text.is_empty() && text.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
        Ok(text.to_owned())
    } else {
        Err(BadCondition(format!(
            "`{text}` is neither a capture name nor a quantity such as `1.5 GiB`"
        )))
    }
}

/// A number with an optional unit, in base units (bytes for sizes).
pub(crate) fn quantity(text: &str) -> Option<f64> {
    let text = text.trim();
    let split = text
        .find(|c: char| !(c.is_ascii_digit() || c == '.' || c == '-' || c == '+'))
        .unwrap_or(text.len());
    let (number, unit) = text.split_at(split);
    let value: f64 = number.parse().ok()?;
    let scale = match unit.trim() {
        "" | "B" | "bytes" | "byte" | "%" => 1.0,
        "KiB" => 1024.0,
        "MiB" => 1024.0 * 1024.0,
        "GiB" => 1024.0 * 1024.0 * 1024.0,
        "TiB" => 1024.0 * 1024.0 * 1024.0 * 1024.0,
        "KB" | "kB" => 1e3,
        "MB" => 1e6,
        "GB" => 1e9,
        "TB" => 1e12,
        _ => return None,
    };
    value.is_finite().then_some(value * scale)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn caps(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect()
    }

    #[test]
    fn sizes_compare_across_units() {
        let c = Condition::parse("requested > capacity").unwrap_or_else(|e| panic!("{e}"));
        assert!(c.holds(&caps(&[
            ("requested", "200.00 GiB"),
            ("capacity", "139.80 GiB")
        ])));
        assert!(!c.holds(&caps(&[
            ("requested", "32.00 MiB"),
            ("capacity", "139.80 GiB")
        ])));
        let half = Condition::parse("inuse < 0.5 * capacity").unwrap_or_else(|e| panic!("{e}"));
        assert!(half.holds(&caps(&[
            ("inuse", "518.00 MiB"),
            ("capacity", "139.80 GiB")
        ])));
        let constant = Condition::parse("free >= 1 GiB").unwrap_or_else(|e| panic!("{e}"));
        assert!(constant.holds(&caps(&[("free", "1024.00 MiB")])));
    }

    #[test]
    fn differences_of_captures() {
        let c =
            Condition::parse("reserved - allocated > requested").unwrap_or_else(|e| panic!("{e}"));
        // The old allocator message: 2.5 GiB cached but not allocated, and
        // a 1 GiB request that did not fit in it.
        assert!(c.holds(&caps(&[
            ("reserved", "10.50 GiB"),
            ("allocated", "8.00 GiB"),
            ("requested", "1.00 GiB")
        ])));
        assert!(!c.holds(&caps(&[
            ("reserved", "8.10 GiB"),
            ("allocated", "8.00 GiB"),
            ("requested", "1.00 GiB")
        ])));
        let sum = Condition::parse("a + b - 1 GiB >= c").unwrap_or_else(|e| panic!("{e}"));
        assert!(sum.holds(&caps(&[("a", "1 GiB"), ("b", "1 GiB"), ("c", "1 GiB")])));
        assert_eq!(
            Condition::parse("reserved - allocated > requested")
                .map(|c| c.captures().map(str::to_owned).collect::<Vec<_>>()),
            Ok(vec![
                "reserved".to_owned(),
                "allocated".to_owned(),
                "requested".to_owned()
            ])
        );
        // A missing capture on either side: no answer.
        assert!(!c.holds(&caps(&[("reserved", "10 GiB"), ("requested", "1 GiB")])));
    }

    #[test]
    fn a_missing_or_odd_value_does_not_hold() {
        let c = Condition::parse("requested > capacity").unwrap_or_else(|e| panic!("{e}"));
        assert!(!c.holds(&caps(&[("requested", "200.00 GiB")])));
        assert!(!c.holds(&caps(&[("requested", "lots"), ("capacity", "1 GiB")])));
    }

    #[test]
    fn bad_conditions_say_why() {
        assert!(Condition::parse("requested capacity").is_err());
        assert!(Condition::parse("requested > 2 apples").is_err());
        assert!(Condition::parse("x * y > 1").is_err());
    }
}
