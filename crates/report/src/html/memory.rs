//! A memory snapshot's segments as an SVG map: one bar per segment, its
//! width the segment's share of the largest, cut into its runs of
//! allocated, freeing and free blocks. Fragmentation shows as free gaps
//! between allocated blocks; a leak as segments full of blocks.

use super::text;
use crate::sparkline::value;
use coroner_model::{InputSummary, MemoryMap, Report};
use maud::{html, Markup};

const WIDTH: f64 = 1000.0;
const LABEL: f64 = 150.0;
const BAR: f64 = 14.0;
const GAP: f64 = 6.0;
/// The most segments drawn.
const MAX_BARS: usize = 48;

pub(super) fn render(report: &Report) -> Markup {
    let maps: Vec<(&InputSummary, &MemoryMap)> = report
        .inputs
        .iter()
        .filter_map(|i| i.memory.as_deref().map(|m| (i, m)))
        .filter(|(_, m)| !m.segments.is_empty())
        .collect();
    if maps.is_empty() {
        return html! {};
    }
    html! {
        section #memory {
            h2 { "Memory snapshot" }
            @for (input, map) in maps {
                (one(input, map))
            }
        }
    }
}

fn one(input: &InputSummary, map: &MemoryMap) -> Markup {
    let mut order: Vec<usize> = (0..map.segments.len()).collect();
    order.sort_by_key(|&i| std::cmp::Reverse(map.segments[i].size));
    order.truncate(MAX_BARS);
    let largest = order.first().map_or(1, |&i| map.segments[i].size).max(1) as f64;
    let total = |state: &str| -> u64 {
        map.segments
            .iter()
            .flat_map(|s| &s.runs)
            .filter(|r| r.state == state)
            .map(|r| r.bytes)
            .sum()
    };
    let reserved: u64 = map.segments.iter().map(|s| s.size).sum();
    let not_drawn = map.segments.len() - order.len() + map.segments_omitted as usize;
    let height = (BAR + GAP) * order.len() as f64 + 8.0;
    let plot = WIDTH - LABEL - 10.0;
    html! {
        figure.figure {
            figcaption {
                (text(&input.path, 300)) ": " (map.segments.len() as u64 + map.segments_omitted) " segment(s), "
                (value(reserved as f64, "bytes")) " reserved, "
                (value(total("allocated") as f64, "bytes")) " allocated, "
                (value(total("free") as f64, "bytes")) " free inside segments. The largest segments, each bar to scale."
            }
            svg viewBox=(format!("0 0 {WIDTH} {height:.0}")) role="img" aria-label="memory segments" {
                @for (row, &i) in order.iter().enumerate() {
                    @let seg = &map.segments[i];
                    @let y = 4.0 + (BAR + GAP) * row as f64;
                    @let scale = plot / largest;
                    text.lane-label x=(LABEL - 8.0) y=(px(y + BAR - 3.0)) text-anchor="end" {
                        "GPU " (seg.device) " · " (value(seg.size as f64, "bytes"))
                    }
                    rect.lane x=(LABEL) y=(px(y)) width=(px(seg.size as f64 * scale)) height=(BAR) {}
                    @let mut at = LABEL;
                    @for run in &seg.runs {
                        @let w = run.bytes as f64 * scale;
                        rect class=(format!("mem-{}", run.state)) x=(px(at)) y=(px(y)) width=(px(w.max(0.5))) height=(BAR) {
                            title { (run.state) ": " (value(run.bytes as f64, "bytes")) " in " (run.blocks) " block(s)" }
                        }
                        ({ at += w; "" })
                    }
                }
            }
            div.legend {
                span.l-mem-allocated { "allocated" }
                span.l-mem-freeing { "freed, waiting for its stream" }
                span.l-mem-free { "free (reserved, unused)" }
            }
            @if not_drawn > 0 {
                p.cap { (not_drawn) " smaller segment(s) not drawn." }
            }
        }
    }
}

fn px(v: f64) -> String {
    format!("{v:.1}")
}
