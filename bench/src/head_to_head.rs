//! One partition cleaned by Kafka 4.4's own cleaner, by each of ours (a map on a number of threads) and by
//! nothing but the disk (the floor: [`crate::io_floor`]), each cleaner on a fresh copy, as many rounds as
//! asked (the best of each kept): the table `vs-kafka` prints and the report's backlog rows hold. Every row
//! says its passes, seconds, bytes read and written, peak resident memory of its process, whether it kept
//! Kafka's records (the digest of [`crate::digest::records`]) and whether its files are Kafka's byte for byte.
//!
//! # Example
//! ```
//! use bench::head_to_head::{Row, Table};
//! use bench::vs_kafka::Run;
//! let row = |cleaner: &str, seconds| Row {
//!     run: Run { cleaner: cleaner.into(), passes: 1, seconds, ..Run::default() },
//!     threads: 1,
//!     ..Row::default()
//! };
//! let t = Table {
//!     partition: "plain".into(),
//!     bytes: 1 << 30,
//!     kafka: row("Kafka 4.4", 10.0),
//!     floor: Default::default(),
//!     keys_seconds: 0.0,
//!     ours: vec![row("auto", 2.0)],
//! };
//! assert!(t.markdown().contains("| plain | 1024 | auto | 1 | 1 | 2.00 s | 5.0x |"));
//! ```

use std::fmt::Write as _;
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::args::MapChoice;
use crate::io_floor::IoFloor;
use crate::vs_kafka::{Run, Settings};

/// One of ours: a map (or `auto`) on a number of threads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Contender {
    /// The map.
    pub map: MapChoice,
    /// Threads a pass copies its groups on.
    pub threads: usize,
}

/// One row: a cleaner's best run, with the threads it ran on and how its output compares with Kafka's.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Row {
    /// The run (its `cleaner`: `Kafka 4.4`, or our map's name).
    #[serde(flatten)]
    pub run: Run,
    /// Threads.
    pub threads: usize,
    /// Kafka's records, and no other (`None` for Kafka's own row).
    pub same_records: Option<bool>,
    /// Kafka's files, byte for byte (`None` for Kafka's own row).
    pub same_files: Option<bool>,
}

/// One partition's table.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Table {
    /// The partition (`none`, `lz4`, ... for the plain shape's codecs; `__consumer_offsets`).
    pub partition: String,
    /// Bytes of its closed segments.
    pub bytes: u64,
    /// Kafka's cleaner, the best round.
    pub kafka: Row,
    /// The floor, the best round.
    pub floor: IoFloor,
    /// The least pass 1 of a two-pass cleaner, the best round: every key parsed and hashed, nothing remembered
    /// ([`crate::bare::kafka_keys_walk`]); 0 where not measured. With [`Table::floor`] (each its own best
    /// round: the sum is then the lower) it makes the table's second floor, under a two-pass cleaner on one
    /// thread.
    #[serde(default)]
    pub keys_seconds: f64,
    /// Ours, a row a contender.
    pub ours: Vec<Row>,
}

/// The header of [`Table::markdown`]'s rows.
pub const HEADER: &str = "| partition | MiB | cleaner | threads | passes | seconds | Kafka / this | over floor | read MB | \
                          written MB | peak RSS MiB | records Kafka's | files Kafka's |\n\
                          |---|---|---|---|---|---|---|---|---|---|---|---|---|\n";

