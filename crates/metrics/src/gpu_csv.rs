//! GPU monitoring series: the rows of `nvidia-smi --query-gpu=...
//! --format=csv` (typically run with `-l`/`-lms` next to a job), per GPU.
//!
//! The header names the columns (`timestamp, index, utilization.gpu [%],
//! memory.used [MiB], ...`); the columns read are located in it by name:
//! `utilization.gpu` and `memory.used` (both needed), `index` or
//! `pci.bus_id` (at least one: they say which GPU a row is about) and
//! `timestamp` (optional). Values are read with their units (`93 %`,
//! `912 MiB`) or without (`--format=csv,nounits`). A header is recognised
//! with or without its `[unit]`s. Without a header (`--format=csv,noheader`)
//! nothing is read: the columns cannot be told apart.
//!
//! Rows are read from the header on; a line that is not a row of its shape
//! (a log line between them, `[N/A]` values) is skipped, and a later header
//! replaces the column layout. Only rows where the GPU's `memory.used` is
//! above 0 are kept: before a job creates its CUDA context and after it
//! exits the GPU is idle for want of a job, not of work.

use memchr::memmem;

use crate::format;
use crate::series::{self, Sample, Series};
use crate::trends::{median, Found};
use coroner_model::Curve;

/// The most GPUs kept per input; rows of further GPUs are ignored.
const MAX_GPUS: usize = 64;
/// GPUs whose series get the full capacity; later ones get less, as ranks do.
const FULL_GPUS: usize = 8;
/// The most columns a header may name.
const MAX_FIELDS: usize = 64;
/// The longest timestamp or PCI bus id kept.
const TEXT_MAX: usize = 40;

/// The fewest rows (with memory in use) a GPU needs before it is judged:
/// 10 s at `-lms 500`, 20 s at `-l 1`.
const IDLE_MIN_SAMPLES: u64 = 20;
/// The median utilisation at or below which a GPU that holds memory is
/// reported idle. `utilization.gpu` is the share of the sample period in
/// which a kernel ran: a GPU kept busy reads 90 % to 100 %, and even small
/// models with many short kernels read well above 30 %. At 20 % or less for
/// most of the rows the GPU waits most of the time: for its input, for the
/// host, or for its peers.
const IDLE_MAX_PERCENT: f64 = 20.0;

/// Where the columns read are in a row.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Layout {
    fields: usize,
    util: usize,
    used: usize,
    index: Option<usize>,
    bus: Option<usize>,
    timestamp: Option<usize>,
}

/// The GPU series of one input.
#[derive(Debug)]
pub(crate) struct GpuCsv {
    header: memmem::Finder<'static>,
    layout: Option<Layout>,
    gpus: Vec<Gpu>,
}

impl Default for GpuCsv {
    fn default() -> Self {
        GpuCsv {
            header: memmem::Finder::new("utilization.gpu"),
            layout: None,
            gpus: Vec::new(),
        }
    }
}

/// What is kept about one GPU.
#[derive(Debug)]
struct Gpu {
    /// The `index`, else the PCI bus id.
    id: String,
    /// The PCI bus id, when a row names both.
    bus: Option<String>,
    /// Utilisation (percent) of the rows with memory in use; `step` counts
    /// those rows.
    busy: Series,
    max_util: f64,
    max_used_mib: f64,
    first_time: Option<String>,
    last_time: Option<String>,
}

/// One row's values.
struct Row<'a> {
    id: &'a str,
    bus: Option<&'a str>,
    util: f64,
    used_mib: f64,
    time: Option<&'a str>,
}

impl GpuCsv {
    /// Reads `line` when it is a header or a row; returns whether it was.
    #[cfg(test)]
    pub(crate) fn line(&mut self, line: &[u8], number: u64) -> bool {
        self.header(line) || self.row(line, number)
    }

    /// Whether a header was seen: rows may follow.
    pub(crate) fn has_header(&self) -> bool {
        self.layout.is_some()
    }

    /// Takes `line`'s columns when it is a header; returns whether it was.
    pub(crate) fn header(&mut self, line: &[u8]) -> bool {
        if self.header.find(line).is_none() {
            return false;
        }
        let Some(layout) = header(line) else {
            return false;
        };
        self.layout = Some(layout);
        true
    }

    /// Reads `line` when a header was seen and it is a row of its shape;
    /// returns whether it was.
    pub(crate) fn row(&mut self, line: &[u8], number: u64) -> bool {
        let Some(layout) = self.layout else {
            return false;
        };
        let Some(row) = row(&layout, line) else {
            return false;
        };
        self.push(&row, number);
        true
    }

