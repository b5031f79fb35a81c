//! A one-pass search for many short fingerprints: at every place of the
//! text, the next one to four bytes are hashed and looked up in a bit table
//! of the fingerprints' hashes; only a set bit looks further.
//!
//! Teddy (aho-corasick's packed searcher) takes at most 64 patterns per
//! pass, and a rule pack of a thousand rules needs four or more passes of
//! its commonest-but-fewest fingerprints. This search takes any number of
//! fingerprints in one pass, so the rarest ones can be chosen, and costs
//! about as much per byte as two Teddy passes. No crate offers it: the
//! multi-pattern searchers of aho-corasick are Teddy (64 patterns) and
//! automata, whose speed over a large text drops with their size.

use std::collections::HashMap;

/// Bits of a table index: 2^17 bits, 16 KiB, mostly in the first-level
/// cache; a few hundred fingerprints set under 0.5% of them.
const INDEX_BITS: u32 = 17;

/// The fingerprints of one length, found by their hash.
#[derive(Debug)]
struct Table {
    /// Bytes of each fingerprint, 1 to 4.
    len: usize,
    /// Bit `h` is set when a fingerprint hashes to `h`.
    bits: Vec<u64>,
    /// The fingerprint of each value (its bytes as a little-endian
    /// number).
    prints: HashMap<u32, usize>,
}

impl Table {
    /// The value of the fingerprint length's bytes of `w` (the four bytes
    /// at a place, little-endian).
    fn value(&self, w: u32) -> u32 {
        match self.len {
            4 => w,
            len => w & ((1u32 << (8 * len)) - 1),
        }
    }

    fn set(&mut self, value: u32, print: usize) {
        let h = slot(value);
        if let Some(word) = self.bits.get_mut(h >> 6) {
            *word |= 1 << (h & 63);
        }
        self.prints.insert(value, print);
    }

    /// Whether the table's bit for `value` is set.
    fn flags(&self, value: u32) -> bool {
        let h = slot(value);
        self.bits
            .get(h >> 6)
            .is_some_and(|word| word >> (h & 63) & 1 != 0)
    }

    /// The fingerprint at a place whose four bytes are `w`.
    fn print_at(&self, w: u32) -> Option<usize> {
        let value = self.value(w);
        if self.flags(value) {
            self.prints.get(&value).copied()
        } else {
            None
        }
    }
}

/// The table index of a value.
fn slot(value: u32) -> usize {
    (value.wrapping_mul(0x9E37_79B1) >> (32 - INDEX_BITS)) as usize
}

/// The four bytes at `at`, zero past the end of `bytes`.
fn word_at(bytes: &[u8], at: usize) -> u32 {
    match bytes
        .get(at..at.saturating_add(4))
        .and_then(|s| <[u8; 4]>::try_from(s).ok())
    {
        Some(four) => u32::from_le_bytes(four),
        None => {
            let mut four = [0u8; 4];
            for (slot, &b) in four.iter_mut().zip(bytes.get(at..).unwrap_or_default()) {
                *slot = b;
            }
            u32::from_le_bytes(four)
        }
    }
}

/// Fingerprints of one to four bytes, searched in one pass.
#[derive(Debug)]
pub(crate) struct Hashed {
    /// One table per fingerprint length, longest first.
    tables: Vec<Table>,
    /// When every fingerprint is four bytes: the three-byte pieces at
    /// their first and second byte.
    grams: Option<Table>,
}

impl Hashed {
    /// The search for `prints` (pattern `i` is `prints[i]`); `None` when
    /// one is empty or longer than four bytes.
    pub(crate) fn new(prints: &[Vec<u8>]) -> Option<Hashed> {
        let mut tables: Vec<Table> = Vec::new();
        for (i, print) in prints.iter().enumerate() {
            let len = print.len();
            if !(1..=4).contains(&len) {
                return None;
            }
            let value = word_at(print, 0);
            let table = match tables.iter().position(|t| t.len == len) {
                Some(t) => tables.get_mut(t)?,
                None => {
                    tables.push(Table {
                        len,
                        bits: vec![0; (1 << INDEX_BITS) / 64],
                        prints: HashMap::new(),
                    });
                    tables.last_mut()?
                }
            };
            table.set(value, i);
        }
        tables.sort_by_key(|t| std::cmp::Reverse(t.len));
        let grams = match tables.as_slice() {
            [table] if table.len == 4 => {
                let mut grams = Table {
                    len: 3,
                    bits: vec![0; (1 << INDEX_BITS) / 64],
                    prints: HashMap::new(),
                };
                for &value in table.prints.keys() {
                    grams.set(value & 0x00FF_FFFF, 0);
                    grams.set(value >> 8, 0);
                }
                Some(grams)
            }
            _ => None,
        };
        Some(Hashed { tables, grams })
    }

