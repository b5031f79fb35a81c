//! CUDA memory snapshots of PyTorch's caching allocator
//! (`torch.cuda.memory._dump_snapshot`): its segments with their blocks,
//! and the history of allocator events when it was recorded.
//!
//! [`read`] takes one snapshot; [`examine`] says what `_memory_viz` would
//! show, as numbers and frames: the out-of-memory event and its request,
//! whether the free bytes inside the reserved segments would have held it
//! had they been in one piece (fragmentation), what holds the memory, and
//! blocks that one line of code allocates again and again and never frees
//! (a leak).

use crate::pickle::{self, Limits, PickleError};
use crate::tree::Tree;
use coroner_model::{inert_capped, MemoryMap, MemoryRun, MemorySegment, PyFrame};
use std::collections::{BTreeMap, HashMap};

/// Segments, blocks per segment and trace events read at most.
const MAX_SEGMENTS: usize = 100_000;
const MAX_BLOCKS: usize = 1_000_000;
const MAX_EVENTS: usize = 2_000_000;
const MAX_TEXT: usize = 200;
/// Live blocks from one line, allocated at distinct times, that make a
/// leak at least.
const LEAK_MIN_BLOCKS: usize = 5;

/// One snapshot.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Snapshot {
    pub segments: Vec<Segment>,
    /// Allocator events of every device, oldest first.
    pub events: Vec<Event>,
    /// `PYTORCH_CUDA_ALLOC_CONF` as the allocator saw it.
    pub alloc_conf: Option<String>,
    pub expandable_segments: Option<bool>,
}

#[derive(Debug, Clone, Default, PartialEq)]
pub struct Segment {
    pub device: i64,
    pub total_size: u64,
    pub blocks: Vec<Block>,
    /// The frame that allocated the segment.
    pub frame: Option<String>,
}

#[derive(Debug, Clone, Default, PartialEq)]
pub struct Block {
    pub address: i64,
    pub size: u64,
    pub requested_size: u64,
    /// `active_allocated`, `active_pending_free` / `active_awaiting_free`,
    /// or `inactive` (free).
    pub state: String,
    /// The allocating frame in the program's own code, `function (file:line)`.
    pub frame: Option<String>,
}

impl Block {
    fn is_free(&self) -> bool {
        self.state == "inactive"
    }
    fn is_live(&self) -> bool {
        self.state == "active_allocated"
    }
}

#[derive(Debug, Clone, Default, PartialEq)]
pub struct Event {
    /// `alloc`, `free_requested`, `free_completed`, `segment_alloc`,
    /// `segment_free`, `segment_map`, `oom`, `snapshot`.
    pub action: String,
    pub address: i64,
    pub size: u64,
    pub time_us: i64,
    /// For `oom`: the bytes the device had free.
    pub device_free: Option<u64>,
    pub frame: Option<String>,
}

/// Whether the first bytes are a memory snapshot: a pickle whose first
/// keys are the snapshot's.
pub fn looks_like(head: &[u8]) -> bool {
    let has = |k: &[u8]| head.windows(k.len()).any(|w| w == k);
    head.first() == Some(&0x80) && has(b"segments") && (has(b"total_size") || has(b"device_traces"))
}

/// Reads one snapshot.
pub fn read(bytes: &[u8]) -> Result<Snapshot, PickleError> {
    let value = pickle::decode(bytes, Limits::default())?;
    let segments = value.field("segments").ok_or(PickleError {
        offset: 0,
        message: "not a memory snapshot: no segments".to_owned(),
    })?;
    let mut blocks_left = MAX_BLOCKS;
    let segments = segments
        .items()
        .unwrap_or_default()
        .into_iter()
        .take(MAX_SEGMENTS)
        .map(|s| {
            let blocks: Vec<Block> = s
                .field("blocks")
                .and_then(Tree::items)
                .unwrap_or_default()
                .into_iter()
                .take(blocks_left)
                .map(|b| Block {
                    address: int(b, "address"),
                    size: size(b, "size"),
                    requested_size: size(b, "requested_size"),
                    state: text(b.field("state")),
                    frame: own_frame(b.field("frames")),
                })
                .collect();
            blocks_left -= blocks.len();
            Segment {
                device: int(s, "device"),
                total_size: size(s, "total_size"),
                blocks,
                frame: own_frame(s.field("frames")),
            }
        })
        .collect();
    let mut events = Vec::new();
    for device in value
        .field("device_traces")
        .and_then(Tree::items)
        .unwrap_or_default()
    {
        for e in device.items().unwrap_or_default() {
            if events.len() >= MAX_EVENTS {
                break;
            }
            events.push(Event {
                action: text(e.field("action")),
                address: int(e, "addr"),
                size: size(e, "size"),
                time_us: int(e, "time_us"),
                device_free: e
                    .field("device_free")
                    .and_then(Tree::int)
                    .and_then(|n| u64::try_from(n).ok()),
                frame: own_frame(e.field("frames")),
            });
        }
    }
    events.sort_by_key(|e| e.time_us);
    let settings = value.field("allocator_settings");
    Ok(Snapshot {
        segments,
        events,
        alloc_conf: settings
            .and_then(|s| s.field("PYTORCH_CUDA_ALLOC_CONF"))
            .and_then(Tree::text)
            .map(|s| inert_capped(s, MAX_TEXT)),
        expandable_segments: settings
            .and_then(|s| s.field("expandable_segments"))
            .and_then(Tree::flag),
    })
}

