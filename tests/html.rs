//! `--format html` rendered by a real browser: headless Chromium parses
//! the page of real incidents, and the test reads the DOM it built (the
//! verdict, one lane per rank, the curves, the memory map, the core), the
//! requests it made (none from the page) and a screenshot of it.
//!
//! Chromium is `CORONER_CHROMIUM`, else `chromium`, `chromium-browser` or
//! `google-chrome` on the PATH. Without one these tests say so loudly and
//! pass, unless `CORONER_REQUIRE_CHROMIUM` is set (CI sets it once it has
//! installed Chromium), when they fail. `CORONER_WRITE_SCREENSHOTS=1`
//! writes the screenshots the docs show to `docs/images/`.

use crate::util::{coroner, root};
use std::path::{Path, PathBuf};
use std::process::Command;

fn chromium() -> Option<PathBuf> {
    if let Some(path) = std::env::var_os("CORONER_CHROMIUM") {
        return Some(PathBuf::from(path));
    }
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .flat_map(|dir| {
            ["chromium", "chromium-browser", "google-chrome"].map(|name| dir.join(name))
        })
        .find(|p| p.is_file())
}

/// Chromium, or `None` after saying loudly that the test did not run.
fn browser(test: &str) -> Option<PathBuf> {
    let found = chromium();
    if found.is_none() {
        assert!(
            std::env::var_os("CORONER_REQUIRE_CHROMIUM").is_none(),
            "CORONER_REQUIRE_CHROMIUM is set but no Chromium was found"
        );
        eprintln!(
            "\n*** {test}: NOT RUN: no Chromium (set CORONER_CHROMIUM or install the `chromium` package) ***\n"
        );
    }
    found
}

/// A scratch directory for this test's pages.
fn scratch(name: &str) -> PathBuf {
    let dir = root().join("target/html-tests").join(name);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// `coroner analyze --format html -o PAGE ARGS...`.
fn page(args: &[&str], page: &Path) {
    let out = coroner()
        .args(["analyze", "--format", "html", "-o"])
        .arg(page)
        .args(args)
        .output()
        .unwrap();
    assert!(
        out.status.code().is_some_and(|c| c < 2),
        "coroner failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Chromium with everything it would fetch for itself turned off.
fn headless(chromium: &Path, profile: &Path) -> Command {
    let mut cmd = Command::new(chromium);
    cmd.args([
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--hide-scrollbars",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--disable-default-apps",
        "--mute-audio",
    ])
    .arg(format!("--user-data-dir={}", profile.display()));
    cmd
}

/// The DOM Chromium built from `page`, and the URLs the page itself asked
/// for (requests whose initiator is an origin: Chromium's own background
/// requests have none).
fn load(chromium: &Path, page: &Path) -> (String, Vec<String>) {
    let dir = page.parent().unwrap();
    let log = dir.join(format!(
        "{}.netlog.json",
        page.file_stem().unwrap().to_string_lossy()
    ));
    let out = headless(chromium, &dir.join("profile"))
        .arg(format!("--log-net-log={}", log.display()))
        .arg("--dump-dom")
        .arg(format!("file://{}", page.display()))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "chromium failed on {}",
        page.display()
    );
    let dom = String::from_utf8_lossy(&out.stdout).into_owned();
    let net: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&log).unwrap()).unwrap();
    let mut fetched = Vec::new();
    for event in net["events"].as_array().into_iter().flatten() {
        let params = &event["params"];
        if let (Some(url), Some(initiator)) = (params["url"].as_str(), params["initiator"].as_str())
        {
            if initiator != "not an origin" {
                fetched.push(format!("{url} (from {initiator})"));
            }
        }
    }
    (dom, fetched)
}