    fn push(&mut self, row: &Row<'_>, number: u64) {
        let at = match self.gpus.iter().position(|g| g.id == row.id) {
            Some(at) => at,
            None if self.gpus.len() < MAX_GPUS => {
                let position = self.gpus.len();
                let capacity = series::capacity_at(position, FULL_GPUS);
                self.gpus.push(Gpu {
                    id: row.id.to_owned(),
                    bus: row.bus.filter(|b| *b != row.id).map(str::to_owned),
                    busy: Series::with_capacity(capacity),
                    max_util: 0.0,
                    max_used_mib: 0.0,
                    first_time: None,
                    last_time: None,
                });
                position
            }
            None => return,
        };
        let Some(gpu) = self.gpus.get_mut(at) else {
            return;
        };
        if row.used_mib <= 0.0 {
            return;
        }
        gpu.busy.push(Sample {
            step: gpu.busy.seen() + 1,
            value: row.util,
            line: number,
        });
        gpu.max_util = gpu.max_util.max(row.util);
        gpu.max_used_mib = gpu.max_used_mib.max(row.used_mib);
        if let Some(time) = row.time {
            if gpu.first_time.is_none() {
                gpu.first_time = Some(time.to_owned());
            }
            match &mut gpu.last_time {
                Some(last) => {
                    last.clear();
                    last.push_str(time);
                }
                None => gpu.last_time = Some(time.to_owned()),
            }
        }
    }

    /// Appends what `later` read from the lines after this one's (the next
    /// part of the same input), its line numbers moved on by `line_shift`.
    ///
    /// A part scanned on its own reads rows only after a header inside it:
    /// when a large file is scanned in parts, the header is in the first
    /// part only, so the later parts' rows are not read and the series
    /// cover the first part (the sentence's count and times say how much).
    /// A later part that has a header of its own (a second monitoring run
    /// appended to the file) adds its rows to the same GPUs.
    pub(crate) fn absorb(&mut self, later: GpuCsv, line_shift: u64) {
        if later.layout.is_some() {
            self.layout = later.layout;
        }
        for theirs in later.gpus {
            let at = match self.gpus.iter().position(|g| g.id == theirs.id) {
                Some(at) => at,
                None if self.gpus.len() < MAX_GPUS => {
                    self.gpus.push(Gpu {
                        busy: Series::with_capacity(series::CAPACITY),
                        first_time: None,
                        last_time: None,
                        max_util: 0.0,
                        max_used_mib: 0.0,
                        bus: None,
                        id: theirs.id.clone(),
                    });
                    self.gpus.len() - 1
                }
                None => continue,
            };
            let Some(mine) = self.gpus.get_mut(at) else {
                continue;
            };
            let before = mine.busy.seen();
            for sample in theirs.busy.samples() {
                mine.busy.push(Sample {
                    step: sample.step.saturating_add(before),
                    line: sample.line.saturating_add(line_shift),
                    ..sample
                });
            }
            mine.max_util = mine.max_util.max(theirs.max_util);
            mine.max_used_mib = mine.max_used_mib.max(theirs.max_used_mib);
            mine.bus = mine.bus.take().or(theirs.bus);
            mine.first_time = mine.first_time.take().or(theirs.first_time);
            if theirs.last_time.is_some() {
                mine.last_time = theirs.last_time;
            }
        }
    }

    /// `trend: GPU 0 utilisation is 0% (median of 84 samples, at most 1%,
    /// while up to 915.0 MiB of its memory was in use, from 2026/11/29
    /// 20:39:34.096 to 2026/11/29 20:40:14.643)`, per idle GPU.
    /// Each idle GPU's trend, with its utilisation curve.
    pub(crate) fn trends(&self) -> impl Iterator<Item = (Found, Curve)> + '_ {
        self.gpus.iter().filter_map(|gpu| {
            let found = gpu.idle()?;
            Some((found, gpu.busy.curve("GPU utilisation", "%")))
        })
    }
}

impl Gpu {
    fn idle(&self) -> Option<Found> {
        let n = self.busy.seen();
        if n < IDLE_MIN_SAMPLES {
            return None;
        }
        let values: Vec<f64> = self.busy.samples().map(|s| s.value).collect();
        let util = median(&values)?;
        if util > IDLE_MAX_PERCENT {
            return None;
        }
        let last = self.busy.last()?;
        let name = match &self.bus {
            Some(bus) => format!("{} ({bus})", self.id),
            None => self.id.clone(),
        };
        let span = match (&self.first_time, &self.last_time) {
            (Some(from), Some(to)) => format!(", from {from} to {to}"),
            _ => String::new(),
        };
        let text = format!(
            "trend: GPU {name} utilisation is {}% (median of {n} samples, at most {}%, while up to {} of its memory was in use{span})",
            format::percent(util),
            format::percent(self.max_util),
            format::size(self.max_used_mib * format::MIB),
        );
        Some(Found::new(last.line, text))
    }
}

