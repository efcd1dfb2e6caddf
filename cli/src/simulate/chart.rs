//! The SVG chart of a simulation: one panel per policy, sharing one time axis and one count
//! scale, with attempts (the load offered) and the requests ended by outcome per bar (the
//! successes: goodput), and the p99 latency of each bar's successes on a scale of its own,
//! over the shaded fault windows. Plain SVG text (a few lines and rectangles; no plotting
//! library needed).

use std::fmt::Write;

use super::results::{Bucket, Run};
use super::scenario::Scenario;

const WIDTH: f64 = 1000.0;
const PANEL: f64 = 200.0;
const LEFT: f64 = 70.0;
const RIGHT: f64 = 190.0;
const TOP: f64 = 50.0;
const GAP: f64 = 50.0;

/// A series drawn: its name, its colour, and how a bucket gives its value.
type Series = (&'static str, &'static str, fn(&Bucket) -> u64);

/// The series drawn.
const SERIES: [Series; 5] = [
    ("attempts (offered load)", "#1f77b4", |b| b.attempts),
    ("succeeded (goodput)", "#2ca02c", |b| b.ended.succeeded),
    ("cancelled", "#ff7f0e", |b| b.ended.cancelled),
    ("ambiguous timeouts", "#d62728", |b| {
        b.ended.ambiguous_timeouts
    }),
    ("unambiguous timeouts", "#9467bd", |b| {
        b.ended.unambiguous_timeouts
    }),
];

/// Escapes text for SVG.
pub(super) fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

/// An SVG document of `(width, height)` on white, its text `font_size` pixels high, with
/// `title` at `(x, y)`; the caller draws the rest and closes it.
pub(super) fn begin(
    (width, height): (f64, f64),
    font_size: u32,
    title: &str,
    (x, y): (f64, f64),
) -> String {
    let mut svg = String::new();
    let _ = writeln!(
        svg,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" viewBox="0 0 {width} {height}" font-family="sans-serif" font-size="{font_size}">"#
    );
    let _ = writeln!(svg, r#"<rect width="100%" height="100%" fill="white"/>"#);
    let _ = writeln!(
        svg,
        r#"<text x="{x}" y="{y}" font-size="15">{}</text>"#,
        escape(title)
    );
    svg
}

/// A tick step giving about five ticks up to `max`.
fn step(max: f64) -> f64 {
    let raw = (max / 5.0).max(1e-9);
    let magnitude = 10f64.powf(raw.log10().floor());
    [1.0, 2.0, 5.0, 10.0]
        .iter()
        .map(|m| m * magnitude)
        .find(|s| *s >= raw)
        .unwrap_or(10.0 * magnitude)
}

/// The scales every panel shares.
struct Scales<'s> {
    scenario: &'s Scenario,
    /// The time axis's length.
    span_s: f64,
    /// The count scale's top.
    max: f64,
    /// The p99 scale's top, in milliseconds.
    max_p99: f64,
    plot_width: f64,
}

impl Scales<'_> {
    /// The x of moment `t_s`.
    fn x(&self, t_s: f64) -> f64 {
        LEFT + t_s / self.span_s * self.plot_width
    }

    /// The x of bar `i`'s middle.
    fn bar_x(&self, i: usize) -> f64 {
        self.x((i as f64 + 0.5) * self.scenario.bucket_s)
    }
}

/// The chart of `runs` of `scenario`.
pub fn render(scenario: &Scenario, title: &str, runs: &[Run]) -> String {
    let bars = runs
        .iter()
        .map(|r| r.buckets.len())
        .max()
        .unwrap_or(1)
        .max(1);
    let max = runs
        .iter()
        .flat_map(|r| &r.buckets)
        .flat_map(|b| SERIES.iter().map(move |(_, _, value)| value(b)))
        .max()
        .unwrap_or(1)
        .max(1) as f64;
    let p99s: Vec<Vec<Option<f64>>> = runs.iter().map(Run::bucket_p99_ms).collect();
    let scales = Scales {
        scenario,
        span_s: bars as f64 * scenario.bucket_s,
        max,
        max_p99: (p99s.iter().flatten().flatten().copied())
            .fold(0.0, f64::max)
            .max(1.0),
        plot_width: WIDTH - LEFT - RIGHT,
    };
    let height = TOP + runs.len() as f64 * (PANEL + GAP) + 10.0;
    let mut svg = begin((WIDTH, height), 12, title, (LEFT, 24.0));
    for (p, run) in runs.iter().enumerate() {
        let top = TOP + p as f64 * (PANEL + GAP);
        panel(&mut svg, &scales, top, run, &p99s[p]);
    }
    let _ = writeln!(
        svg,
        r##"<text x="{LEFT}" y="{:.1}" fill="#555" font-size="10">per {} s bar; shaded: fault windows</text>"##,
        height - 4.0,
        scenario.bucket_s
    );
    svg.push_str("</svg>\n");
    svg
}

