//! `--baseline FILE`: compares a report with an earlier one, cell by cell, on one machine: the ratio of the
//! cleaning time of each cell, the cells slower than a threshold flagged, and any cell whose result changed.

use std::fmt::Write;

use super::{Cell, Report};

/// One cell's comparison.
#[derive(Debug, Clone, PartialEq)]
pub struct Compared {
    /// `map/backend/keys/buffer share`.
    pub cell: String,
    /// Seconds before.
    pub before: f64,
    /// Seconds now.
    pub now: f64,
    /// `now / before`: above 1 is slower.
    pub ratio: f64,
    /// Above the threshold.
    pub slower: bool,
    /// The cell left a different log than before.
    pub result_changed: bool,
}

fn key(c: &Cell) -> (String, String, u64, u64, usize, usize, u64, String) {
    (
        c.map.clone(),
        c.backend.clone(),
        c.keys,
        c.records,
        c.key_bytes,
        c.value_bytes,
        c.seed,
        format!("{:.4}", c.buffer_share),
    )
}

/// Compares the cells both reports have.
pub fn compare(before: &Report, now: &Report, threshold: f64) -> Vec<Compared> {
    now.results
        .iter()
        .filter_map(|n| {
            let b = before.results.iter().find(|b| key(b) == key(n))?;
            let ratio = n.seconds / b.seconds.max(1e-12);
            Some(Compared {
                cell: format!("{}/{}/{} keys/{:.0}% buffer", n.map, n.backend, n.keys, n.buffer_share * 100.0),
                before: b.seconds,
                now: n.seconds,
                ratio,
                slower: ratio > threshold,
                result_changed: b.result_digest != n.result_digest,
            })
        })
        .collect()
}

/// The comparison as a Markdown table.
pub fn render(rows: &[Compared], threshold: f64, before: &Report) -> String {
    let mut md = String::new();
    let _ = writeln!(
        md,
        "## Against the baseline (`{}`, {})\n\nRatio = seconds now / seconds before; flagged above {threshold:.2}.\n",
        before.git_revision,
        before.machine.describe()
    );
    let _ = writeln!(md, "| cell | before s | now s | ratio | |");
    let _ = writeln!(md, "|---|---|---|---|---|");
    for r in rows {
        let flag = match (r.slower, r.result_changed) {
            (_, true) => "RESULT CHANGED",
            (true, false) => "SLOWER",
            _ => "",
        };
        let _ = writeln!(md, "| {} | {:.3} | {:.3} | {:.2} | {flag} |", r.cell, r.before, r.now, r.ratio);
    }
    md
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::{Config, Machine, Report, SCHEMA_VERSION};

    fn report(cells: Vec<Cell>) -> Report {
        Report {
            schema_version: SCHEMA_VERSION,
            git_revision: "abc".into(),
            created_ms: 0,
            machine: Machine { cpu: "cpu".into(), cores: 2, memory_bytes: 1 << 30, os: "linux".into() },
            config: Config::new(true),
            results: cells,
            kafka: Vec::new(),
        }
    }

    fn cell(map: &str, seconds: f64, digest: &str) -> Cell {
        let mut c = report_cell();
        c.map = map.into();
        c.seconds = seconds;
        c.result_digest = digest.into();
        c
    }

    fn report_cell() -> Cell {
        serde_json::from_value(serde_json::json!({
            "map": "skimpy", "backend": "mem", "keys": 10, "records": 40, "key_bytes": 16, "value_bytes": 100,
            "seed": 1, "buffer_bytes": 100, "buffer_share": 1.0, "capacity": 10, "bytes_per_slot": 24.0,
            "bytes_per_key": 26.7, "passes_to_clean": 1, "pass1_ns_per_record": 1.0, "pass2_ns_per_record": 1.0,
            "records_per_s": 1.0, "bytes_per_s": 1.0, "probes_per_lookup": 1.0, "utilization": 0.5,
            "peak_map_bytes": 10, "seconds": 1.0, "result_digest": "d"
        }))
        .expect("a cell")
    }

    #[test]
    fn cells_slower_than_the_threshold_and_changed_results_are_flagged() {
        let before = report(vec![cell("skimpy", 1.0, "d"), cell("compact", 1.0, "d"), cell("fullkey", 1.0, "d")]);
        let now = report(vec![cell("skimpy", 1.1, "d"), cell("compact", 2.0, "d"), cell("fullkey", 0.5, "e")]);
        let rows = compare(&before, &now, 1.25);
        assert_eq!(rows.len(), 3);
        assert!(!rows[0].slower && rows[1].slower && !rows[2].slower);
        assert!((rows[1].ratio - 2.0).abs() < 1e-9);
        assert!(rows[2].result_changed && !rows[0].result_changed);
        let md = render(&rows, 1.25, &before);
        assert!(md.contains("SLOWER") && md.contains("RESULT CHANGED"), "{md}");
        // A cell the baseline does not have is not compared.
        let mut other = cell("skimpy", 1.0, "d");
        other.keys = 99;
        assert!(compare(&before, &report(vec![other]), 1.25).is_empty());
    }
}