impl Table {
    /// The table's rows (without [`HEADER`]): Kafka's, the floor's, the two-pass floor's (where measured),
    /// then ours. "over floor" is always over the read-once, write-once floor.
    pub fn markdown(&self) -> String {
        let floor = Row {
            run: Run {
                cleaner: "floor: read once, write kept once".into(),
                passes: 1,
                seconds: self.floor.seconds(),
                bytes_read: self.floor.bytes_read,
                bytes_written: self.floor.bytes_written,
                ..Run::default()
            },
            threads: 1,
            ..Row::default()
        };
        let two_pass = (self.keys_seconds > 0.0).then(|| Row {
            run: Run {
                cleaner: "floor: two passes (keys parsed and hashed, then read once, write kept once)".into(),
                passes: 1,
                seconds: self.keys_seconds + self.floor.seconds(),
                bytes_read: 2 * self.floor.bytes_read,
                bytes_written: self.floor.bytes_written,
                ..Run::default()
            },
            threads: 1,
            ..Row::default()
        });
        let mut md = String::new();
        let floors = [&self.kafka, &floor].into_iter().chain(&two_pass);
        for Row { run, threads, same_records, same_files } in floors.chain(&self.ours) {
            let yes = |b: Option<bool>| match b {
                Some(true) => "yes",
                Some(false) => "no",
                None => "-",
            };
            let rss = if run.peak_rss_bytes == 0 { "-".to_owned() } else { format!("{:.0}", mib(run.peak_rss_bytes)) };
            let _ = writeln!(
                md,
                "| {} | {:.0} | {} | {} | {} | {:.2} s | {:.1}x | {:.2}x | {:.0} | {:.0} | {rss} | {} | {} |",
                self.partition,
                mib(self.bytes),
                run.cleaner,
                threads,
                run.passes,
                run.seconds,
                self.kafka.run.seconds / run.seconds.max(1e-9),
                run.seconds / self.floor.seconds().max(1e-9),
                run.bytes_read as f64 / 1e6,
                run.bytes_written as f64 / 1e6,
                yes(*same_records),
                yes(*same_files),
            );
        }
        md
    }
}

fn mib(b: u64) -> f64 {
    b as f64 / f64::from(1 << 20)
}

/// What the cleaners share: Kafka, the binary that runs ours in a child process (one that calls
/// [`crate::vs_kafka::child_main`] when given [`crate::vs_kafka::CHILD_FLAG`]), where the copies go, the
/// settings (their `threads` are each contender's), the rounds and the contenders.
pub struct Setup<'a> {
    /// Kafka's jars.
    pub kafka: &'a kafka_interop::Kafka,
    /// Ours, run as a child process.
    pub exe: &'a Path,
    /// Where the copies go (each removed after its run).
    pub root: &'a Path,
    /// Both cleaners' settings.
    pub settings: Settings,
    /// Rounds, each on fresh copies.
    pub rounds: usize,
    /// Ours.
    pub contenders: &'a [Contender],
}

