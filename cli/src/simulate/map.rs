//! The SVG map of a sweep: one panel per policy on one colour scale (side by side for two
//! axes, one above the other for one), a cell per combination of the axes' values coloured by
//! the probability of not recovering within the stated time, with its 95 % Wilson interval and
//! the median recovery time written in it. Plain SVG text, like the timeline chart.

use std::fmt::Write;

use super::chart::{begin, escape};
use super::lab::Lab;
use super::sweep::round;

const CELL_W: f64 = 64.0;
const CELL_H: f64 = 46.0;
const LEFT: f64 = 80.0;
const TOP: f64 = 80.0;
const GAP: f64 = 90.0;
const BOTTOM: f64 = 110.0;

/// The fill of a cell whose probability of not recovering is `p`: green at 0, through yellow,
/// to red at 1.
fn colour(p: f64) -> String {
    format!(
        "hsl({:.0}, 70%, {:.0}%)",
        120.0 * (1.0 - p),
        62.0 - 12.0 * p
    )
}

/// A value for a label: short, without the steps' noise.
fn label(value: f64) -> String {
    format!("{}", round(value))
}

/// The map of `lab`, titled `title`.
pub fn render(lab: &Lab, title: &str) -> String {
    let nx = lab.axes.first().map_or(1, |a| a.values.len());
    let ny = lab.axes.get(1).map_or(1, |a| a.values.len());
    let panels = lab.cells.first().map_or(0, |(_, stats)| stats.len());
    let (panel_w, panel_h) = (nx as f64 * CELL_W + GAP, ny as f64 * CELL_H + GAP);
    // One axis: the panels' rows one above the other, so that the values read across.
    let stacked = lab.axes.len() < 2;
    let (across, down) = if stacked { (1, panels) } else { (panels, 1) };
    // Wide enough for the legend's lines.
    let width = (LEFT + across as f64 * panel_w).max(1000.0);
    let height = TOP + down as f64 * panel_h + BOTTOM - GAP;
    let mut svg = begin((width, height), 11, title, (LEFT, 22.0));
    for p in 0..panels {
        let at = if stacked {
            (LEFT, TOP + p as f64 * panel_h)
        } else {
            (LEFT + p as f64 * panel_w, TOP)
        };
        panel(&mut svg, lab, p, at, (nx, ny));
    }
    legend(&mut svg, lab, height - BOTTOM + 62.0);
    svg.push_str("</svg>\n");
    svg
}

/// Policy `p`'s panel, its top left corner at `(left, top)`: its cells, `nx` by `ny`, and the
/// axes' labels.
fn panel(svg: &mut String, lab: &Lab, p: usize, (left, top): (f64, f64), (nx, ny): (usize, usize)) {
    let policy = lab.cells.first().map_or("", |(_, s)| s[p].policy.as_str());
    let _ = writeln!(
        svg,
        r#"<text x="{left}" y="{:.1}" font-size="13" font-weight="bold">{}</text>"#,
        top - 12.0,
        escape(policy)
    );
    for (i, (cell, stats)) in lab.cells.iter().enumerate() {
        let (cx, cy) = (i % nx, i / nx);
        // The second axis grows upwards.
        let x = left + cx as f64 * CELL_W;
        let y = top + (ny - 1 - cy) as f64 * CELL_H;
        let s = &stats[p];
        let median = s
            .median_recovery_s
            .map_or_else(|| "never".into(), |m| format!("{m:.0} s"));
        let _ = writeln!(
            svg,
            r#"<g><title>{}: p = {:.3} [{:.3}, {:.3}], {} of {} seeds not recovered, median recovery {median}</title><rect x="{x:.1}" y="{y:.1}" width="{CELL_W}" height="{CELL_H}" fill="{}" stroke="white"/>"#,
            escape(&super::sweep::describe(&lab.axes, &cell.values)),
            s.p_no_recovery,
            s.p_no_recovery_low,
            s.p_no_recovery_high,
            s.not_recovered,
            s.seeds,
            colour(s.p_no_recovery),
        );
        let mid = x + CELL_W / 2.0;
        let _ = writeln!(
            svg,
            r#"<text x="{mid:.1}" y="{:.1}" text-anchor="middle" font-size="12">{:.0}%</text><text x="{mid:.1}" y="{:.1}" text-anchor="middle" font-size="9">{:.0}–{:.0}</text><text x="{mid:.1}" y="{:.1}" text-anchor="middle" font-size="9">{median}</text></g>"#,
            y + 15.0,
            100.0 * s.p_no_recovery,
            y + 27.0,
            100.0 * s.p_no_recovery_low,
            100.0 * s.p_no_recovery_high,
            y + 39.0,
        );
    }
    axis_labels(svg, lab, (left, top), (nx, ny));
}

