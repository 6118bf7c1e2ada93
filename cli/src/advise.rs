//! `logcompact advise`: prints what the library's `cleaner::advise` finds, as a table or JSON.

use std::io::Write;
use std::path::Path;

use cleaner::advise::{Budget, KeyCount, LogAdvice, MapAdvice, from_counts, from_log};
use serde::Serialize;

use crate::failure::Failure;
use crate::out::QuietPipe;

/// Where the key counts come from.
#[derive(Debug)]
pub enum Source<'a> {
    /// Counts given on the command line.
    Counts {
        /// Distinct keys.
        keys: u64,
        /// Bytes per key.
        key_bytes: usize,
        /// Records over which the keys are spread, if known.
        records: Option<u64>,
    },
    /// The dirty section of the log in a directory, of a format, from a first dirty offset if given.
    Dir(&'a Path, log_core::Format, Option<u64>),
}

/// A byte count for people: `26.7 MiB`.
pub fn human_bytes(bytes: u64) -> String {
    const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut v = bytes as f64;
    let mut unit = 0;
    while v >= 1024.0 && unit + 1 < UNITS.len() {
        v /= 1024.0;
        unit += 1;
    }
    if unit == 0 { format!("{bytes} B") } else { format!("{v:.1} {}", UNITS[unit]) }
}

/// One line of `--json`: a map's advice, with how the keys were counted.
#[derive(Debug, Serialize)]
struct JsonAdvice<'a> {
    #[serde(flatten)]
    advice: &'a MapAdvice,
    keys_exact: bool,
    keys_relative_error: f64,
    dirty_records: Option<u64>,
}

/// Prints the advice for `source` with `budget`.
///
/// # Errors
/// [`Failure::Usage`] for bad settings or a directory without a log; [`Failure::Corruption`] when the log is
/// damaged; [`Failure::Runtime`] when it cannot be read.
pub fn advise(source: Source<'_>, budget: Budget, as_json: bool) -> Result<(), Failure> {
    let bad = |e: cleaner::Error| Failure::from_cleaner("cannot advise", &e);
    let (maps, count, log): (Vec<MapAdvice>, KeyCount, Option<LogAdvice>) = match source {
        Source::Counts { keys, key_bytes, records } => {
            let maps = from_counts(keys, key_bytes, records, budget).map_err(bad)?;
            (maps, KeyCount { keys, exact: true, relative_error: 0.0 }, None)
        }
        Source::Dir(dir, format, checkpoint) => {
            let opened = logcompact::open_read_only(dir, format).map_err(|e| Failure::from_open(&e))?;
            if let Some(c) = checkpoint {
                logcompact::dir::start_dirty_at(&opened.log, c).map_err(|e| Failure::Usage(e.to_string()))?;
            }
            let advice = from_log(&opened.log, budget).map_err(bad)?;
            (advice.maps.clone(), advice.distinct, Some(advice))
        }
    };
    print(&maps, count, log.as_ref(), budget, as_json)
}

/// Prints advice per map: a table, or a JSON array.
///
/// # Errors
/// [`Failure::Runtime`] when the output cannot be written.
pub fn print(
    maps: &[MapAdvice],
    count: KeyCount,
    log: Option<&LogAdvice>,
    budget: Budget,
    as_json: bool,
) -> Result<(), Failure> {
    let mut out = QuietPipe::new(std::io::stdout().lock());
    let failed = |e: std::io::Error| Failure::Runtime(format!("cannot write output: {e}"));
    if as_json {
        let rows: Vec<JsonAdvice<'_>> = maps
            .iter()
            .map(|a| JsonAdvice {
                advice: a,
                keys_exact: count.exact,
                keys_relative_error: count.relative_error,
                dirty_records: log.map(|l| l.dirty_records),
            })
            .collect();
        let text = serde_json::to_string(&rows).map_err(|e| Failure::Runtime(e.to_string()))?;
        return writeln!(out, "{text}").map_err(failed);
    }
    let keys = if count.exact {
        format!("{} distinct keys", count.keys)
    } else {
        format!("about {} distinct keys (HyperLogLog, ±{:.1}%)", count.keys, count.relative_error * 100.0)
    };
    let key_bytes = maps.first().map_or(16, |m| m.key_bytes);
    if let Some(l) = log {
        writeln!(
            out,
            "dirty section from offset {}: {} records ({} keyed, {}), {keys} of {key_bytes} bytes on average",
            l.first_dirty_offset,
            l.dirty_records,
            l.keyed_records,
            human_bytes(l.dirty_bytes)
        )
        .map_err(failed)?;
    } else {
        writeln!(out, "{keys} of {key_bytes} bytes").map_err(failed)?;
    }
    writeln!(
        out,
        "dedupe buffer {} over {} thread(s): {} a thread, load factor {}\n",
        human_bytes(budget.total_bytes),
        budget.threads,
        human_bytes(budget.per_thread()),
        budget.load_factor
    )
    .map_err(failed)?;
    writeln!(
        out,
        "{:<8} {:>9} {:>13} {:>8} {:>20} {:>13}",
        "map", "bytes/key", "keys a pass", "passes", "buffer for 1 pass", "P(collision)"
    )
    .map_err(failed)?;
    let mut capped = None;
    for a in maps {
        let passes = a.passes.map_or_else(|| "never".to_owned(), |p| p.to_string());
        let over_cap = a.kafka_thread_cap.filter(|&cap| a.keys > cap);
        if over_cap.is_some() {
            capped = over_cap;
        }
        let p = if a.collision_probability == 0.0 {
            "0 (exact)".to_owned()
        } else {
            format!("{:.1e}", a.collision_probability)
        };
        writeln!(
            out,
            "{:<8} {:>9.1} {:>13} {:>8} {:>20} {:>13}",
            a.map.name(),
            a.bytes_per_key,
            a.capacity,
            passes,
            format!("{}{}", human_bytes(a.total_buffer_bytes_for_one_pass), if over_cap.is_some() { "*" } else { "" }),
            p
        )
        .map_err(failed)?;
    }
    if let Some(cap) = capped {
        writeln!(
            out,
            "* skimpy as Kafka runs it: a cleaner thread's buffer is at most 2 GiB (log.cleaner.dedupe.buffer.size \
             / log.cleaner.threads, capped at 2^31 - 1 bytes), which holds {cap} keys: a log with more takes \
             several passes whatever the buffer (each log is cleaned by one thread)"
        )
        .map_err(failed)?;
    }
    let basis = maps.first().map_or("", |m| m.passes_basis);
    let note = match basis {
        "lower bound" => {
            "passes: a lower bound (each key's records together); give --records or --dir for a real figure"
        }
        "uniform keys" => "passes: keys taken as spread uniformly over the records",
        _ => "passes: pass 1 replayed on the log, as the cleaner would run it",
    };
    writeln!(out, "\n{note}; buffer for 1 pass: log.cleaner.dedupe.buffer.size for all threads").map_err(failed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_for_people() {
        assert_eq!(human_bytes(512), "512 B");
        assert_eq!(human_bytes(28_000_000), "26.7 MiB");
        assert_eq!(human_bytes(3 << 30), "3.0 GiB");
    }
}