/// A screenshot of `page`, 1280 pixels wide; returns its path.
fn screenshot(chromium: &Path, page: &Path, height: u32) -> PathBuf {
    let png = page.with_extension("png");
    let out = headless(chromium, &page.parent().unwrap().join("profile"))
        .arg(format!("--window-size=1280,{height}"))
        .arg(format!("--screenshot={}", png.display()))
        .arg(format!("file://{}", page.display()))
        .output()
        .unwrap();
    assert!(out.status.success(), "no screenshot of {}", page.display());
    let bytes = std::fs::read(&png).unwrap();
    assert!(
        bytes.starts_with(b"\x89PNG"),
        "not a PNG: {}",
        png.display()
    );
    assert!(
        bytes.len() > 20_000,
        "a blank screenshot? {}",
        png.display()
    );
    png
}

fn count(haystack: &str, needle: &str) -> usize {
    haystack.matches(needle).count()
}

/// The incidents the docs show, and what each page must hold.
struct Incident {
    name: &'static str,
    args: &'static [&'static str],
    verdict: &'static str,
    lanes: &'static [&'static str],
    curves: &'static [&'static str],
    holds: &'static [&'static str],
}

const INCIDENTS: [Incident; 5] = [
    Incident {
        name: "oom_then_timeout",
        args: &["fixtures/multi-gpu/oom_then_timeout"],
        verdict: "gpu-oom",
        lanes: &["rank 0", "rank 1", "no rank"],
        curves: &[],
        holds: &["issued 26, completed 24", "explained by"],
    },
    Incident {
        name: "stall",
        args: &["fixtures/multi-gpu/stall"],
        verdict: "collective-timeout",
        lanes: &["rank 0", "rank 1", "no rank"],
        curves: &[],
        holds: &["issued 20, completed 19", "issued 19, completed 19"],
    },
    Incident {
        name: "leak",
        args: &["fixtures/metrics/leak_visible"],
        verdict: "gpu-memory-leak",
        lanes: &["job"],
        curves: &["memory allocated"],
        holds: &["least-squares line"],
    },
    Incident {
        name: "loss_scale_collapse",
        args: &["fixtures/metrics/loss_scale_collapse"],
        verdict: "nan-inf-loss",
        lanes: &["job"],
        curves: &["grad_norm", "loss scale"],
        holds: &[
            "first non-finite value (step 1)",
            "lowest loss scale (step 166)",
        ],
    },
    Incident {
        name: "gpu_core",
        args: &[
            "fixtures/gpu-cores/multi_kernel.nvcudmp.zst",
            "fixtures/gpu-cores/multi_kernel.log",
        ],
        verdict: "illegal-memory-access",
        lanes: &["job"],
        curves: &[],
        holds: &["GPU core dump", "block (", "CUDA Exception"],
    },
];

#[test]
fn chromium_renders_the_verdict_a_lane_per_rank_and_the_curves() {
    let Some(chromium) = browser("chromium_renders_the_verdict_a_lane_per_rank_and_the_curves")
    else {
        return;
    };
    let dir = scratch("incidents");
    let write_docs = std::env::var_os("CORONER_WRITE_SCREENSHOTS").is_some();
    for incident in &INCIDENTS {
        let file = dir.join(format!("{}.html", incident.name));
        page(incident.args, &file);
        let size = std::fs::metadata(&file).unwrap().len();
        assert!(size < 1 << 20, "{}: {size} bytes", incident.name);
        let (dom, fetched) = load(&chromium, &file);
        let name = incident.name;
        assert!(fetched.is_empty(), "{name}: the page fetched {fetched:?}");
        assert!(
            dom.contains(&format!("<h1>{}", incident.verdict)),
            "{name}: no verdict {}",
            incident.verdict
        );
        for lane in incident.lanes {
            assert_eq!(
                count(&dom, &format!("data-lane=\"{lane}\"")),
                1,
                "{name}: lane {lane}"
            );
        }
        assert_eq!(
            count(&dom, "class=\"lane-row\""),
            incident.lanes.len(),
            "{name}: lanes"
        );
        for metric in incident.curves {
            assert!(
                dom.contains(&format!("data-metric=\"{metric}\"")),
                "{name}: no curve of {metric}"
            );
        }
        assert_eq!(
            count(&dom, "data-metric="),
            incident.curves.len(),
            "{name}: curves"
        );
        for text in incident.holds {
            assert!(dom.contains(text), "{name}: no {text:?}");
        }
        // The root cause is marked, in its lane when it has one.
        if !incident.lanes.is_empty() {
            assert_eq!(count(&dom, "data-role=\"root\""), 1, "{name}: root marker");
        }
        let png = screenshot(&chromium, &file, 1600);
        if write_docs {
            let docs = root().join("docs/images");
            std::fs::create_dir_all(&docs).unwrap();
            std::fs::copy(&png, docs.join(format!("html-{name}.png"))).unwrap();
        }
    }
}

