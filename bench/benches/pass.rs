//! Whole cleaning passes (both phases), per map, on the memory and the file backend, with a buffer that holds
//! all the dirty keys, half of them, or a quarter (so one pass maps a part and the rest waits for the next),
//! for 10^4 and 10^5 keys with 10 records a key and 100-byte values. Throughput in records and bytes of the
//! log. Each iteration cleans a fresh copy of the same prepared log. `cargo bench -p bench --bench pass`;
//! `BENCH_MAX_KEYS=10000` stops at that many keys (CI's smoke run).

use std::sync::Arc;
use std::time::{Duration, Instant};

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};

use cleaner::{Cleaner, CleanerConfig, MapKind, PassOptions, SystemClock};
use log_core::workload::Workload;
use log_core::{Log, LogConfig, SegmentStore};

fn bench_passes(c: &mut Criterion) {
    let mut group = c.benchmark_group("pass");
    group.sample_size(10).measurement_time(Duration::from_secs(5));
    let max: u64 = std::env::var("BENCH_MAX_KEYS").ok().and_then(|v| v.parse().ok()).unwrap_or(u64::MAX);
    for keys in [10_000u64, 100_000].into_iter().filter(|&k| k <= max) {
        let workload = Workload { records: keys * 10, keys, value_bytes: 100, tombstone_fraction: 0.01, seed: 5 };
        let prepared = Arc::new(storage_mem::MemStore::new());
        let config = LogConfig { segment_bytes: 16 << 20, ..LogConfig::default() };
        let bytes = {
            let log =
                Log::open(Arc::clone(&prepared) as Arc<dyn SegmentStore>, log_core::OpenOptions::new(config.clone()))
                    .expect("open");
            workload.append_to(&log, 1_000, |_| {}).expect("append");
            log.roll().expect("roll");
            log.snapshot().closed().iter().map(|s| s.size()).sum::<u64>()
        };
        group.throughput(Throughput::ElementsAndBytes { elements: workload.records, bytes });
        for backend in ["mem", "file"] {
            for (share, divisor) in [("all", 1usize), ("half", 2), ("quarter", 4)] {
                for map in MapKind::ALL {
                    let id =
                        BenchmarkId::new(format!("{map}/{backend}/{share}"), format!("{keys}keys/{}MB", bytes >> 20));
                    group.bench_function(id, |b| {
                        b.iter_custom(|iters| {
                            let mut total = Duration::ZERO;
                            for _ in 0..iters {
                                let tmp = tempfile::tempdir().expect("tempdir");
                                let store: Arc<dyn SegmentStore> = match backend {
                                    "mem" => Arc::new(storage_mem::MemStore::new()),
                                    _ => Arc::new(storage_file::FileStore::open(tmp.path()).expect("dir")),
                                };
                                bench::store::copy_store(&*prepared, &*store).expect("copy");
                                let log = Log::open(store, log_core::OpenOptions::new(config.clone())).expect("open");
                                let budget = map.bytes_for(keys as usize / divisor, 0.9, 16);
                                let cc = CleanerConfig { map, dedupe_buffer_bytes: budget, ..CleanerConfig::default() };
                                let mut cleaner = Cleaner::new(cc, Arc::new(SystemClock)).expect("map");
                                let before = log.snapshot();
                                let started = Instant::now();
                                cleaner.clean(&log, PassOptions::default()).expect("pass");
                                total += started.elapsed();
                                drop(before);
                            }
                            total
                        })
                    });
                }
            }
        }
    }
    group.finish();
}

criterion_group!(benches, bench_passes);
criterion_main!(benches);
