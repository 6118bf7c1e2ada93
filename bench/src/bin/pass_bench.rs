//! One whole cleaning pass (both phases) per offset map, beside its floor (`bench::bare::native_floor` on the
//! same log, in the same run: read, keys in a bare table, CRCs checked, kept frames and index written and
//! synced): `cargo run --release -p bench --bin pass-bench -- [--records 10000000] [--keys 1000000]
//! [--value-bytes 100] [--rounds 1]`. The log is built before each timed run from the same seeded workload (64
//! MiB segments, the last one rolled so that everything is dirty); the map's budget holds every key unless
//! `--dedupe-buffer` says otherwise, and the external pass takes 16 MiB unless it does. Prints one JSON line per
//! map and round: times per record, ours over the floor, and the pass's peak resident memory (anonymous and
//! file-backed, above what the built log held); with several rounds (the floor and the pass taking turns to run
//! first), a line of each ratio's median.
use std::sync::Arc;
use std::time::Instant;

use cleaner::{Cleaner, CleanerConfig, MapKind, PassOptions, SystemClock};
use log_core::workload::Workload;
use log_core::{Log, LogConfig, SegmentStore};

/// One whole cleaning pass (both phases) per offset map, beside its floor on the same log.
///
/// Prints one JSON line per map: ns per record of each phase, ours over the floor per phase (what a pass must
/// do and nothing more, with its own parsing: read the frames, keys in a bare table, CRC-32Cs checked, the kept
/// frames and their index written to new files and synced, or to memory on the memory backend), and the pass's
/// peak resident memory above the built log's.
#[derive(clap::Parser)]
#[command(name = "pass-bench")]
struct Args {
    /// Records of the log.
    #[arg(long, value_parser = bench::args::count, default_value = "10000000")]
    records: u64,
    /// Distinct keys.
    #[arg(long, value_parser = bench::args::count, default_value = "1000000")]
    keys: u64,
    /// Bytes of each value.
    #[arg(long, default_value_t = 100)]
    value_bytes: usize,
    /// The maps, comma separated.
    #[arg(long, value_parser = bench::args::map, value_delimiter = ',', default_value = "skimpy,fullkey,compact")]
    maps: Vec<MapKind>,
    /// Threads within a pass.
    #[arg(long, default_value_t = 1)]
    threads: usize,
    /// The log's segment size.
    #[arg(long, value_parser = bench::args::bytes, default_value = "64MiB")]
    segment_bytes: u64,
    /// The dedupe buffer (default: one that holds every key; 16 MiB for the external pass).
    #[arg(long, value_parser = bench::args::bytes)]
    dedupe_buffer: Option<u64>,
    /// The backend: mem or file.
    #[arg(long, default_value = "mem", value_parser = ["mem", "file"])]
    backend: String,
    /// Where the external pass spills.
    #[arg(long, value_name = "DIR")]
    spill_dir: Option<std::path::PathBuf>,
    /// Rounds per map, the floor first in odd rounds and the pass first in even ones, each on a log built just
    /// before it; with more than one, a last line gives each ratio's median.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..))]
    rounds: u32,
}

/// A log built from the workload in its own directory (kept while the log lives).
struct Built {
    log: Log,
    /// Bytes of its segments.
    bytes: u64,
    _dir: tempfile::TempDir,
}

/// Builds the workload's log on the file or memory backend: the last segment rolled, so everything is dirty.
fn build(workload: &Workload, file_backend: bool, segment_bytes: u64) -> Built {
    let dir = tempfile::tempdir().expect("tempdir");
    let store: Arc<dyn SegmentStore> = if file_backend {
        Arc::new(storage_file::FileStore::open(dir.path()).expect("store"))
    } else {
        Arc::new(storage_mem::MemStore::new())
    };
    let log = Log::open(store, log_core::OpenOptions::new(LogConfig { segment_bytes, ..LogConfig::default() }))
        .expect("open");
    let built = Instant::now();
    workload.append_to(&log, 1_000, |_| {}).expect("append");
    log.roll().expect("roll");
    log.sync().expect("sync");
    eprintln!("built the log in {:.2} s", built.elapsed().as_secs_f64());
    let bytes = log.snapshot().closed().iter().map(|s| s.size()).sum();
    Built { log, bytes, _dir: dir }
}

/// The median of `v` (the mean of the middle two for an even count).
fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n % 2 == 1 { v[n / 2] } else { (v[n / 2 - 1] + v[n / 2]) / 2.0 }
}