/// Each contender, Kafka's cleaner and the floor on copies of the partition directory `source` (named `name`
/// in the copies: Kafka reads its topic from it), labelled `partition`. `each` is told every run as a JSON
/// line (`vs-kafka --json`) and every difference from Kafka's output as a sentence.
///
/// # Errors
/// A cleaner that fails, or a copy or file that does not read or write, as text.
pub fn clean_each(
    setup: &Setup<'_>,
    partition: &str,
    source: &Path,
    name: &str,
    mut each: impl FnMut(Said),
) -> Result<Table, String> {
    let mut table =
        Table { partition: partition.to_owned(), bytes: crate::vs_kafka::log_bytes(source)?, ..Table::default() };
    let mut rows: Vec<Option<Row>> = vec![None; setup.contenders.len()];
    let (mut kafka_best, mut floor_best): (Option<Run>, Option<IoFloor>) = (None, None);
    let mut keys_best: Option<f64> = None;
    for round in 0..setup.rounds.max(1) {
        let kdir = setup.root.join(format!("round-{round}-kafka")).join(name);
        crate::vs_kafka::copy(source, &kdir)?;
        let kafka = crate::vs_kafka::kafka_clean(setup.kafka, &kdir, &Settings { threads: 1, ..setup.settings })?;
        let kafka_files = crate::vs_kafka::segment_digests(&kdir)?;
        let kafka_records = records_digest(&kdir)?;
        let _ = std::fs::remove_dir_all(kdir.parent().unwrap_or(&kdir));
        let floor_out = setup.root.join(format!("round-{round}-floor"));
        let floor = crate::io_floor::read_once_write_once(source, kafka.bytes_after, &floor_out)?;
        let keys_seconds = keys_floor(source)?;
        each(Said::Line(serde_json::json!({"partition": partition, "round": round, "floor": floor,
            "keys_seconds": keys_seconds, "kafka": kafka})));
        for (i, c) in setup.contenders.iter().enumerate() {
            let odir = setup.root.join(format!("round-{round}-{}-{}", c.map.name(), c.threads)).join(name);
            crate::vs_kafka::copy(source, &odir)?;
            let settings = Settings { threads: c.threads, ..setup.settings };
            let run = crate::vs_kafka::ours_in_child(setup.exe, &odir, c.map, &settings)?;
            let files = crate::vs_kafka::segment_digests(&odir)?;
            let same_files = files == kafka_files;
            let same_records = records_digest(&odir)? == kafka_records;
            if !same_files {
                let diff = crate::vs_kafka::first_digest_difference(&kafka_files, &files);
                each(Said::Difference(format!("{partition} {} on {}: {diff}", c.map.name(), c.threads)));
            }
            if !same_records {
                each(Said::Difference(format!(
                    "{partition} {} on {}: records differ from Kafka's",
                    c.map.name(),
                    c.threads
                )));
            }
            let _ = std::fs::remove_dir_all(odir.parent().unwrap_or(&odir));
            each(Said::Line(
                serde_json::json!({"partition": partition, "round": round, "threads": c.threads, "run": run,
                "kafka": kafka, "over_floor": run.seconds / floor.seconds().max(1e-9),
                "same_records": same_records, "same_files": same_files}),
            ));
            let mut row =
                Row { run, threads: c.threads, same_records: Some(same_records), same_files: Some(same_files) };
            if let Some(best) = &rows[i] {
                // A row is its best round's; a difference in any round stays.
                row.same_records = Some(same_records && best.same_records == Some(true));
                row.same_files = Some(same_files && best.same_files == Some(true));
                if best.run.seconds <= row.run.seconds {
                    row = Row { same_records: row.same_records, same_files: row.same_files, ..best.clone() };
                }
            }
            rows[i] = Some(row);
        }
        if kafka_best.as_ref().is_none_or(|b| kafka.seconds < b.seconds) {
            kafka_best = Some(kafka);
        }
        if floor_best.is_none_or(|b| floor.seconds() < b.seconds()) {
            floor_best = Some(floor);
        }
        if keys_best.is_none_or(|b| keys_seconds < b) {
            keys_best = Some(keys_seconds);
        }
    }
    table.kafka = kafka_best
        .map(|k| Row {
            run: Run { cleaner: "Kafka 4.4".into(), ..k },
            threads: 1,
            same_records: None,
            same_files: None,
        })
        .unwrap_or_default();
    table.floor = floor_best.unwrap_or_default();
    table.keys_seconds = keys_best.unwrap_or_default();
    table.ours = rows.into_iter().flatten().collect();
    Ok(table)
}

/// Seconds of the least pass 1 ([`crate::bare::kafka_keys_walk`]) over the Kafka partition in `dir`, its
/// closed segments mapped as the floor maps them (a read-only open would read each into memory first).
///
/// # Errors
/// A segment that does not open or map, or bytes the walk cannot parse (a broker-written partition's too), as
/// text naming the partition.
fn keys_floor(dir: &Path) -> Result<f64, String> {
    let maps = crate::io_floor::mapped_closed_logs(dir)?;
    let segments: Vec<&[u8]> = maps.iter().map(|m| &m[..]).collect();
    let (seconds, _) = crate::bare::kafka_keys_walk(&segments).map_err(|e| format!("{}: {e}", dir.display()))?;
    Ok(seconds)
}

/// What [`clean_each`] tells as it goes.
#[derive(Debug, Clone)]
pub enum Said {
    /// A run, as a JSON line.
    Line(serde_json::Value),
    /// A difference from Kafka's output, in a sentence.
    Difference(String),
}

/// The digest of the records of the Kafka partition in `dir` ([`crate::digest::records`]), read without
/// writing.
///
/// # Errors
/// A partition that does not open or read, as text.
pub fn records_digest(dir: &Path) -> Result<String, String> {
    let opened = logcompact::open_read_only(dir, log_core::Format::Kafka).map_err(|e| e.to_string())?;
    Ok(crate::digest::records(&opened.log)?.0)
}