#[test]
fn a_memory_snapshot_is_drawn_as_its_segments() {
    let Some(chromium) = browser("a_memory_snapshot_is_drawn_as_its_segments") else {
        return;
    };
    let dir = scratch("memory");
    let file = dir.join("frag.html");
    page(&["fixtures/dumps/memory/frag_oom.pickle"], &file);
    let (dom, fetched) = load(&chromium, &file);
    assert!(fetched.is_empty(), "{fetched:?}");
    assert!(dom.contains("<h1>gpu-oom-fragmentation"));
    assert!(dom.contains("id=\"memory\""));
    // 151 free blocks between allocated ones: many runs of each state.
    assert!(count(&dom, "class=\"mem-free\"") > 100, "free runs");
    assert!(
        count(&dom, "class=\"mem-allocated\"") > 100,
        "allocated runs"
    );
}

/// The check for fetches can fail: a page that loads an image is caught.
#[test]
fn a_page_that_fetches_is_caught() {
    let Some(chromium) = browser("a_page_that_fetches_is_caught") else {
        return;
    };
    let dir = scratch("fetching");
    let file = dir.join("fetch.html");
    std::fs::write(
        &file,
        "<!DOCTYPE html><title>x</title><img src=\"http://127.0.0.1:9/x.png\">",
    )
    .unwrap();
    let (_, fetched) = load(&chromium, &file);
    assert!(
        fetched
            .iter()
            .any(|u| u.starts_with("http://127.0.0.1:9/x.png")),
        "{fetched:?}"
    );
}

#[test]
fn hostile_log_text_stays_text() {
    let Some(chromium) = browser("hostile_log_text_stays_text") else {
        return;
    };
    let dir = scratch("hostile");
    let log = dir.join("rank0.log");
    let hostile = "<script>document.title='pwned'</script></svg></style>\"'><img src=x onerror=alert(1)>\u{1b}[31m\u{8}\u{202e}evil\u{7}";
    std::fs::write(
        &log,
        format!(
            "step 1 loss 2.0\n[rank0]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. {hostile}\n[rank0]: RuntimeError: {hostile}\n"
        ),
    )
    .unwrap();
    let file = dir.join("hostile.html");
    page(&[log.to_str().unwrap()], &file);
    let (dom, fetched) = load(&chromium, &file);
    assert!(fetched.is_empty(), "{fetched:?}");
    assert!(dom.contains("<h1>gpu-oom"), "verdict");
    // The page's own script is the only one; no image, no handler.
    assert_eq!(count(&dom, "<script"), 1);
    assert_eq!(count(&dom, "<img"), 0);
    assert!(!dom.contains("onerror=\""));
    assert!(!dom.contains("<title>pwned") && !dom.contains("pwned</title>"));
    // The text is there, as text, with its controls made visible.
    assert!(dom
        .contains("&lt;script&gt;document.title='pwned'&lt;/script&gt;&lt;/svg&gt;&lt;/style&gt;"));
    assert!(dom.contains("^H\\u{202e}evil^G"), "controls shown");
    assert!(!dom.contains('\u{1b}') && !dom.contains('\u{202e}'));
}

/// The page of a leak, whole: a change to the page shows in review.
#[test]
fn the_page_of_a_memory_leak() {
    let out = coroner()
        .args([
            "analyze",
            "--format",
            "html",
            "fixtures/metrics/leak_visible",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    // One tag a line, for a readable diff.
    let page = String::from_utf8(out.stdout).unwrap().replace("><", ">\n<");
    insta::assert_snapshot!("html_leak", page);
}
