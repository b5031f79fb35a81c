//! Ordering fingerprints for Teddy's buckets.
//!
//! Teddy spreads its patterns over 8 (slim) or 16 (fat) buckets and, at
//! each position of the text, looks up the low and high nibble of the next
//! few bytes in per-bucket masks: a bucket flags a candidate when every
//! byte's nibbles occur at that place in one of the bucket's patterns. A
//! bucket of unlike patterns (`s no`, `ompl`, `000:`, ` ran`) accepts
//! nearly any text, and every candidate costs a verification; a bucket of
//! alike patterns rarely fires. On a multi-GB log the difference is a factor
//! of two to three in the speed of the whole search.
//!
//! aho-corasick puts pattern `i` in bucket `buckets - 1 - i % buckets`
//! (patterns whose nibbles start alike share a bucket whatever their
//! place). So the fingerprints are grouped here, into as many groups as
//! there are buckets and of the sizes that rule gives, and listed so that
//! each group lands in one bucket. Should the rule change, only speed
//! changes: any order finds the same lines.
//!
//! How often a bucket fires is estimated from the background sample: the
//! share of its bytes whose nibbles a bucket accepts at each place,
//! multiplied over the places.

#![allow(
    clippy::indexing_slicing,
    reason = "indices here are bucket and fingerprint numbers below the lengths they index, and nibbles below 16; no input text is read"
)]

/// Buckets of fat Teddy (more than 32 patterns) and of slim Teddy.
const FAT_BUCKETS: usize = 16;
const SLIM_BUCKETS: usize = 8;
/// Slim Teddy takes at most this many patterns.
const SLIM_MAX: usize = 32;
/// Most bytes of a pattern Teddy's masks look at.
const MASK_MAX: usize = 4;
/// Rounds of pairwise swaps at most (each round that improves nothing
/// ends the search sooner).
const SWAP_ROUNDS: usize = 8;

/// How often each pair of nibbles occurs together as a byte of ordinary
/// text: `share[low][high]`.
pub(crate) struct NibbleShares {
    share: [[f64; 16]; 16],
}

impl NibbleShares {
    pub(crate) fn new(background: &[u8]) -> NibbleShares {
        let mut count = [[0u32; 16]; 16];
        for &b in background {
            count[usize::from(b & 15)][usize::from(b >> 4)] += 1;
        }
        let total = f64::from(u32::try_from(background.len().max(1)).unwrap_or(u32::MAX));
        let share = count.map(|row| row.map(|c| f64::from(c) / total));
        NibbleShares { share }
    }

    /// The estimated share of text positions where a bucket whose
    /// patterns have `masks` flags a candidate.
    fn firing(&self, masks: impl Iterator<Item = Masks>) -> f64 {
        let Some(union) = masks.reduce(|a, b| a.union(&b)) else {
            return 0.0;
        };
        union
            .places
            .iter()
            .map(|&(low, high)| {
                // The set bits only, lowest first: the same sum, in the
                // same order, as a walk over all sixteen of each.
                let mut share = 0.0;
                for lo in set_bits(low) {
                    for hi in set_bits(high) {
                        share += self.share[lo][hi];
                    }
                }
                share
            })
            .product()
    }
}

/// The numbers of the bits set in `mask`, lowest first.
fn set_bits(mask: u16) -> impl Iterator<Item = usize> {
    let mut rest = mask;
    std::iter::from_fn(move || {
        (rest != 0).then(|| {
            let bit = rest.trailing_zeros() as usize;
            rest &= rest - 1;
            bit
        })
    })
}

/// The low and high nibbles a bucket accepts at each place, as bit sets.
#[derive(Debug, Clone, Copy, Default)]
struct Masks {
    places: [(u16, u16); MASK_MAX],
}

impl Masks {
    /// The masks of one pattern, over its first `mask_len` bytes (places
    /// past that accept anything: they are not looked at).
    fn of(pattern: &[u8], mask_len: usize) -> Masks {
        let mut places = [(u16::MAX, u16::MAX); MASK_MAX];
        for (k, place) in places.iter_mut().enumerate().take(mask_len) {
            if let Some(&b) = pattern.get(k) {
                *place = (1 << (b & 15), 1 << (b >> 4));
            }
        }
        Masks { places }
    }

    fn union(&self, other: &Masks) -> Masks {
        let mut places = self.places;
        for (p, o) in places.iter_mut().zip(other.places) {
            *p = (p.0 | o.0, p.1 | o.1);
        }
        Masks { places }
    }
}

