//! A finding's named captures: a handful of short strings, kept in one
//! small sorted list rather than a tree map (a job of 100 000 ranks holds a
//! finding per rank while the root cause is chosen, and a tree's node is
//! several times the size of the few captures in it). They read and
//! serialize as a map from name to text, names in order.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Named captures, sorted by name, each name once.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct Captures(Vec<(String, String)>);

impl Captures {
    /// The text captured as `name`.
    pub fn get(&self, name: &str) -> Option<&String> {
        self.position(name).ok().map(|i| &self.0[i].1)
    }

    /// Sets the capture `name` to `text`; returns the text it replaced.
    pub fn insert(&mut self, name: String, text: String) -> Option<String> {
        match self.position(&name) {
            Ok(i) => Some(std::mem::replace(&mut self.0[i].1, text)),
            Err(i) => {
                self.0.insert(i, (name, text));
                None
            }
        }
    }

    /// The captures, by name.
    pub fn iter(&self) -> impl Iterator<Item = (&String, &String)> {
        self.0.iter().map(|(k, v)| (k, v))
    }

    /// How many captures there are.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    fn position(&self, name: &str) -> Result<usize, usize> {
        self.0.binary_search_by(|(k, _)| k.as_str().cmp(name))
    }
}

impl FromIterator<(String, String)> for Captures {
    /// The captures of `pairs`; of a name given twice, the last text
    /// counts (as in a map).
    fn from_iter<I: IntoIterator<Item = (String, String)>>(pairs: I) -> Self {
        let mut all: Vec<(String, String)> = pairs.into_iter().collect();
        // Reversed, then sorted stably: of equal names, the last given
        // comes first and is the one kept.
        all.reverse();
        all.sort_by(|a, b| a.0.cmp(&b.0));
        all.dedup_by(|later, kept| later.0 == kept.0);
        all.shrink_to_fit();
        Captures(all)
    }
}

impl<'a> IntoIterator for &'a Captures {
    type Item = (&'a String, &'a String);
    type IntoIter = std::iter::Map<
        std::slice::Iter<'a, (String, String)>,
        fn(&'a (String, String)) -> (&'a String, &'a String),
    >;

    fn into_iter(self) -> Self::IntoIter {
        self.0.iter().map(|(k, v)| (k, v))
    }
}

impl std::fmt::Debug for Captures {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_map().entries(self.iter()).finish()
    }
}

impl Serialize for Captures {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_map(self.iter())
    }
}

impl<'de> Deserialize<'de> for Captures {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        BTreeMap::<String, String>::deserialize(d).map(|map| map.into_iter().collect())
    }
}

#[cfg(test)]
mod tests {
    use super::Captures;

    fn pairs(list: &[(&str, &str)]) -> Captures {
        list.iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect()
    }

    #[test]
    fn names_are_sorted_and_the_last_of_a_name_counts() {
        let mut c = pairs(&[("rank", "3"), ("gpu", "0"), ("rank", "5")]);
        assert_eq!(c.len(), 2);
        assert_eq!(c.get("rank").map(String::as_str), Some("5"));
        assert_eq!(c.get("host"), None);
        assert_eq!(c.insert("host".to_owned(), "n1".to_owned()), None);
        assert_eq!(
            c.insert("gpu".to_owned(), "1".to_owned()).as_deref(),
            Some("0")
        );
        let names: Vec<&String> = c.iter().map(|(k, _)| k).collect();
        assert_eq!(names, ["gpu", "host", "rank"]);
        assert_eq!(
            format!("{c:?}"),
            r#"{"gpu": "1", "host": "n1", "rank": "5"}"#
        );
    }

    #[test]
    fn they_read_and_write_as_a_map() {
        let c = pairs(&[("b", "2"), ("a", "1")]);
        let json = serde_json::to_string(&c).unwrap_or_default();
        assert_eq!(json, r#"{"a":"1","b":"2"}"#);
        let back: Captures = serde_json::from_str(&json).unwrap_or_default();
        assert_eq!(back, c);
    }
}