    /// Offers `visit` every place at or after `from` where a fingerprint
    /// starts in `haystack` (fingerprint, place), in order of places, until
    /// it returns something.
    pub(crate) fn each_hit<T>(
        &self,
        haystack: &[u8],
        from: usize,
        mut visit: impl FnMut(usize, usize) -> Option<T>,
    ) -> Option<T> {
        let mut at = from;
        if let (Some(grams), [table]) = (&self.grams, self.tables.as_slice()) {
            // Every fingerprint is four bytes, so an occurrence at `p`
            // holds the three-byte piece at `p` and at `p + 1`, one of
            // them at a place of `from`'s parity: only every other place is
            // looked up, and a flagged one looks at itself and the place
            // before. Three places per eight-byte read.
            let exact = |p: usize| table.print_at(word_at(haystack, p));
            while let Some(eight) = haystack
                .get(at..at + 8)
                .and_then(|s| <[u8; 8]>::try_from(s).ok())
            {
                let w = u64::from_le_bytes(eight);
                for k in 0..3 {
                    if grams.flags((w >> (16 * k)) as u32 & 0x00FF_FFFF) {
                        let j = at + 2 * k;
                        for p in [j.checked_sub(1), Some(j)].into_iter().flatten() {
                            if p >= from && p + 4 <= haystack.len() {
                                if let Some(seen) = exact(p).and_then(|print| visit(print, p)) {
                                    return Some(seen);
                                }
                            }
                        }
                    }
                }
                at += 6;
            }
            // The places before `at` are done, except the one just before
            // it when `at` was not looked up yet.
            if at > from {
                at -= 1;
                if let Some(seen) = exact(at)
                    .filter(|_| at + 4 <= haystack.len())
                    .and_then(|print| visit(print, at))
                {
                    return Some(seen);
                }
                at += 1;
            }
        }
        while at < haystack.len() {
            let w = word_at(haystack, at);
            let left = haystack.len() - at;
            for table in self.tables.iter().filter(|t| t.len <= left) {
                if let Some(print) = table.print_at(w) {
                    if let Some(seen) = visit(print, at) {
                        return Some(seen);
                    }
                }
            }
            at += 1;
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every (fingerprint, place), by comparing each with each place.
    fn naive(prints: &[&[u8]], text: &[u8], from: usize) -> Vec<(usize, usize)> {
        let mut hits = Vec::new();
        for at in from..text.len() {
            let mut here: Vec<usize> = (0..prints.len())
                .filter(|&p| text[at..].starts_with(prints[p]))
                .collect();
            here.sort_by_key(|&p| std::cmp::Reverse(prints[p].len()));
            hits.extend(here.into_iter().map(|p| (p, at)));
        }
        hits
    }

    #[test]
    fn finds_every_fingerprint_at_every_place_in_order() {
        let prints: [&[u8]; 7] = [
            b"oom ",
            b"nccl",
            b"nan",
            b"ab",
            b"x",
            b"ncc",
            b"\xe2\x80\x9c",
        ];
        let owned: Vec<Vec<u8>> = prints.iter().map(|p| p.to_vec()).collect();
        let hashed = Hashed::new(&owned).unwrap_or_else(|| panic!("built"));
        let texts: [&[u8]; 5] = [
            b"cuda oom nccl nan ab x",
            b"ncclnccl oom oom nanab",
            b"",
            b"x",
            b"abx \xe2\x80\x9cquoted\xe2\x80\x9d nan",
        ];
        for text in texts {
            for from in 0..=text.len() {
                let mut got = Vec::new();
                hashed.each_hit(text, from, |p, at| {
                    got.push((p, at));
                    None::<()>
                });
                assert_eq!(got, naive(&prints, text, from), "{text:?} from {from}");
            }
        }
    }

    #[test]
    fn four_byte_fingerprints_are_found_at_every_place_in_order() {
        // Few letters, so that the fingerprints and their pieces occur
        // often, overlapping, at both parities and near both ends.
        let prints: [&[u8]; 5] = [b"abca", b"bcab", b"aaaa", b"cabc", b"ab c"];
        let owned: Vec<Vec<u8>> = prints.iter().map(|p| p.to_vec()).collect();
        let hashed = Hashed::new(&owned).unwrap_or_else(|| panic!("built"));
        let mut seed = 7u32;
        for len in 0..80 {
            let text: Vec<u8> = (0..len)
                .map(|_| {
                    seed = seed.wrapping_mul(1_103_515_245).wrapping_add(12_345);
                    b"abc a"[(seed >> 16) as usize % 5]
                })
                .collect();
            for from in 0..=text.len() {
                let mut got = Vec::new();
                hashed.each_hit(&text, from, |p, at| {
                    got.push((p, at));
                    None::<()>
                });
                assert_eq!(got, naive(&prints, &text, from), "{text:?} from {from}");
            }
        }
    }

    #[test]
    fn the_first_visit_that_returns_ends_the_search() {
        let owned = vec![b"oom ".to_vec()];
        let hashed = Hashed::new(&owned).unwrap_or_else(|| panic!("built"));
        let text = b"a oom b oom c oom ";
        assert_eq!(
            hashed.each_hit(text, 0, |_, at| (at > 3).then_some(at)),
            Some(8)
        );
    }

    #[test]
    fn no_search_for_an_empty_or_long_fingerprint() {
        assert!(Hashed::new(&[Vec::new()]).is_none());
        assert!(Hashed::new(&[b"abcde".to_vec()]).is_none());
    }
}