/// `prints` (at most 64, Teddy's limit for one searcher) reordered so that
/// each Teddy bucket holds alike ones.
pub(crate) fn order_for_buckets(prints: &[Vec<u8>], shares: &NibbleShares) -> Vec<Vec<u8>> {
    let n = prints.len();
    let buckets = if n > SLIM_MAX {
        FAT_BUCKETS
    } else {
        SLIM_BUCKETS
    };
    let mask_len = prints.iter().map(Vec::len).min().unwrap_or(0).min(MASK_MAX);
    // Pattern `i` goes to bucket `buckets - 1 - i % buckets`.
    let bucket_of = |i: usize| buckets - 1 - i % buckets;
    let mut capacity = vec![0usize; buckets];
    for i in 0..n {
        capacity[bucket_of(i)] += 1;
    }
    let masks: Vec<Masks> = prints.iter().map(|p| Masks::of(p, mask_len)).collect();
    let cost = |group: &[usize]| shares.firing(group.iter().map(|&i| masks[i]));
    // A group's cost with its member at `x` replaced by `with`.
    let cost_swapped = |group: &[usize], x: usize, with: usize| {
        let members = group.iter().enumerate();
        shares.firing(members.map(|(k, &i)| masks[if k == x { with } else { i }]))
    };
    // Greedy: the most easily fired fingerprints first, each into the
    // bucket it makes fire least more often.
    let mut order: Vec<usize> = (0..n).collect();
    order.sort_by(|&a, &b| cost(&[b]).total_cmp(&cost(&[a])).then(a.cmp(&b)));
    let mut groups: Vec<Vec<usize>> = vec![Vec::new(); buckets];
    let mut costs = vec![0.0; buckets];
    for i in order {
        let mut best: Option<(f64, f64, usize)> = None;
        for (g, group) in groups.iter().enumerate() {
            if group.len() >= capacity[g] {
                continue;
            }
            let with = shares.firing(group.iter().chain([&i]).map(|&m| masks[m]));
            if best.is_none_or(|(b, _, _)| with - costs[g] < b) {
                best = Some((with - costs[g], with, g));
            }
        }
        if let Some((_, with, g)) = best {
            groups[g].push(i);
            costs[g] = with;
        }
    }
    // Then swaps between buckets while they help.
    for _ in 0..SWAP_ROUNDS {
        let mut improved = false;
        for a in 0..buckets {
            for b in a + 1..buckets {
                for x in 0..groups[a].len() {
                    for y in 0..groups[b].len() {
                        let cost_a = cost_swapped(&groups[a], x, groups[b][y]);
                        let cost_b = cost_swapped(&groups[b], y, groups[a][x]);
                        if cost_a + cost_b < (costs[a] + costs[b]) * 0.999 {
                            let (ga, gb) = (groups[a][x], groups[b][y]);
                            groups[a][x] = gb;
                            groups[b][y] = ga;
                            (costs[a], costs[b]) = (cost_a, cost_b);
                            improved = true;
                        }
                    }
                }
            }
        }
        if !improved {
            break;
        }
    }
    let mut next = vec![0usize; buckets];
    (0..n)
        .filter_map(|i| {
            let g = bucket_of(i);
            let at = next[g];
            next[g] += 1;
            groups[g].get(at).map(|&p| prints[p].clone())
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn prints(list: &[&str]) -> Vec<Vec<u8>> {
        list.iter().map(|s| s.as_bytes().to_vec()).collect()
    }

    #[test]
    fn keeps_every_fingerprint() {
        let shares = NibbleShares::new(b"step 1 loss 0.25 lr 3e-4 nccl info ring 00 : 0 1 2 3");
        let given = prints(&[
            "s no", "ompl", "000:", " ran", "abor", "xid ", "fata", "segv",
        ]);
        let mut ordered = order_for_buckets(&given, &shares);
        ordered.sort();
        let mut sorted = given.clone();
        sorted.sort();
        assert_eq!(ordered, sorted);
    }

    #[test]
    fn alike_fingerprints_share_buckets() {
        // Sixteen digit-heavy and sixteen letter pieces over eight slim
        // buckets: grouped, no bucket mixes the two kinds.
        let shares = NibbleShares::new(b"step 012: 112: 212: loss qxzj rxzj sxzj tyzj lr 0.5");
        let mut given = Vec::new();
        for i in 0..16u8 {
            given.push(vec![b'0' + i % 10, b'1' + i / 10, b'2', b':']);
            given.push(vec![b'q' + i % 8, b'x' + i / 8, b'z', b'j']);
        }
        let ordered = order_for_buckets(&given, &shares);
        for bucket in 0..SLIM_BUCKETS {
            let members: Vec<&Vec<u8>> = ordered
                .iter()
                .enumerate()
                .filter(|(i, _)| SLIM_BUCKETS - 1 - i % SLIM_BUCKETS == bucket)
                .map(|(_, p)| p)
                .collect();
            let digits = members.iter().filter(|p| p[0].is_ascii_digit()).count();
            assert!(
                digits == 0 || digits == members.len(),
                "bucket {bucket} mixes kinds: {members:?}"
            );
        }
        let cost = |list: &[Vec<u8>]| -> f64 {
            (0..SLIM_BUCKETS)
                .map(|b| {
                    let members = list
                        .iter()
                        .enumerate()
                        .filter(|(i, _)| SLIM_BUCKETS - 1 - i % SLIM_BUCKETS == b)
                        .map(|(_, p)| Masks::of(p, MASK_MAX));
                    shares.firing(members)
                })
                .sum()
        };
        assert!(cost(&ordered) < cost(&given));
    }
}
