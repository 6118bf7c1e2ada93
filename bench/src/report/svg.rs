//! `report.svg`: pass time per record and the buffer bytes each key held takes, against key cardinality, a line
//! per map (colour) and dedupe buffer (dash) measured, so the chart answers the sizing question; the legend
//! sits in a strip of its own below the panels, clear of the data.

use cleaner::MapKind;
use plotters::coord::combinators::LogCoord;
use plotters::coord::types::RangedCoordf64;
use plotters::element::DashedPathElement;
use plotters::prelude::*;

use super::{Cell, Report};

fn colour(map: MapKind) -> RGBColor {
    match map {
        MapKind::Skimpy => RGBColor(200, 60, 40),
        MapKind::FullKey => RGBColor(40, 110, 200),
        MapKind::Compact => RGBColor(30, 150, 70),
        MapKind::External => RGBColor(140, 80, 170),
    }
}

/// How a buffer's lines are drawn: `(dash, gap)` in pixels, `None` for a solid line (the full buffer).
fn dash(share: f64) -> Option<(u32, u32)> {
    if share >= 1.0 {
        None
    } else if share >= 0.5 {
        Some((8, 5))
    } else {
        Some((2, 4))
    }
}

/// The buffer, as the legend says it.
fn share_name(share: f64) -> String {
    if share >= 1.0 { "full buffer (skimpy's one pass)".to_owned() } else { format!("{:.0}% of it", share * 100.0) }
}

/// What one chart plots of a cell, or `None` where it has no such figure (the external pass holds no key).
type Metric = fn(&Cell) -> Option<f64>;

/// The points of one map in one buffer: `(keys, value)` over the report's cardinalities.
fn series(report: &Report, map: MapKind, share: f64, value: Metric) -> Vec<(f64, f64)> {
    let mut points: Vec<(f64, f64)> = report
        .results
        .iter()
        .filter(|c| {
            let backend = if report.config.file_only.contains(&c.keys) { "file" } else { "mem" };
            c.map == map.name() && c.backend == backend && c.buffer_share == share
        })
        .filter_map(|c| Some((c.keys as f64, value(c)?)))
        .collect();
    points.sort_by(|a, b| a.0.total_cmp(&b.0));
    points
}

/// Every buffer share measured, largest first.
fn shares(report: &Report) -> Vec<f64> {
    let mut shares: Vec<f64> = Vec::new();
    for c in &report.results {
        if !shares.contains(&c.buffer_share) {
            shares.push(c.buffer_share);
        }
    }
    shares.sort_by(|a, b| b.total_cmp(a));
    shares
}

/// Draws a line of `points` in `map`'s colour and `share`'s dash, with a dot at each point.
fn draw_line<DB: DrawingBackend>(
    chart: &mut ChartContext<'_, DB, Cartesian2d<LogCoord<f64>, RangedCoordf64>>,
    points: &[(f64, f64)],
    map: MapKind,
    share: f64,
) -> Result<(), String> {
    let style = colour(map).stroke_width(2);
    match dash(share) {
        None => chart.draw_series(LineSeries::new(points.to_vec(), style)).map(|_| ()),
        Some((on, off)) => chart.draw_series(DashedLineSeries::new(points.to_vec(), on, off, style)).map(|_| ()),
    }
    .map_err(|e| e.to_string())?;
    chart.draw_series(points.iter().map(|&p| Circle::new(p, 3, colour(map).filled()))).map_err(|e| e.to_string())?;
    Ok(())
}

/// Writes the charts of `report` to `path`.
///
/// # Errors
/// A message when the file cannot be drawn.
pub fn write(report: &Report, path: &std::path::Path) -> Result<(), String> {
    let root = SVGBackend::new(path, (1200, 560)).into_drawing_area();
    root.fill(&WHITE).map_err(|e| e.to_string())?;
    let (panels, legend) = root.split_vertically(480);
    let (left, right) = panels.split_horizontally(600);
    let keys: Vec<f64> = report.config.cardinalities.iter().map(|&k| k as f64).collect();
    let (lo, hi) = (keys.iter().copied().fold(f64::MAX, f64::min), keys.iter().copied().fold(0.0, f64::max));
    let x_range = (lo * 0.8)..(hi * 1.25);
    let shares = shares(report);
    let charts: [(&str, &str, Metric); 2] = [
        ("Time per record, all passes until clean", "ns per record", |c| {
            Some(c.pass1_ns_per_record + c.pass2_ns_per_record)
        }),
        // What the buffer spends on each key it holds: the table's bytes/key column. The external pass holds no
        // key in its buffer (it spills them), so it has no point here.
        ("Buffer bytes per key held (fewer: more keys a pass)", "bytes per key held", |c| {
            (c.map != MapKind::External.name() && c.bytes_per_key > 0.0).then_some(c.bytes_per_key)
        }),
    ];
    for (area, (title, y_label, value)) in [left, right].iter().zip(charts.iter()) {
        let top = MapKind::WITH_EXTERNAL
            .iter()
            .flat_map(|&m| shares.iter().flat_map(move |&s| series(report, m, s, *value)))
            .map(|p| p.1)
            .fold(1.0, f64::max);
        let mut chart = ChartBuilder::on(area)
            .caption(*title, ("sans-serif", 20))
            .margin(15)
            .x_label_area_size(45)
            .y_label_area_size(60)
            .build_cartesian_2d(x_range.clone().log_scale(), 0.0..top * 1.1)
            .map_err(|e| e.to_string())?;
        chart
            .configure_mesh()
            .x_desc("distinct keys (log scale)")
            .y_desc(*y_label)
            .x_label_formatter(&|v| format!("{v:.0e}"))
            .draw()
            .map_err(|e| e.to_string())?;
        for map in MapKind::WITH_EXTERNAL {
            for &share in &shares {
                let points = series(report, map, share, *value);
                if !points.is_empty() {
                    draw_line(&mut chart, &points, map, share)?;
                }
            }
        }
    }
    draw_legend(&legend, &shares)
}

/// The legend strip: a swatch a map (its colour), then a swatch a buffer (its dash).
fn draw_legend<DB: DrawingBackend>(
    area: &DrawingArea<DB, plotters::coord::Shift>,
    shares: &[f64],
) -> Result<(), String> {
    let font = ("sans-serif", 16).into_font().color(&BLACK);
    let mut x = 75;
    let y = 25;
    for map in MapKind::WITH_EXTERNAL {
        let style = colour(map).stroke_width(3);
        area.draw(&PathElement::new(vec![(x, y), (x + 28, y)], style)).map_err(|e| e.to_string())?;
        area.draw(&Text::new(map.name().to_owned(), (x + 34, y - 8), font.clone())).map_err(|e| e.to_string())?;
        x += 120;
    }
    x += 20;
    for &share in shares {
        let style = BLACK.stroke_width(2);
        let line = vec![(x, y), (x + 36, y)];
        match dash(share) {
            None => area.draw(&PathElement::new(line, style)),
            Some((on, off)) => area.draw(&DashedPathElement::new(line, on, off, style)),
        }
        .map_err(|e| e.to_string())?;
        let name = share_name(share);
        area.draw(&Text::new(name.clone(), (x + 42, y - 8), font.clone())).map_err(|e| e.to_string())?;
        x += 60 + 8 * name.len() as i32;
    }
    Ok(())
}