/// The axes' values and keys around a panel at `(left, top)`.
fn axis_labels(svg: &mut String, lab: &Lab, (left, top): (f64, f64), (nx, ny): (usize, usize)) {
    let bottom = top + ny as f64 * CELL_H;
    if let Some(axis) = lab.axes.first() {
        for (i, v) in axis.values.iter().enumerate() {
            let _ = writeln!(
                svg,
                r#"<text x="{:.1}" y="{:.1}" text-anchor="middle">{}</text>"#,
                left + (i as f64 + 0.5) * CELL_W,
                bottom + 14.0,
                label(*v)
            );
        }
        let _ = writeln!(
            svg,
            r#"<text x="{:.1}" y="{:.1}" text-anchor="middle" font-size="12">{}</text>"#,
            left + nx as f64 * CELL_W / 2.0,
            bottom + 32.0,
            escape(&axis.key)
        );
    }
    if let Some(axis) = lab.axes.get(1) {
        for (i, v) in axis.values.iter().enumerate() {
            let _ = writeln!(
                svg,
                r#"<text x="{:.1}" y="{:.1}" text-anchor="end">{}</text>"#,
                left - 4.0,
                top + (ny - 1 - i) as f64 * CELL_H + CELL_H / 2.0 + 4.0,
                label(*v)
            );
        }
        let _ = writeln!(
            svg,
            r#"<text x="{:.1}" y="{:.1}" font-size="12">↑ {}</text>"#,
            left - 50.0,
            top - 30.0,
            escape(&axis.key)
        );
    }
}

/// The colour scale and what a cell says, at `top`.
fn legend(svg: &mut String, lab: &Lab, top: f64) {
    for i in 0..=10 {
        let p = i as f64 / 10.0;
        let _ = writeln!(
            svg,
            r#"<rect x="{:.1}" y="{top:.1}" width="24" height="12" fill="{}"/><text x="{:.1}" y="{:.1}" text-anchor="middle" font-size="9">{:.0}%</text>"#,
            LEFT + i as f64 * 24.0,
            colour(p),
            LEFT + i as f64 * 24.0 + 12.0,
            top + 23.0,
            100.0 * p
        );
    }
    let Some((cell, _)) = lab.cells.first() else {
        return;
    };
    let r = &cell.scenario.recovery;
    let within = r.within_s.map_or_else(
        || "before the arrivals end".to_owned(),
        |w| format!("within {w} s"),
    );
    let _ = writeln!(
        svg,
        r##"<text x="{:.1}" y="{:.1}" fill="#333">Each cell: P(not recovered) over {} seeds, its 95 % Wilson interval, the median recovery time.</text><text x="{0:.1}" y="{:.1}" fill="#333">Recovered: successes ≥ {:.0} % of arrivals for {} s, {within}, after the last fault ends.</text>"##,
        LEFT + 11.0 * 24.0 + 12.0,
        top + 4.0,
        lab.seeds,
        top + 20.0,
        100.0 * r.goodput_share,
        r.hold_s,
    );
}
