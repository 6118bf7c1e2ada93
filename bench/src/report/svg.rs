//! `report.svg`: pass time per record and the memory the map took per key against key cardinality, a line per
//! map and the external pass (the buffer `skimpy` needs for one pass).

use cleaner::MapKind;
use plotters::prelude::*;

use super::Report;

fn colour(map: MapKind) -> RGBColor {
    match map {
        MapKind::Skimpy => RGBColor(200, 60, 40),
        MapKind::FullKey => RGBColor(40, 110, 200),
        MapKind::Compact => RGBColor(30, 150, 70),
        MapKind::External => RGBColor(140, 80, 170),
    }
}

/// What one chart plots of a cell.
type Metric = fn(&super::Cell) -> f64;

/// The points of one map: `(keys, value)` over the report's cardinalities.
fn series(report: &Report, map: MapKind, value: impl Fn(&super::Cell) -> f64) -> Vec<(f64, f64)> {
    let mut points: Vec<(f64, f64)> = report
        .results
        .iter()
        .filter(|c| {
            let backend = if report.config.file_only.contains(&c.keys) { "file" } else { "mem" };
            c.map == map.name() && c.backend == backend && c.buffer_share == 1.0
        })
        .map(|c| (c.keys as f64, value(c)))
        .collect();
    points.sort_by(|a, b| a.0.total_cmp(&b.0));
    points
}

/// Writes the charts of `report` to `path`.
///
/// # Errors
/// A message when the file cannot be drawn.
pub fn write(report: &Report, path: &std::path::Path) -> Result<(), String> {
    let root = SVGBackend::new(path, (1200, 480)).into_drawing_area();
    root.fill(&WHITE).map_err(|e| e.to_string())?;
    let (left, right) = root.split_horizontally(600);
    let keys: Vec<f64> = report.config.cardinalities.iter().map(|&k| k as f64).collect();
    let (lo, hi) = (keys.iter().copied().fold(f64::MAX, f64::min), keys.iter().copied().fold(0.0, f64::max));
    let x_range = (lo * 0.8)..(hi * 1.25);
    let charts: [(&str, &str, Metric); 2] = [
        ("Pass time per record (both passes)", "ns per record", |c| c.pass1_ns_per_record + c.pass2_ns_per_record),
        ("Memory the map took per distinct key", "bytes per key", |c| {
            c.map_allocated_bytes as f64 / c.keys.max(1) as f64
        }),
    ];
    for (area, (title, y_label, value)) in [left, right].iter().zip(charts.iter()) {
        let top = MapKind::WITH_EXTERNAL
            .iter()
            .flat_map(|&m| series(report, m, value).into_iter().map(|p| p.1))
            .fold(1.0, f64::max);
        let mut chart = ChartBuilder::on(area)
            .caption(*title, ("sans-serif", 20))
            .margin(15)
            .x_label_area_size(45)
            .y_label_area_size(60)
            .build_cartesian_2d(x_range.clone().log_scale(), 0.0..top * 1.15)
            .map_err(|e| e.to_string())?;
        chart
            .configure_mesh()
            .x_desc("distinct keys (log scale)")
            .y_desc(*y_label)
            .x_label_formatter(&|v| format!("{v:.0e}"))
            .draw()
            .map_err(|e| e.to_string())?;
        for map in MapKind::WITH_EXTERNAL {
            let points = series(report, map, value);
            let c = colour(map);
            chart
                .draw_series(LineSeries::new(points.clone(), c.stroke_width(2)))
                .map_err(|e| e.to_string())?
                .label(map.name())
                .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], c.stroke_width(2)));
            chart.draw_series(points.iter().map(|&p| Circle::new(p, 3, c.filled()))).map_err(|e| e.to_string())?;
        }
        chart
            .configure_series_labels()
            .position(SeriesLabelPosition::UpperLeft)
            .background_style(WHITE.mix(0.8))
            .border_style(BLACK)
            .draw()
            .map_err(|e| e.to_string())?;
    }
    root.present().map_err(|e| e.to_string())
}
