//! One way to walk a decoded pickle and a JSON document alike.

use crate::pickle::Value as Pickled;
use serde_json::Value as Json;

/// A decoded value: a dict, a list, a string, a number, a boolean or none.
pub(crate) trait Tree: Sized {
    fn field(&self, key: &str) -> Option<&Self>;
    fn text(&self) -> Option<&str>;
    fn int(&self) -> Option<i64>;
    fn flag(&self) -> Option<bool>;
    /// The items of a list or tuple.
    fn items(&self) -> Option<Vec<&Self>>;
    /// The string-keyed entries of a dict, in order.
    fn entries(&self) -> Option<Vec<(&str, &Self)>>;
}

impl Tree for Pickled {
    fn field(&self, key: &str) -> Option<&Self> {
        match self {
            Pickled::Dict(d) => d
                .iter()
                .find(|(k, _)| matches!(k, Pickled::Text(t) if &**t == key))
                .map(|(_, v)| v),
            _ => None,
        }
    }
    fn text(&self) -> Option<&str> {
        match self {
            Pickled::Text(s) => Some(s),
            _ => None,
        }
    }
    fn int(&self) -> Option<i64> {
        match self {
            Pickled::Int(n) => *n,
            Pickled::Bool(b) => Some(i64::from(*b)),
            _ => None,
        }
    }
    fn flag(&self) -> Option<bool> {
        match self {
            Pickled::Bool(b) => Some(*b),
            _ => None,
        }
    }
    fn items(&self) -> Option<Vec<&Self>> {
        match self {
            Pickled::List(v) => Some(v.iter().collect()),
            _ => None,
        }
    }
    fn entries(&self) -> Option<Vec<(&str, &Self)>> {
        match self {
            Pickled::Dict(d) => Some(
                d.iter()
                    .filter_map(|(k, v)| match k {
                        Pickled::Text(k) => Some((&**k, v)),
                        _ => None,
                    })
                    .collect(),
            ),
            // An empty dict reads as an empty list until filled.
            Pickled::List(v) if v.is_empty() => Some(Vec::new()),
            _ => None,
        }
    }
}

impl Tree for Json {
    fn field(&self, key: &str) -> Option<&Self> {
        self.get(key)
    }
    fn text(&self) -> Option<&str> {
        self.as_str()
    }
    fn int(&self) -> Option<i64> {
        self.as_i64()
            .or_else(|| self.as_bool().map(i64::from))
            .or_else(|| self.as_str().and_then(|s| s.parse().ok()))
    }
    fn flag(&self) -> Option<bool> {
        self.as_bool()
    }
    fn items(&self) -> Option<Vec<&Self>> {
        self.as_array().map(|v| v.iter().collect())
    }
    fn entries(&self) -> Option<Vec<(&str, &Self)>> {
        self.as_object()
            .map(|m| m.iter().map(|(k, v)| (k.as_str(), v)).collect())
    }
}