/// One policy's panel, from `top`: the fault windows, the axes, a line per series and the
/// p99 latency of each bar's successes (`p99s`), and the legend.
fn panel(svg: &mut String, scales: &Scales<'_>, top: f64, run: &Run, p99s: &[Option<f64>]) {
    let bottom = top + PANEL;
    let y = |v: f64| bottom - v / scales.max * PANEL;
    for fault in &scales.scenario.faults {
        let window = fault.window();
        let (x0, x1) = (
            scales.x(window.from_s),
            scales.x(window.until_s.min(scales.span_s)),
        );
        let _ = writeln!(
            svg,
            r##"<rect x="{x0:.1}" y="{top}" width="{:.1}" height="{PANEL}" fill="#000" fill-opacity="0.07"/><text x="{:.1}" y="{:.1}" fill="#555" font-size="10">{}</text>"##,
            (x1 - x0).max(0.5),
            x0 + 3.0,
            top + 12.0,
            fault.name()
        );
    }
    axes(svg, scales, top, &run.policy);
    // One polyline per series, a point per bar's middle.
    for (name, colour, value) in SERIES {
        let points: Vec<String> = (run.buckets.iter().enumerate())
            .map(|(i, b)| format!("{:.1},{:.1}", scales.bar_x(i), y(value(b) as f64)))
            .collect();
        let _ = writeln!(
            svg,
            r#"<polyline fill="none" stroke="{colour}" stroke-width="1.6" points="{}"><title>{name}</title></polyline>"#,
            points.join(" ")
        );
    }
    // The p99 latency of each bar's successes, on its own scale (0 to the largest bar's).
    let p99_points: Vec<String> = (p99s.iter().enumerate())
        .filter_map(|(i, p99)| {
            let y = |ms: f64| bottom - ms / scales.max_p99 * PANEL;
            p99.map(|ms| format!("{:.1},{:.1}", scales.bar_x(i), y(ms)))
        })
        .collect();
    let _ = writeln!(
        svg,
        r##"<polyline fill="none" stroke="#000" stroke-width="1.2" stroke-dasharray="4 3" points="{}"><title>p99 ms</title></polyline>"##,
        p99_points.join(" ")
    );
    legend(svg, scales, top);
}

/// A panel's axes, their ticks, and its title `policy`.
fn axes(svg: &mut String, scales: &Scales<'_>, top: f64, policy: &str) {
    let bottom = top + PANEL;
    let y = |v: f64| bottom - v / scales.max * PANEL;
    let _ = writeln!(
        svg,
        r##"<line x1="{LEFT}" y1="{bottom}" x2="{:.1}" y2="{bottom}" stroke="#333"/><line x1="{LEFT}" y1="{top}" x2="{LEFT}" y2="{bottom}" stroke="#333"/>"##,
        LEFT + scales.plot_width
    );
    let _ = writeln!(
        svg,
        r#"<text x="{LEFT}" y="{:.1}" font-weight="bold">{}</text>"#,
        top - 6.0,
        escape(policy)
    );
    let y_step = step(scales.max);
    let mut v = 0.0;
    while v <= scales.max {
        let _ = writeln!(
            svg,
            r##"<text x="{:.1}" y="{:.1}" text-anchor="end" fill="#333">{v}</text><line x1="{:.1}" y1="{:.1}" x2="{LEFT}" y2="{:.1}" stroke="#333"/>"##,
            LEFT - 8.0,
            y(v) + 4.0,
            LEFT - 4.0,
            y(v),
            y(v)
        );
        v += y_step;
    }
    let t_step = step(scales.span_s);
    let mut t = 0.0;
    while t <= scales.span_s + 1e-9 {
        let _ = writeln!(
            svg,
            r##"<text x="{:.1}" y="{:.1}" text-anchor="middle" fill="#333">{t}s</text>"##,
            scales.x(t),
            bottom + 15.0
        );
        t += t_step;
    }
}

/// A panel's legend: the p99 line's, then a line per series.
fn legend(svg: &mut String, scales: &Scales<'_>, top: f64) {
    let lx = LEFT + scales.plot_width + 14.0;
    let ly = top + 14.0 + SERIES.len() as f64 * 18.0;
    let _ = writeln!(
        svg,
        r##"<line x1="{lx}" y1="{ly}" x2="{}" y2="{ly}" stroke="#000" stroke-width="2" stroke-dasharray="4 3"/><text x="{}" y="{}">p99 ms (top: {:.0})</text>"##,
        lx + 18.0,
        lx + 24.0,
        ly + 4.0,
        scales.max_p99
    );
    for (k, (name, colour, _)) in SERIES.iter().enumerate() {
        let ly = top + 14.0 + k as f64 * 18.0;
        let _ = writeln!(
            svg,
            r#"<line x1="{lx}" y1="{ly}" x2="{}" y2="{ly}" stroke="{colour}" stroke-width="3"/><text x="{}" y="{}">{name}</text>"#,
            lx + 18.0,
            lx + 24.0,
            ly + 4.0
        );
    }
}
