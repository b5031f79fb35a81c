//! Log templates: a line with its variable parts masked.
//!
//! When no rule names a failure, the lines that look like one are still
//! worth showing, grouped so that ten thousand repeats are one row. As
//! log-template miners such as Drain do, a line's template is its words
//! with the variable ones masked: a word holding a digit (a number, an
//! id, an address, a time), a path, a quoted string. Lines of one template
//! differ only in those.

/// Words that make a line worth showing when no rule read it.
const SUSPICIOUS: [&str; 14] = [
    "error",
    "fail",
    "fatal",
    "exception",
    "killed",
    "abort",
    "timed out",
    "timeout",
    "cannot",
    "unable",
    "denied",
    "refused",
    "segmentation",
    "traceback",
];

/// Longest template kept, in characters.
const MAX_TEMPLATE: usize = 200;

/// The template of `text` when the line looks like a failure (it holds
/// one of the suspicious words), else `None`.
pub fn suspicious_template(text: &str) -> Option<String> {
    let lower = text.to_ascii_lowercase();
    if !SUSPICIOUS.iter().any(|w| lower.contains(w)) {
        return None;
    }
    let mut out = String::new();
    for word in text.split_whitespace() {
        if !out.is_empty() {
            out.push(' ');
        }
        if is_variable(word) {
            out.push_str("<*>");
        } else {
            out.push_str(word);
        }
        if out.chars().count() >= MAX_TEMPLATE {
            out = out.chars().take(MAX_TEMPLATE).collect();
            out.push('…');
            break;
        }
    }
    (!out.is_empty()).then_some(out)
}

fn is_variable(word: &str) -> bool {
    word.bytes().any(|b| b.is_ascii_digit())
        || word.contains('/')
        || word.contains('\\')
        || word.starts_with(['"', '\''])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn variable_words_are_masked_and_quiet_lines_have_none() {
        assert_eq!(
            suspicious_template("worker 17 failed at /tmp/x.py:12 after 3.5s").as_deref(),
            Some("worker <*> failed at <*> after <*>")
        );
        assert_eq!(
            suspicious_template("worker 18 failed at /tmp/y.py:99 after 0.1s"),
            suspicious_template("worker 17 failed at /tmp/x.py:12 after 3.5s")
        );
        assert_eq!(suspicious_template("step 3 loss 2.31"), None);
        let long = format!("error {}", "word ".repeat(100));
        assert!(suspicious_template(&long).is_some_and(|t| t.chars().count() <= MAX_TEMPLATE + 1));
    }
}