/// The fields of a csv line, trimmed; `None` past [`MAX_FIELDS`].
fn fields(line: &str) -> Option<Vec<&str>> {
    let mut out = Vec::new();
    for field in line.split(',') {
        if out.len() >= MAX_FIELDS {
            return None;
        }
        out.push(field.trim());
    }
    Some(out)
}

/// A `--query-gpu` header: every field a property name (`memory.used`),
/// optionally with its unit (`memory.used [MiB]`).
fn header(line: &[u8]) -> Option<Layout> {
    let line = std::str::from_utf8(line).ok()?;
    let names = fields(line)?
        .into_iter()
        .map(
            |f| match f.strip_suffix(']').and_then(|f| f.split_once(" [")) {
                Some((name, _unit)) => name,
                None => f,
            },
        )
        .collect::<Vec<_>>();
    let property = |name: &&str| {
        name.starts_with(|c: char| c.is_ascii_lowercase())
            && name
                .chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '.' || c == '_')
    };
    if names.len() < 2 || !names.iter().all(property) {
        return None;
    }
    let at = |wanted: &str| names.iter().position(|n| *n == wanted);
    let layout = Layout {
        fields: names.len(),
        util: at("utilization.gpu")?,
        used: at("memory.used")?,
        index: at("index"),
        bus: at("pci.bus_id"),
        timestamp: at("timestamp"),
    };
    (layout.index.is_some() || layout.bus.is_some()).then_some(layout)
}

/// A row of `layout`'s shape with readable values.
fn row<'a>(layout: &Layout, line: &'a [u8]) -> Option<Row<'a>> {
    let line = std::str::from_utf8(line).ok()?;
    let fields = fields(line)?;
    if fields.len() != layout.fields {
        return None;
    }
    let get = |at: usize| fields.get(at).copied();
    let util = number(get(layout.util)?, "%").filter(|u| (0.0..=100.0).contains(u))?;
    let used_mib = number(get(layout.used)?, "MiB")?;
    let bus = match layout.bus {
        Some(at) => Some(get(at).filter(|b| is_bus_id(b))?),
        None => None,
    };
    let id = match layout.index {
        Some(at) => get(at).filter(|i| i.parse::<u32>().is_ok())?,
        None => bus?,
    };
    let time = layout
        .timestamp
        .and_then(get)
        .filter(|t| !t.is_empty() && t.len() <= TEXT_MAX)
        .filter(|t| {
            t.chars().all(|c| {
                c.is_ascii_alphanumeric() || matches!(c, '/' | '-' | ':' | '.' | ' ' | '+')
            })
        });
    Some(Row {
        id,
        bus,
        util,
        used_mib,
        time,
    })
}

/// `93 %` / `912 MiB` with `unit`, or a bare number (`nounits`).
fn number(field: &str, unit: &str) -> Option<f64> {
    let digits = field.strip_suffix(unit).map_or(field, str::trim_end);
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit() || b == b'.') {
        return None;
    }
    digits.parse::<f64>().ok().filter(|v| v.is_finite())
}

