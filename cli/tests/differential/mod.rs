//! A differential fuzzer with Kafka 4.4's own cleaner as the oracle: random partitions as a broker could have
//! written them ([`case`]), laid out as a stopped broker's log directory ([`write`]), cleaned by both and
//! compared ([`run`]).
#![allow(dead_code)]

pub mod case;
pub mod import;
pub mod run;
pub mod write;

use std::collections::BTreeMap;
use std::path::PathBuf;

use case::Case;
use run::{Judge, Verdict};

/// The map a seed's case is cleaned with: mostly `skimpy` (files compared byte for byte), else another map
/// (records compared).
pub fn map_for(seed: u64) -> &'static str {
    match seed % 10 {
        0 => "compact",
        1 => "fullkey",
        2 => "external",
        _ => "skimpy",
    }
}

/// The committed regression cases: `regressions/*.json`, each a case that once differed, with its map.
pub fn regressions() -> Vec<(String, Case, String)> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/differential/regressions");
    let mut out = Vec::new();
    let mut names: Vec<PathBuf> =
        std::fs::read_dir(&dir).map(|r| r.flatten().map(|e| e.path()).collect()).unwrap_or_default();
    names.sort();
    for path in names.into_iter().filter(|p| p.extension().is_some_and(|e| e == "json")) {
        let text = std::fs::read_to_string(&path).expect("read a regression case");
        let v: serde_json::Value = serde_json::from_str(&text).expect("a regression case is JSON");
        let case: Case = serde_json::from_value(v["case"].clone()).expect("a case");
        let map = v["map"].as_str().unwrap_or("skimpy").to_owned();
        out.push((path.file_name().unwrap_or_default().to_string_lossy().into_owned(), case, map));
    }
    out
}

/// What a run of many cases found.
#[derive(Debug, Default)]
pub struct Tally {
    pub cases: u64,
    pub same: u64,
    pub both_failed: u64,
    /// Kafka's cleaner threw where ours changed nothing, by Kafka's message.
    pub kafka_threw: BTreeMap<String, u64>,
    pub passes_note: u64,
    /// (seed, map, shrunk case as JSON, differences)
    pub failures: Vec<(u64, String, String, Vec<String>)>,
}

/// Judges `count` cases from seeds `base..base+count`; shrinks and records each failure (at most `max_failures`).
pub fn run_cases(
    judge: &mut Judge,
    base: u64,
    count: u64,
    max_failures: usize,
    mut progress: impl FnMut(&Tally),
) -> Tally {
    let mut t = Tally::default();
    for seed in base..base + count {
        let case = Case::generate(seed);
        let map = map_for(seed);
        t.cases += 1;
        match judge.judge(&case, map) {
            Verdict::Same => t.same += 1,
            Verdict::BothFailed => t.both_failed += 1,
            Verdict::KafkaThrewOursChangedNothing(why) => {
                // The message without its offsets: one count a kind.
                let kind: String = why.chars().filter(|c| !c.is_ascii_digit()).collect();
                *t.kafka_threw.entry(kind).or_default() += 1;
            }
            Verdict::Differ(_) => {
                let small = run::shrink(judge, &case, map, |v| matches!(v, Verdict::Differ(_)));
                let found = match judge.judge(&small, map) {
                    Verdict::Differ(d) => d,
                    other => vec![format!("the shrunk case no longer fails ({other:?})")],
                };
                let json = serde_json::json!({ "seed": seed, "map": map, "case": small });
                // Said at once: a long run may take hours to its report.
                eprintln!("seed {seed:#x} (map {map}) differs:\n  {}\n{json}", found.join("\n  "));
                t.failures.push((seed, map.to_owned(), json.to_string(), found));
                if t.failures.len() >= max_failures {
                    return t;
                }
            }
        }
        progress(&t);
    }
    t
}
