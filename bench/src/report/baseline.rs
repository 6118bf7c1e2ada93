//! `--baseline FILE`: compares a report with an earlier one, cell by cell and Kafka row by row, on one
//! machine. What is judged is each cell's time over its floor (what a pass must do on the same log, measured beside
//! it in the same run), not wall time: a busy machine slows a cell and its floor alike, so the ratio moves far
//! less than either. Of its runs, the fastest cleaning over the fastest floor is compared: noise on a shared
//! machine only ever adds time, so the fastest of a few runs is the steadiest estimate of each. Still, short
//! cells on a busy machine swing: between two quick reports of one build, 4 of 56 cells' best ratios moved more
//! than 1.25x (up to 1.43x), while every one of them moved within its runs' range. So a cell is flagged slower
//! when its best ratio rose by more than the threshold (1.3 by default) *and* every run's ratio now lies above
//! every run's ratio before (the runs' ranges do not overlap): a slowdown the runs agree on. Over three pairs of
//! quick reports of one build (168 comparisons) the largest such move was 1.27x, so none is flagged. A changed
//! result is always flagged.
//! Cells of an older report without floors are compared by their wall time and the threshold alone.

use std::fmt::Write;

use super::{Cell, Report, Spread, kafka::KafkaCell};

/// One cell's comparison.
#[derive(Debug, Clone, PartialEq)]
pub struct Compared {
    /// `map/backend/keys/buffer share`, or `kafka shape/codec/map/buffer share`.
    pub cell: String,
    /// What was compared: `best over floor`, or `seconds` for a baseline without floors.
    pub measure: &'static str,
    /// The baseline's figure.
    pub before: f64,
    /// Now.
    pub now: f64,
    /// The runs' range of the time over the floor, before and now (for the reader).
    pub ranges: (Spread, Spread),
    /// `now / before`: above 1 is slower.
    pub ratio: f64,
    /// Slower beyond the threshold.
    pub slower: bool,
    /// The cell left a different log than before.
    pub result_changed: bool,
}

/// What a cell or row shows a comparison.
struct Figures {
    best_over_floor: f64,
    over_floor: Spread,
    seconds: f64,
    digest: String,
}