fn int<T: Tree>(v: &T, key: &str) -> i64 {
    v.field(key).and_then(Tree::int).unwrap_or(0)
}

fn size<T: Tree>(v: &T, key: &str) -> u64 {
    u64::try_from(int(v, key)).unwrap_or(0)
}

fn text<T: Tree>(v: Option<&T>) -> String {
    v.and_then(Tree::text)
        .map(|s| inert_capped(s, MAX_TEXT))
        .unwrap_or_default()
}

/// The innermost frame in the program's own code, `function (file:line)`.
fn own_frame<T: Tree>(frames: Option<&T>) -> Option<String> {
    let frames = frames?.items()?;
    frames
        .into_iter()
        .take(64)
        .map(|f| PyFrame {
            file: text(f.field("filename")),
            line: f
                .field("line")
                .and_then(Tree::int)
                .and_then(|n| u64::try_from(n).ok())
                .unwrap_or(0),
            function: text(f.field("name")),
            code: None,
        })
        // A Python frame: C++ frames (`stacks="all"`) name the allocator.
        .find(|f| f.file.ends_with(".py") && !f.is_library())
        .map(|f| {
            let base = f
                .file
                .rsplit(['/', '\\'])
                .next()
                .unwrap_or(&f.file)
                .to_owned();
            format!("{} ({base}:{})", f.function, f.line)
        })
}

/// The most segments a [`MemoryMap`] keeps (the largest).
const MAP_SEGMENTS: usize = 256;
/// The most runs of one segment a [`MemoryMap`] keeps, and of all its
/// segments together; past either, the rest of a segment's blocks are
/// folded into its last run.
const MAP_RUNS: usize = 512;
const MAP_ALL_RUNS: usize = 4_096;

/// The snapshot's segments as runs of blocks in one state, the largest
/// [`MAP_SEGMENTS`] segments in the snapshot's order.
pub fn map(s: &Snapshot) -> MemoryMap {
    let mut largest: Vec<(usize, &Segment)> = s.segments.iter().enumerate().collect();
    largest.sort_by_key(|(_, seg)| std::cmp::Reverse(seg.total_size));
    largest.truncate(MAP_SEGMENTS);
    largest.sort_unstable_by_key(|(i, _)| *i);
    let mut runs_left = MAP_ALL_RUNS;
    let segments = largest
        .iter()
        .map(|(_, seg)| {
            let mut blocks: Vec<&Block> = seg.blocks.iter().collect();
            blocks.sort_by_key(|b| b.address);
            let mut runs: Vec<MemoryRun> = Vec::new();
            for b in blocks {
                let state = if b.is_free() {
                    "free"
                } else if b.is_live() {
                    "allocated"
                } else {
                    "freeing"
                };
                let full = runs.len() >= MAP_RUNS.min(runs_left);
                match runs.last_mut() {
                    Some(run) if run.state == state || full => {
                        if run.state != state {
                            run.state = "mixed".to_owned();
                        }
                        run.bytes = run.bytes.saturating_add(b.size);
                        run.blocks += 1;
                    }
                    _ => runs.push(MemoryRun {
                        state: state.to_owned(),
                        bytes: b.size,
                        blocks: 1,
                    }),
                }
            }
            runs_left = runs_left.saturating_sub(runs.len());
            MemorySegment {
                device: seg.device,
                size: seg.total_size,
                runs,
            }
        })
        .collect();
    MemoryMap {
        segments,
        segments_omitted: (s.segments.len() - largest.len()) as u64,
    }
}

