//! One whole cleaning pass (both phases) per offset map, in memory: `cargo run --release -p bench --bin
//! pass-bench -- [--records 10000000] [--keys 1000000] [--value-bytes 100]`. The log is built once per map
//! from the same seeded workload (64 MiB segments, the last one rolled so that everything is dirty); the
//! map's budget holds every key, so the pass is complete. Prints one JSON line per map.

use std::sync::Arc;
use std::time::Instant;

use cleaner::{Cleaner, CleanerConfig, MapKind, PassOptions, SystemClock};
use log_core::workload::Workload;
use log_core::{Log, LogConfig};

fn arg(name: &str, default: u64) -> u64 {
    let args: Vec<String> = std::env::args().collect();
    args.iter().position(|a| a == name).and_then(|i| args.get(i + 1)).map_or(default, |s| s.parse().expect(name))
}

fn main() {
    bench::exit_if_help(
        "pass-bench: one whole cleaning pass (both phases) per offset map, in memory

usage: pass-bench [--records 10000000] [--keys 1000000] [--value-bytes 100] [--maps skimpy,fullkey,compact]
                  [--threads 1] [--segment-bytes 67108864]

Prints one JSON line per map.",
    );
    let records = arg("--records", 10_000_000);
    let keys = arg("--keys", 1_000_000);
    let value_bytes = arg("--value-bytes", 100) as usize;
    let threads = arg("--threads", 1) as usize;
    let segment_bytes = arg("--segment-bytes", 64 << 20);
    let maps: Vec<MapKind> = std::env::args()
        .skip_while(|a| a != "--maps")
        .nth(1)
        .map_or(MapKind::ALL.to_vec(), |s| s.split(',').map(|m| MapKind::from_name(m).expect("map")).collect());
    let workload = Workload { records, keys, value_bytes, tombstone_fraction: 0.0, seed: 11 };
    for map in maps {
        let log =
            Log::open(Arc::new(storage_mem::MemStore::new()), LogConfig { segment_bytes, ..LogConfig::default() })
                .expect("open");
        let built = Instant::now();
        workload.append_to(&log, 1_000, |_| {}).expect("append");
        log.roll().expect("roll");
        eprintln!("built the log in {:.2} s", built.elapsed().as_secs_f64());
        let bytes: u64 = log.snapshot().closed().iter().map(|s| s.size()).sum();
        let budget = map.bytes_for(keys as usize, 0.9, 16) + (1 << 20);
        let config = CleanerConfig { map, dedupe_buffer_bytes: budget, threads, ..CleanerConfig::default() };
        let mut cleaner = Cleaner::new(config, Arc::new(SystemClock)).expect("map");
        // The replaced segments are freed when the last snapshot of them goes; holding one until the timing
        // ends keeps the freeing of 1.5 GB of memory (an unlink, on files) out of the pass's figures.
        let before = log.snapshot();
        let started = Instant::now();
        let stats = cleaner.clean(&log, PassOptions::default()).expect("pass");
        let seconds = started.elapsed().as_secs_f64();
        drop(before);
        assert!(!stats.map_full, "the budget holds every key");
        let line = serde_json::json!({
            "map": map.name(),
            "records": records,
            "keys": keys,
            "threads": threads,
            "groups": stats.groups,
            "log_bytes": bytes,
            "seconds": seconds,
            "records_per_s": records as f64 / seconds,
            "pass1_ns_per_record": stats.pass1.seconds * 1e9 / records as f64,
            "pass2_ns_per_record": stats.pass2.seconds * 1e9 / records as f64,
            "swap_seconds": stats.swap_seconds,
            "kept": stats.pass2.records_kept,
            "map_bytes_per_key": stats.offset_map.bytes_per_key,
            "probes_per_lookup": stats.offset_map.probes_per_lookup,
        });
        println!("{line}");
    }
}
