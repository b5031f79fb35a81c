//! Problems met while reading; reading goes on.

use std::collections::BTreeMap;

/// At most this many distinct messages are kept; the rest are counted.
const MAX_MESSAGES: usize = 40;

/// Collects warnings, keeping each message once and counting repeats of
/// a kind (e.g. many truncated sections) instead of listing them all.
#[derive(Default)]
pub(crate) struct Warnings {
    messages: Vec<String>,
    per_kind: BTreeMap<&'static str, (usize, usize)>,
    dropped: usize,
}

/// How many messages of one kind are listed before the rest are counted.
const PER_KIND: usize = 3;

impl Warnings {
    pub(crate) fn push(&mut self, message: String) {
        if self.messages.contains(&message) {
            return;
        }
        if self.messages.len() >= MAX_MESSAGES {
            self.dropped = self.dropped.saturating_add(1);
            return;
        }
        self.messages.push(message);
    }

    /// A warning that may repeat for many sections: list a few, count the rest.
    pub(crate) fn push_kind(&mut self, kind: &'static str, message: String) {
        if self.messages.contains(&message) {
            return;
        }
        let entry = self.per_kind.entry(kind).or_insert((0, 0));
        if entry.0 < PER_KIND {
            entry.0 = entry.0.saturating_add(1);
            self.push(message);
        } else {
            entry.1 = entry.1.saturating_add(1);
        }
    }

    pub(crate) fn finish(mut self) -> Vec<String> {
        for (kind, (_, more)) in &self.per_kind {
            if *more > 0 {
                self.messages
                    .push(format!("... and {more} more {kind} warnings"));
            }
        }
        if self.dropped > 0 {
            self.messages
                .push(format!("... and {} more warnings", self.dropped));
        }
        self.messages
    }
}