/// `00000000:00:06.0`.
fn is_bus_id(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= TEXT_MAX
        && s.contains(':')
        && s.chars()
            .all(|c| c.is_ascii_hexdigit() || c == ':' || c == '.')
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    const HEADER: &str = "timestamp, index, utilization.gpu [%], utilization.memory [%], memory.used [MiB], memory.total [MiB], power.draw [W]";

    fn row_line(second: u32, util: u32, used: u32) -> String {
        format!(
            "2026/11/29 20:39:{second:02}.123, 0, {util} %, 0 %, {used} MiB, 143771 MiB, 123.79 W"
        )
    }

    /// Feeds `lines` from line 1; returns the trend sentences.
    fn read(lines: &[String]) -> Vec<String> {
        let mut csv = GpuCsv::default();
        for (i, line) in lines.iter().enumerate() {
            csv.line(line.as_bytes(), i as u64 + 1);
        }
        csv.trends().map(|(f, _)| f.text).collect()
    }

    /// A header, `idle` rows of no process, `busy` rows at `util` %, then
    /// `idle` rows again.
    fn run(idle: u32, busy: u32, util: u32) -> Vec<String> {
        let mut lines = vec![HEADER.to_owned()];
        let mut t = 0;
        for _ in 0..idle {
            lines.push(row_line(t % 60, 0, 0));
            t += 1;
        }
        for _ in 0..busy {
            lines.push(row_line(t % 60, util, 912));
            t += 1;
        }
        for _ in 0..idle {
            lines.push(row_line(t % 60, 0, 0));
            t += 1;
        }
        lines
    }

    #[test]
    fn header_with_and_without_units() {
        let layout = header(HEADER.as_bytes()).unwrap();
        assert_eq!(
            layout,
            Layout {
                fields: 7,
                util: 2,
                used: 4,
                index: Some(1),
                bus: None,
                timestamp: Some(0),
            }
        );
        let bare = header(b"index, pci.bus_id, utilization.gpu, memory.used").unwrap();
        assert_eq!((bare.util, bare.used, bare.bus), (2, 3, Some(1)));
        // No GPU column, no memory column, or not a header at all.
        assert_eq!(header(b"utilization.gpu [%], memory.used [MiB]"), None);
        assert_eq!(header(b"index, utilization.gpu [%]"), None);
        assert_eq!(
            header(b"GPU utilization.gpu is 0 %, memory.used 3 MiB, index 0"),
            None
        );
    }

    #[test]
    fn an_idle_gpu_holding_memory() {
        let got = read(&run(5, 30, 1));
        assert_eq!(
            got,
            vec!["trend: GPU 0 utilisation is 1% (median of 30 samples, at most 1%, while up to 912.0 MiB of its memory was in use, from 2026/11/29 20:39:05.123 to 2026/11/29 20:39:34.123)"]
        );
    }

    #[test]
    fn a_busy_gpu_and_rows_without_a_process_are_quiet() {
        assert!(read(&run(5, 30, 97)).is_empty());
        // 40 rows of 0 %, but no memory in use in any of them.
        assert!(read(&run(40, 0, 0)).is_empty());
        // Too few rows to judge.
        assert!(read(&run(5, 19, 0)).is_empty());
        // A slow start (0 % while loading) before a long busy stretch.
        let mut lines = run(0, 15, 0);
        lines.extend(run(0, 30, 95).into_iter().skip(1));
        assert!(read(&lines).is_empty());
    }

    #[test]
    fn rows_need_a_header_and_their_shape() {
        let mut lines = run(0, 30, 0);
        lines.remove(0);
        assert!(read(&lines).is_empty(), "no header, nothing read");
        let mut lines = run(0, 30, 0);
        // Unreadable rows and other lines in between are skipped.
        lines.insert(
            5,
            "2026/11/29 20:39:48.123, 0, [N/A], 0 %, 912 MiB, 143771 MiB, [N/A]".to_owned(),
        );
        lines.insert(6, "step 3 | loss 0.5".to_owned());
        assert_eq!(read(&lines).len(), 1);
    }

    #[test]
    fn nounits_rows_and_several_gpus_by_bus_id() {
        let mut lines = vec!["pci.bus_id, utilization.gpu [%], memory.used [MiB]".to_owned()];
        for _ in 0..25 {
            lines.push("00000000:00:06.0, 3, 1024".to_owned());
            lines.push("00000000:00:07.0, 99, 1024".to_owned());
        }
        assert_eq!(
            read(&lines),
            vec!["trend: GPU 00000000:00:06.0 utilisation is 3% (median of 25 samples, at most 3%, while up to 1024.0 MiB of its memory was in use)"]
        );
    }

    #[test]
    fn index_and_bus_id_both_named() {
        let mut lines = vec!["index, pci.bus_id, utilization.gpu, memory.used".to_owned()];
        lines.extend((0..25).map(|_| "1, 00000000:00:07.0, 0, 500".to_owned()));
        let got = read(&lines);
        assert!(
            got[0].starts_with("trend: GPU 1 (00000000:00:07.0) utilisation is 0% "),
            "{got:?}"
        );
    }

    #[test]
    fn parts_after_the_header_part() {
        let lines = run(2, 40, 0);
        let mut first = GpuCsv::default();
        let mut second = GpuCsv::default();
        for (i, line) in lines.iter().take(30).enumerate() {
            first.line(line.as_bytes(), i as u64 + 1);
        }
        for (i, line) in lines.iter().skip(30).enumerate() {
            second.line(line.as_bytes(), i as u64 + 1);
        }
        // The second part has no header: its rows are not read.
        first.absorb(second, 30);
        let got: Vec<Found> = first.trends().map(|(f, _)| f).collect();
        assert!(got[0].text.contains("median of 27 samples"), "{got:?}");
        assert_eq!(got[0].line, 30);

        // A part with a header of its own adds to the same GPU.
        let mut first = GpuCsv::default();
        let mut second = GpuCsv::default();
        for (i, line) in run(0, 15, 0).iter().enumerate() {
            first.line(line.as_bytes(), i as u64 + 1);
        }
        for (i, line) in run(0, 15, 0).iter().enumerate() {
            second.line(line.as_bytes(), i as u64 + 1);
        }
        assert_eq!(first.trends().count(), 0);
        first.absorb(second, 16);
        let got: Vec<Found> = first.trends().map(|(f, _)| f).collect();
        assert!(got[0].text.contains("median of 30 samples"), "{got:?}");
        assert_eq!(got[0].line, 32);
    }
}
