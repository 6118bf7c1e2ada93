//! Embedding a compacted log and its cleaner in a Rust program: a log on files, records and tombstones
//! appended, segments rolled, one cleaning pass with the compact offset map, then the log read back. Offsets
//! never change; only superseded records (and, after their retention, tombstones) go.
//!
//! `cargo run -p logcompact --example embed_log_and_cleaner [DIR]` (a temporary directory without DIR).

use std::sync::Arc;

use logcompact::{Cleaner, CleanerConfig, Format, LogConfig, MapKind, PassOptions, SystemClock};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let tmp = tempfile::tempdir()?;
    let dir = std::env::args_os().nth(1).map_or_else(|| tmp.path().join("accounts"), Into::into);
    run(&dir)
}

/// Writes, cleans and reads back the log in `dir` (created).
fn run(dir: &std::path::Path) -> Result<(), Box<dyn std::error::Error>> {
    // Small segments, so that a few hundred records make several of them.
    let config = LogConfig { segment_bytes: 4096, ..LogConfig::default() };
    let log = logcompact::open_or_create(dir, Format::Native, config)?.log;

    // 50 accounts, each updated 8 times; then 5 of them closed (a tombstone: a null value).
    for round in 0..8 {
        for account in 0..50 {
            log.put(format!("account-{account}").as_bytes(), format!("balance {}", round * 100 + account).as_bytes())?;
        }
    }
    for account in 0..5 {
        log.delete(format!("account-{account}").as_bytes())?;
    }
    log.roll()?; // only sealed segments are cleaned
    let before = log.snapshot().reader(0).count();

    let config = CleanerConfig { map: MapKind::Compact, dedupe_buffer_bytes: 1 << 20, ..CleanerConfig::default() };
    let mut cleaner = Cleaner::new(config, Arc::new(SystemClock))?;
    let stats = cleaner.clean(&log, PassOptions::default())?;
    println!("{}", logcompact::summary(None, &dir.display().to_string(), &stats, 1));

    let mut after = 0;
    let mut tombstones = 0;
    for record in log.snapshot().reader(0) {
        let record = record?;
        after += 1;
        tombstones += usize::from(record.value.is_none());
    }
    println!("{before} records before the pass, {after} after ({tombstones} tombstones kept for delete.retention.ms)");
    assert_eq!(after, 50, "the latest record of each of the 50 keys");
    // Offsets are kept for life: account-49's last update is still at the offset it was written at.
    let last = log.read(7 * 50 + 49)?.ok_or("the latest record of account-49 is kept")?;
    assert_eq!(last.value.as_deref(), Some(&b"balance 749"[..]));
    Ok(())
}

/// The example, run by `cargo test` in a directory of its own.
#[test]
fn the_example_runs() {
    let tmp = tempfile::tempdir().expect("tempdir");
    run(&tmp.path().join("accounts")).expect("the example runs");
}
