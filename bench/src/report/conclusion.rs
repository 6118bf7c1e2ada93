//! The report's first screen: for each workload, the map and buffer to use, the passes and the time that buys,
//! and Kafka's map (and Kafka's own cleaner, where it ran) beside it; then how to ask the same of your own log.
//!
//! The choice for a workload is the least memory that stays fast: of the buffers measured, the smallest in which
//! some map (or the external pass) cleans within [`NEAR_FASTEST`] of the fastest cell of the workload, and in it
//! the fastest. Every figure is one the tables below show.

use std::fmt::Write;

use super::{Cell, Report};

/// How far from the workload's fastest cell a smaller buffer's best may be and still be the one to use.
pub const NEAR_FASTEST: f64 = 1.25;

fn mib(bytes: u64) -> String {
    let b = bytes as f64 / f64::from(1u32 << 20);
    if b >= 1024.0 { format!("{:.1}GiB", b / 1024.0) } else { format!("{b:.1}MiB") }
}

fn passes(n: u64) -> String {
    if n == 1 { "1 pass".to_owned() } else { format!("{n} passes") }
}

/// The cell to use of one workload's cells: see the module's docs.
fn choice<'a>(cells: &[&'a Cell]) -> Option<&'a Cell> {
    let fastest = cells.iter().map(|c| c.seconds).fold(f64::INFINITY, f64::min);
    let near = |c: &&&Cell| c.seconds <= fastest * NEAR_FASTEST;
    let share = cells.iter().filter(near).map(|c| c.buffer_share).fold(f64::INFINITY, f64::min);
    cells.iter().filter(|c| c.buffer_share == share).min_by(|a, b| a.seconds.total_cmp(&b.seconds)).copied()
}

/// One line for a workload of generated records.
fn workload_line(report: &Report, keys: u64) -> Option<String> {
    let backend = if report.config.file_only.contains(&keys) { "file" } else { "mem" };
    let cells: Vec<&Cell> = report.results.iter().filter(|c| c.keys == keys && c.backend == backend).collect();
    let best = choice(&cells)?;
    let mut line = format!(
        "- **{keys} keys** ({} records): `--map {} --dedupe-buffer {}` ({:.0}% of what Kafka's map needs for one \
         pass): {}, {:.2} s",
        best.records,
        best.map,
        mib(best.buffer_bytes),
        best.buffer_share * 100.0,
        passes(best.passes_to_clean),
        best.seconds
    );
    let kafkas = cells.iter().find(|c| c.map == "skimpy" && c.buffer_share == best.buffer_share);
    match kafkas {
        Some(k) if k.map == best.map => line.push_str(". Kafka's own map is the one to use here"),
        Some(k) => {
            let _ = write!(
                line,
                ". Kafka's map (`skimpy`) in that buffer: {}, {:.2} s ({:.1}x the time)",
                passes(k.passes_to_clean),
                k.seconds,
                k.seconds / best.seconds.max(1e-9)
            );
        }
        None => {}
    }
    line.push('.');
    Some(line)
}

/// One line a Kafka shape and codec that Kafka's own cleaner ran on, at the full buffer.
fn kafka_lines(report: &Report, md: &mut String) {
    let mut seen: Vec<(&str, &str)> = Vec::new();
    for row in &report.kafka {
        let key = (row.shape.as_str(), row.codec.as_str());
        if row.vs_kafka.is_none() || row.buffer_share < 1.0 || seen.contains(&key) {
            continue;
        }
        seen.push(key);
        let rows: Vec<_> = report
            .kafka
            .iter()
            .filter(|r| (r.shape.as_str(), r.codec.as_str()) == key && r.buffer_share >= 1.0)
            .filter_map(|r| r.vs_kafka.as_ref().map(|v| (r, v)))
            .collect();
        let Some((_, first)) = rows.first() else { continue };
        let ours: Vec<String> = rows
            .iter()
            .map(|(r, v)| {
                format!(
                    "`{}` {:.2} s ({:.1}x faster{})",
                    r.map,
                    v.seconds.min,
                    v.speedup,
                    if v.identical { ", Kafka's bytes" } else { "" }
                )
            })
            .collect();
        let _ = writeln!(
            md,
            "- **{} ({}, {} records)**: Kafka's cleaner {:.2} s in {}; ours {}.",
            row.shape,
            row.codec,
            row.records,
            first.kafka_seconds.min,
            passes(first.kafka_passes),
            ours.join(", ")
        );
    }
}

/// The conclusion, in Markdown: the first section of `report.md`.
pub fn render(report: &Report) -> String {
    let mut md = String::from("## Conclusion\n\n");
    md.push_str(
        "For each workload: the map and buffer to use (the least memory within 25% of the fastest cell), the passes \
         and time that buys, and Kafka's map in the same buffer.\n\n",
    );
    for &keys in &report.config.cardinalities {
        if let Some(line) = workload_line(report, keys) {
            let _ = writeln!(md, "{line}");
        }
    }
    if !report.kafka.is_empty() {
        if report.kafka_cleaner.is_empty() {
            md.push_str(
                "\nKafka partitions, against Kafka 4.4's own cleaner at the buffer its map needs for one pass:\n\n",
            );
            kafka_lines(report, &mut md);
        } else {
            let _ = writeln!(md, "\nKafka 4.4's own cleaner: {}.", report.kafka_cleaner);
        }
    }
    md.push_str(
        "\nFor your own log: `logcompact advise --format kafka --dir /var/lib/kafka/data/orders-0` (a Kafka \
         partition: its keys counted, the passes replayed for every map), or `logcompact advise --keys N --records R` \
         from counts alone.\n\n",
    );
    md
}