/// Judges one cell: by its fastest run over its fastest floor when both reports have them, else by seconds.
fn judge(cell: String, before: Figures, now: Figures, threshold: f64) -> Compared {
    let ((b, n), measure) = if before.best_over_floor > 0.0 && now.best_over_floor > 0.0 {
        ((before.best_over_floor, now.best_over_floor), "best over floor")
    } else {
        ((before.seconds, now.seconds), "seconds")
    };
    let ratio = n / b.max(1e-12);
    let (rb, rn) = (before.over_floor, now.over_floor);
    let runs_agree = rb.max == 0.0 || rn.min == 0.0 || rn.min > rb.max;
    Compared {
        cell,
        measure,
        before: b,
        now: n,
        ranges: (rb, rn),
        ratio,
        slower: ratio > threshold && runs_agree,
        // A digest of another length is of another scheme (Kafka rows' were 64-bit before 2026-12-05): not
        // compared.
        result_changed: before.digest.len() == now.digest.len() && before.digest != now.digest,
    }
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

fn kafka_key(c: &KafkaCell) -> (String, String, String, u64, u64, String) {
    (c.shape.clone(), c.codec.clone(), c.map.clone(), c.keys, c.records, format!("{:.4}", c.buffer_share))
}

/// Compares the cells and Kafka rows both reports have.
pub fn compare(before: &Report, now: &Report, threshold: f64) -> Vec<Compared> {
    // Before schema 3 the floors were read-only walks: their ratios are not comparable with today's, so such a
    // baseline is compared by seconds.
    let comparable = before.schema_version >= 3 && now.schema_version >= 3;
    let judged = |best: f64| if comparable { best } else { 0.0 };
    let figures = |c: &Cell| Figures {
        best_over_floor: c.best_over_floor,
        over_floor: c.over_floor,
        seconds: if c.seconds_spread.min > 0.0 { c.seconds_spread.min } else { c.seconds },
        digest: c.result_digest.clone(),
    };
    let kafka_figures = |c: &KafkaCell| Figures {
        best_over_floor: c.best_over_floor,
        over_floor: c.over_floor,
        seconds: if c.seconds.min > 0.0 { c.seconds.min } else { c.records as f64 / c.records_per_s.max(1e-12) },
        digest: c.result_digest.clone(),
    };
    let cells = now.results.iter().filter_map(|n| {
        let b = before.results.iter().find(|b| key(b) == key(n))?;
        let name = format!("{}/{}/{} keys/{:.0}% buffer", n.map, n.backend, n.keys, n.buffer_share * 100.0);
        let (mut fb, mut fnow) = (figures(b), figures(n));
        (fb.best_over_floor, fnow.best_over_floor) = (judged(fb.best_over_floor), judged(fnow.best_over_floor));
        Some(judge(name, fb, fnow, threshold))
    });
    let kafka = now.kafka.iter().filter_map(|n| {
        let b = before.kafka.iter().find(|b| kafka_key(b) == kafka_key(n))?;
        let name = format!("kafka {}/{}/{}/{:.0}% buffer", n.shape, n.codec, n.map, n.buffer_share * 100.0);
        let (mut fb, mut fnow) = (kafka_figures(b), kafka_figures(n));
        (fb.best_over_floor, fnow.best_over_floor) = (judged(fb.best_over_floor), judged(fnow.best_over_floor));
        Some(judge(name, fb, fnow, threshold))
    });
    cells.chain(kafka).collect()
}

/// The comparison as a Markdown table.
pub fn render(rows: &[Compared], threshold: f64, before: &Report) -> String {
    let mut md = String::new();
    let _ = writeln!(
        md,
        "## Against the baseline (`{}`, {})\n\nEach cell's fastest run over its fastest floor (what a pass must do on \
         the same log, in the same run; a baseline made before the floors wrote, schema 2, is compared by seconds); flagged when it rose above {threshold:.2}x and every run now is slower than \
         every run before. In parentheses, every run's time over its floor: median and range.\n",
        before.git_revision,
        before.machine.describe()
    );
    let _ = writeln!(md, "| cell | measure | before | now | ratio | |");
    let _ = writeln!(md, "|---|---|---|---|---|---|");
    let range = |x: f64, s: &Spread| {
        if s.median == 0.0 {
            format!("{x:.3}")
        } else {
            format!("{x:.3} ({:.2}, {:.2}–{:.2})", s.median, s.min, s.max)
        }
    };
    for r in rows {
        let flag = match (r.slower, r.result_changed) {
            (_, true) => "RESULT CHANGED",
            (true, false) => "SLOWER",
            _ => "",
        };
        let _ = writeln!(
            md,
            "| {} | {} | {} | {} | {:.2} | {flag} |",
            r.cell,
            r.measure,
            range(r.before, &r.ranges.0),
            range(r.now, &r.ranges.1),
            r.ratio
        );
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
            kafka_cleaner: String::new(),
            backlog: Vec::new(),
            peak_rss_bytes: 0,
        }
    }

    fn cell(map: &str, best: f64, digest: &str) -> Cell {
        let mut c: Cell = serde_json::from_value(serde_json::json!({
            "map": "skimpy", "backend": "mem", "keys": 10, "records": 40, "key_bytes": 16, "value_bytes": 100,
            "seed": 1, "buffer_bytes": 100, "buffer_share": 1.0, "capacity": 10, "bytes_per_slot": 24.0,
            "bytes_per_key": 26.7, "passes_to_clean": 1, "pass1_ns_per_record": 1.0, "pass2_ns_per_record": 1.0,
            "records_per_s": 1.0, "bytes_per_s": 1.0, "probes_per_lookup": 1.0, "utilization": 0.5,
            "peak_map_bytes": 10, "seconds": 1.0, "result_digest": "d"
        }))
        .expect("a cell");
        c.map = map.into();
        c.best_over_floor = best;
        c.over_floor = Spread { median: best * 1.05, min: best, max: best * 1.1 };
        c.result_digest = digest.into();
        c
    }

    #[test]
    fn a_rise_of_the_best_run_beyond_the_threshold_is_flagged_and_a_changed_result_always() {
        let before = report(vec![
            cell("skimpy", 1.0, "d"),
            cell("compact", 1.0, "d"),
            cell("fullkey", 1.0, "d"),
            cell("external", 1.0, "d"),
        ]);
        let mut noisy = cell("external", 1.3, "d");
        // Its best run rose past the threshold, but its runs overlap the baseline's: noise.
        noisy.over_floor = Spread { median: 1.4, min: 1.05, max: 2.0 };
        let now = report(vec![cell("skimpy", 2.0, "d"), cell("compact", 1.2, "d"), cell("fullkey", 0.6, "e"), noisy]);
        let rows = compare(&before, &now, 1.25);
        assert_eq!(rows.len(), 4);
        let flagged: Vec<bool> = rows.iter().map(|r| r.slower).collect();
        assert_eq!(flagged, [true, false, false, false]);
        assert!(rows[2].result_changed && !rows[0].result_changed);
        assert!(rows.iter().all(|r| r.measure == "best over floor"));
        let md = render(&rows, 1.25, &before);
        assert!(md.contains("SLOWER") && md.contains("RESULT CHANGED"), "{md}");
        // A cell the baseline does not have is not compared.
        let mut other = cell("skimpy", 1.0, "d");
        other.keys = 99;
        assert!(compare(&before, &report(vec![other]), 1.25).is_empty());
    }

    #[test]
    fn a_baseline_without_floors_is_compared_by_seconds() {
        let mut old = cell("skimpy", 0.0, "d");
        old.seconds = 1.0;
        let mut new = cell("skimpy", 1.0, "d");
        new.seconds_spread = Spread { median: 2.5, min: 2.0, max: 3.0 };
        let rows = compare(&report(vec![old]), &report(vec![new]), 1.25);
        assert_eq!((rows[0].measure, rows[0].slower, rows[0].now), ("seconds", true, 2.0));
    }
}