fn main() {
    cleaner::allocator::return_large_frees_to_the_system();
    let a: Args = bench::args::parse_or_exit();
    let (records, keys, value_bytes, threads, segment_bytes) =
        (a.records, a.keys, a.value_bytes, a.threads, a.segment_bytes);
    let buffer = a.dedupe_buffer;
    let file_backend = a.backend == "file";
    let spill_dir = a.spill_dir.clone();
    let maps = a.maps.clone();
    let workload = Workload { records, keys, value_bytes, tombstone_fraction: 0.0, seed: 11 };
    for map in maps {
        let mut ratios: [Vec<f64>; 3] = [Vec::new(), Vec::new(), Vec::new()];
        for round in 1..=a.rounds {
            // Each side runs on a log built just before it, and whichever runs first in a round meets what the
            // previous side left (its freed memory): the order alternates so that neither side always gets it.
            let floor_first = round % 2 == 1;
            // The floor writes where the pass writes: files (synced) on the file backend, memory on the memory one.
            let run_floor = || {
                let built = build(&workload, file_backend, segment_bytes);
                let out_dir = tempfile::tempdir().expect("tempdir");
                let out = if file_backend { bench::bare::Out::Dir(out_dir.path()) } else { bench::bare::Out::Memory };
                bench::bare::native_floor(
                    &built.log,
                    keys as usize,
                    out,
                    segment_bytes,
                    LogConfig::default().index_interval_bytes,
                )
            };
            let budget = buffer.map_or_else(
                || match map {
                    MapKind::External => 16 << 20,
                    _ => map.bytes_for(keys as usize, 0.9, 16) + (1 << 20),
                },
                |b| b as usize,
            );
            let run_pass = || {
                let built = build(&workload, file_backend, segment_bytes);
                let config = CleanerConfig {
                    map,
                    dedupe_buffer_bytes: budget,
                    threads,
                    spill_dir: spill_dir.clone(),
                    ..CleanerConfig::default()
                };
                let mut cleaner = Cleaner::new(config, Arc::new(SystemClock)).expect("map");
                let log = &built.log;
                // The replaced segments are freed when the last snapshot of them goes; holding one until the
                // timing ends keeps the freeing of 1.5 GB of memory (an unlink, on files) out of the pass's figures.
                let before = log.snapshot();
                let started = Instant::now();
                let (stats, peak) = bench::rss::peak_during(|| {
                    cleaner.clean_until_clean(log, PassOptions::default(), |_| Ok(())).expect("passes")
                });
                let seconds = started.elapsed().as_secs_f64();
                drop(before);
                (stats, peak, seconds, built.bytes)
            };
            let (floor, (stats, peak, seconds, bytes)) = if floor_first {
                let floor = run_floor();
                (floor, run_pass())
            } else {
                let pass = run_pass();
                (run_floor(), pass)
            };
            let pass1: f64 = stats.iter().map(|s| s.pass1.seconds).sum();
            let pass2: f64 = stats.iter().map(|s| s.pass2.seconds).sum();
            let last = stats.last().expect("a pass");
            let per = |s: f64| s * 1e9 / records as f64;
            let over = [
                (pass1 + pass2) / (floor.pass1_seconds + floor.pass2_seconds),
                pass1 / floor.pass1_seconds,
                pass2 / floor.pass2_seconds,
            ];
            for (r, o) in ratios.iter_mut().zip(over) {
                r.push(o);
            }
            let line = serde_json::json!({
                "map": map.name(),
                "round": round,
                "first": if floor_first { "floor" } else { "pass" },
                "backend": if file_backend { "file" } else { "mem" },
                "records": records,
                "keys": keys,
                "threads": threads,
                "groups": last.groups,
                "passes": stats.len(),
                "buffer_bytes": budget,
                "log_bytes": bytes,
                "seconds": seconds,
                "records_per_s": records as f64 / seconds,
                "pass1_ns_per_record": per(pass1),
                "pass2_ns_per_record": per(pass2),
                "floor_pass1_ns_per_record": per(floor.pass1_seconds),
                "floor_pass2_ns_per_record": per(floor.pass2_seconds),
                "pass1_over_floor": over[1],
                "pass2_over_floor": over[2],
                "over_floor": over[0],
                "kept": last.pass2.records_kept,
                "floor_kept": floor.kept,
                "floor_bytes_written": floor.bytes_written,
                "peak_rss_anon_bytes": peak.anon,
                "peak_rss_file_bytes": peak.file,
                "map_allocated_bytes": last.offset_map.allocated_bytes,
                "spilled_bytes": stats.iter().map(|s| s.offset_map.spilled_bytes).sum::<u64>(),
                "probes_per_lookup": last.offset_map.probes_per_lookup,
            });
            println!("{line}");
        }
        if a.rounds > 1 {
            let [whole, p1, p2] = ratios;
            let line = serde_json::json!({
                "map": map.name(),
                "rounds": a.rounds,
                "median_over_floor": median(whole),
                "median_pass1_over_floor": median(p1),
                "median_pass2_over_floor": median(p2),
            });
            println!("{line}");
        }
    }
}
