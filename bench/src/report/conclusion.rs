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

/// A buffer as `--dedupe-buffer` takes it: `320KiB`, `25.4MiB`, `1.2GiB`.
fn mib(bytes: u64) -> String {
    let b = bytes as f64 / f64::from(1u32 << 20);
    if b >= 1024.0 {
        format!("{:.1}GiB", b / 1024.0)
    } else if b >= 1.0 {
        format!("{b:.1}MiB")
    } else {
        format!("{}KiB", bytes.div_ceil(1024))
    }
}

/// `9.6x faster`, or `2.5x slower` for a speedup below 1.
fn faster(speedup: f64) -> String {
    if speedup >= 1.0 { format!("{speedup:.1}x faster") } else { format!("{:.1}x slower", 1.0 / speedup.max(1e-9)) }
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
                    "`{}` {:.2} s ({}{})",
                    r.map,
                    v.seconds.min,
                    faster(v.speedup),
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::{Config, Machine, SCHEMA_VERSION};

    fn cell(map: &str, share: f64, seconds: f64, passes: u64) -> Cell {
        serde_json::from_value(serde_json::json!({
            "map": map, "backend": "mem", "keys": 10000, "records": 40000, "key_bytes": 16, "value_bytes": 100,
            "seed": 1, "buffer_bytes": (327_680.0 * share) as u64, "buffer_share": share, "capacity": 10,
            "bytes_per_slot": 24.0, "bytes_per_key": 26.7, "passes_to_clean": passes, "pass1_ns_per_record": 1.0,
            "pass2_ns_per_record": 1.0, "records_per_s": 1.0, "bytes_per_s": 1.0, "probes_per_lookup": 1.0,
            "utilization": 0.5, "peak_map_bytes": 10, "seconds": seconds, "result_digest": "d"
        }))
        .expect("a cell")
    }

    fn report(results: Vec<Cell>) -> Report {
        let mut config = Config::new(true);
        config.cardinalities = vec![10_000];
        Report {
            schema_version: SCHEMA_VERSION,
            git_revision: "x".into(),
            created_ms: 0,
            machine: Machine { cpu: "cpu".into(), cores: 2, memory_bytes: 1 << 30, os: "linux".into() },
            config,
            results,
            kafka: Vec::new(),
            kafka_cleaner: String::new(),
            backlog: Vec::new(),
            peak_rss_bytes: 0,
        }
    }

    #[test]
    fn the_least_memory_near_the_fastest_is_the_one_to_use() {
        // At a quarter buffer the external pass is within 25% of the fastest cell: that buffer is the choice,
        // and in it the external pass, beside Kafka's map there.
        let r = report(vec![
            cell("skimpy", 1.0, 0.10, 1),
            cell("compact", 1.0, 0.08, 1),
            cell("skimpy", 0.25, 0.40, 4),
            cell("external", 0.25, 0.09, 1),
        ]);
        let md = render(&r);
        assert!(md.contains("`--map external --dedupe-buffer 80KiB` (25% of"), "{md}");
        assert!(md.contains("Kafka's map (`skimpy`) in that buffer: 4 passes, 0.40 s (4.4x the time)"), "{md}");
        // Nothing near the fastest in less memory: the full buffer, and its fastest map.
        let r = report(vec![cell("skimpy", 1.0, 0.10, 1), cell("compact", 1.0, 0.08, 1), cell("skimpy", 0.25, 0.4, 4)]);
        assert!(render(&r).contains("`--map compact --dedupe-buffer 320KiB` (100% of"), "{}", render(&r));
        assert_eq!(faster(0.5), "2.0x slower");
    }
}
