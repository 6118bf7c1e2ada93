//! Compacting a Kafka partition of a stopped broker in place, as Kafka's cleaner would: under the broker's
//! lock on its log directory, with Kafka's swap protocol (`.cleaned`, `.swap`, `.deleted`), Kafka's
//! `.index` and `.timeindex` written beside every new segment, and the partition's line of the log directory's
//! `cleaner-offset-checkpoint` updated.
//!
//! `cargo run -p logcompact --example compact_kafka_partition [PARTITION_DIR]`: without an argument it writes
//! a demo partition `kafka-logs/orders-0` in a temporary directory first. Given one, it compacts that
//! partition in place (stop the broker first: a running broker's lock makes it refuse).

use std::path::Path;
use std::sync::Arc;

use logcompact::{Cleaner, CleanerConfig, CompactOutcome, CompactRequest, Format, LogConfig, SystemClock};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let tmp = tempfile::tempdir()?;
    let partition = match std::env::args_os().nth(1) {
        Some(dir) => dir.into(),
        None => {
            let dir = tmp.path().join("kafka-logs").join("orders-0");
            write_demo_partition(&dir)?;
            dir
        }
    };
    compact_in_place(&partition)
}

/// A partition of 2,000 records over 100 keys in segments of about 8 KiB, as a broker's produce path would
/// store single-record sends.
fn write_demo_partition(dir: &Path) -> Result<(), Box<dyn std::error::Error>> {
    let config = LogConfig { segment_bytes: 8 << 10, ..LogConfig::default() };
    let log = logcompact::open_or_create(dir, Format::Kafka, config)?.log;
    for i in 0..2000u32 {
        log.put(format!("order-{}", i % 100).as_bytes(), format!("status {i}").as_bytes())?;
    }
    log.sync()?;
    Ok(())
}

/// Cleans the partition in `dir` until nothing is dirty, then reads it back.
fn compact_in_place(dir: &Path) -> Result<(), Box<dyn std::error::Error>> {
    // The demo partition's topic has no broker to say it is compacted: say so here, as
    // `logcompact compact --cleanup-policy compact` does (a real broker's settings are read with
    // `logcompact::datadir::settings_of`; a topic they do not show compacted is refused).
    let settings = logcompact::datadir::settings::Layers::default().compact_anyway("this example");
    let req = CompactRequest::kafka(dir, settings);
    let mut cleaner = Cleaner::new(CleanerConfig::default(), Arc::new(SystemClock))?;
    let done = logcompact::compact(&req, &mut cleaner, |stats| {
        println!("{}", logcompact::summary(None, &dir.display().to_string(), stats, 1));
        Ok(())
    })?;
    if let CompactOutcome::NothingDone(why) = &done.outcome {
        println!("{why}");
    }
    let opened = logcompact::open_read_only(dir, Format::Kafka)?;
    let log = &opened.log;
    let active_base = log.active_base();
    let mut keys = std::collections::BTreeSet::new();
    let mut records = 0;
    for record in log.snapshot().reader(0) {
        let record = record?;
        records += 1;
        if record.offset < active_base {
            let key = record.key.ok_or("a compacted topic's records are keyed")?;
            assert!(keys.insert(key), "each key at most once in the cleaned segments");
        }
    }
    println!("{records} records left; cleaner checkpoint {} in {}", log.cleaner_checkpoint(), opened.checkpoint_source);
    Ok(())
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_example_runs() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let dir = tmp.path().join("kafka-logs").join("orders-0");
        super::write_demo_partition(&dir).expect("demo partition");
        super::compact_in_place(&dir).expect("the example runs");
        let checkpoint = std::fs::read_to_string(tmp.path().join("kafka-logs").join("cleaner-offset-checkpoint"))
            .expect("the broker's checkpoint file");
        assert!(checkpoint.lines().any(|l| l.starts_with("orders 0 ")), "{checkpoint}");
    }
}