/// What a snapshot says.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Examination {
    /// Bytes reserved in segments, allocated to live blocks, free inside
    /// segments, and the largest free block.
    pub reserved: u64,
    pub allocated: u64,
    pub free: u64,
    pub largest_free: u64,
    pub free_blocks: usize,
    /// Segments holding both live and free blocks.
    pub split_segments: usize,
    /// The last out-of-memory event: the request and what the device had.
    pub oom: Option<Oom>,
    /// Live bytes by allocating frame, largest first (at most five).
    pub holders: Vec<Holder>,
    /// A line that allocates block after block and frees none.
    pub leak: Option<Leak>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Oom {
    pub requested: u64,
    pub device_free: Option<u64>,
    pub frame: Option<String>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Holder {
    pub frame: String,
    pub bytes: u64,
    pub blocks: usize,
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Leak {
    pub frame: String,
    /// Live blocks from the frame, and their usual size.
    pub blocks: usize,
    pub block_size: u64,
    pub bytes: u64,
    /// Of those, the allocations the history saw, and the mean time
    /// between them.
    pub seen: usize,
    pub interval_ms: Option<u64>,
}

impl Examination {
    /// Whether the free bytes inside the segments would have held the
    /// failed request, had they been in one piece, and are a good part
    /// (a tenth at least) of what is reserved: a few megabytes of gaps
    /// under a full GPU are not why it is full.
    pub fn fragmented(&self) -> bool {
        self.oom.as_ref().is_some_and(|o| {
            self.free >= o.requested
                && self.free >= self.reserved / 10
                && self.largest_free < o.requested
        })
    }
}

/// Reads the numbers and frames out of a snapshot.
pub fn examine(s: &Snapshot) -> Examination {
    let blocks = || s.segments.iter().flat_map(|seg| &seg.blocks);
    let free_blocks: Vec<&Block> = blocks().filter(|b| b.is_free()).collect();
    let mut by_frame: BTreeMap<&str, (u64, usize)> = BTreeMap::new();
    for b in blocks().filter(|b| b.is_live()) {
        let entry = by_frame
            .entry(b.frame.as_deref().unwrap_or("an unrecorded frame"))
            .or_default();
        entry.0 += b.size;
        entry.1 += 1;
    }
    let mut holders: Vec<Holder> = by_frame
        .iter()
        .map(|(frame, (bytes, blocks))| Holder {
            frame: (*frame).to_owned(),
            bytes: *bytes,
            blocks: *blocks,
        })
        .collect();
    holders.sort_by(|a, b| b.bytes.cmp(&a.bytes).then_with(|| a.frame.cmp(&b.frame)));
    holders.truncate(5);
    let oom = s
        .events
        .iter()
        .rev()
        .find(|e| e.action == "oom")
        .map(|e| Oom {
            requested: e.size,
            device_free: e.device_free,
            frame: e.frame.clone(),
        });
    Examination {
        reserved: s.segments.iter().map(|seg| seg.total_size).sum(),
        allocated: blocks().filter(|b| b.is_live()).map(|b| b.size).sum(),
        free: free_blocks.iter().map(|b| b.size).sum(),
        largest_free: free_blocks.iter().map(|b| b.size).max().unwrap_or(0),
        free_blocks: free_blocks.len(),
        split_segments: s
            .segments
            .iter()
            .filter(|seg| {
                seg.blocks.iter().any(Block::is_free) && seg.blocks.iter().any(Block::is_live)
            })
            .count(),
        oom,
        holders,
        leak: leak(s),
    }
}

/// The frame with the most live bytes among those whose live blocks the
/// history saw allocated at several distinct times and never freed.
fn leak(s: &Snapshot) -> Option<Leak> {
    // Live blocks by frame and size.
    let mut live: HashMap<(&str, u64), (usize, Vec<i64>)> = HashMap::new();
    let live_at: HashMap<i64, (&str, u64)> = s
        .segments
        .iter()
        .flat_map(|seg| &seg.blocks)
        .filter(|b| b.is_live())
        .filter_map(|b| Some((b.address, (b.frame.as_deref()?, b.size))))
        .collect();
    for key in live_at.values() {
        live.entry(*key).or_default().0 += 1;
    }
    // When the history saw each still-live block allocated: the last
    // allocation at its address (addresses are reused once freed).
    let mut last_alloc: HashMap<i64, &Event> = HashMap::new();
    for e in s.events.iter().filter(|e| e.action == "alloc") {
        if live_at.contains_key(&e.address) {
            last_alloc.insert(e.address, e);
        }
    }
    for (address, e) in &last_alloc {
        let Some(key) = live_at.get(address) else {
            continue;
        };
        if e.size == key.1 && e.frame.as_deref() == Some(key.0) {
            if let Some(entry) = live.get_mut(key) {
                entry.1.push(e.time_us);
            }
        }
    }
    // Frees show the work between allocations: a training step frees its
    // temporaries, a burst of allocations (parameters, optimizer state)
    // frees little in between.
    let frees: Vec<i64> = s
        .events
        .iter()
        .filter(|e| e.action.starts_with("free"))
        .map(|e| e.time_us)
        .collect();
    let freed_between = |a: i64, b: i64| {
        let i = frees.partition_point(|&t| t <= a);
        frees.get(i).is_some_and(|&t| t < b)
    };
    live.into_iter()
        .filter_map(|((frame, block_size), (blocks, mut times))| {
            times.sort_unstable();
            times.dedup();
            if blocks < LEAK_MIN_BLOCKS || times.len() < 2 {
                return None;
            }
            let gaps = times.windows(2).count();
            let worked = times
                .windows(2)
                .filter(|w| matches!(w, [a, b] if freed_between(*a, *b)))
                .count();
            if worked * 5 < gaps * 4 {
                return None;
            }
            let own_span = times.last()? - times.first()?;
            let interval_ms = u64::try_from(own_span / (times.len() as i64 - 1) / 1000).ok();
            Some(Leak {
                frame: frame.to_owned(),
                blocks,
                block_size,
                bytes: block_size * blocks as u64,
                seen: times.len(),
                interval_ms,
            })
        })
        .max_by(|a, b| a.bytes.cmp(&b.bytes).then_with(|| b.frame.cmp(&a.frame)))
}

/// `2.50 GiB`, `20.0 MiB`, `512 B`.
pub fn human_size(bytes: u64) -> String {
    const UNITS: [(&str, u64); 3] = [("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)];
    for (unit, scale) in UNITS {
        if bytes >= scale {
            let value = bytes as f64 / scale as f64;
            return if unit == "GiB" {
                format!("{value:.2} {unit}")
            } else {
                format!("{value:.1} {unit}")
            };
        }
    }
    format!("{bytes} B")
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::indexing_slicing)]
mod tests {
    use super::*;

    fn fixture(name: &str) -> Snapshot {
        let path = format!(
            "{}/../../fixtures/dumps/memory/{name}",
            env!("CARGO_MANIFEST_DIR")
        );
        let bytes = std::fs::read(path).unwrap();
        assert!(looks_like(&bytes[..bytes.len().min(8192)]));
        read(&bytes).unwrap()
    }

    #[test]
    fn a_fragmentation_oom_has_the_free_bytes_in_pieces_too_small() {
        for name in ["frag_oom.pickle", "frag_oom_cpp.pickle"] {
            let x = examine(&fixture(name));
            let oom = x.oom.clone().unwrap();
            assert_eq!(oom.requested, 2560 << 20, "{name}");
            assert_eq!(
                oom.frame.as_deref(),
                Some("gather_logits (frag_snapshot.py:27)")
            );
            assert_eq!(x.reserved, 6 << 30);
            // The segment's tail after the 300th buffer, which stays live.
            assert_eq!(x.largest_free, (6 << 30) - 300 * (20 << 20));
            assert_eq!(x.split_segments, 1);
            assert!(x.fragmented(), "{name}: {x:?}");
            assert!(x.leak.is_none(), "{name}: {x:?}");
        }
    }

    #[test]
    fn a_leak_is_the_line_that_allocates_again_and_again() {
        for (name, blocks) in [
            ("leak.pickle", 30),
            ("leak_oom.pickle", 176),
            ("leak_expandable.pickle", 20),
            ("leak_ring.pickle", 40),
        ] {
            let x = examine(&fixture(name));
            let leak = x.leak.clone().unwrap_or_else(|| panic!("{name}: {x:?}"));
            assert_eq!(leak.frame, "main (leak_snapshot.py:38)", "{name}");
            assert_eq!(leak.block_size, 16 << 20, "{name}");
            assert!(
                leak.blocks >= blocks - 1 && leak.blocks <= blocks,
                "{name}: {leak:?}"
            );
            assert!(
                !x.fragmented(),
                "{name}: {:?} {} {} {}",
                x.oom,
                x.free,
                x.largest_free,
                x.reserved
            );
        }
    }

    #[test]
    fn sizes_read_as_people_write_them() {
        assert_eq!(human_size(2560 << 20), "2.50 GiB");
        assert_eq!(human_size(20 << 20), "20.0 MiB");
        assert_eq!(human_size(512), "512 B");
    }
}
