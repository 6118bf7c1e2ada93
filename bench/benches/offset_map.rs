//! Offset map operations: put (of keys already mapped, the common case: pass 1 sees most keys several
//! times), get of present keys, get of absent keys, per map and the bare limit, for 10^4 to 10^7 keys of 16
//! and 64 bytes, each map filled to its load factor of 0.9 before the timing. Runs of 16 keys, as the
//! cleaner's passes feed them. `cargo bench -p bench --bench offset_map`; `BENCH_MAX_KEYS=100000` stops at
//! that many keys (CI's smoke run). Keys and filled maps are built only for the benchmarks a filter selects.

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};

use bench::Keys;
use bench::bare::BareMap;
use cleaner::map::BATCH;
use cleaner::{MapKind, OffsetMap, Probes};

/// Keys per timed iteration.
const OPS: usize = 1 << 14;

/// A map of `kind` holding every key of `keys`, sized for them at load 0.9.
fn filled(kind: MapKind, keys: &Keys) -> Box<dyn OffsetMap> {
    let budget = kind.bytes_for(keys.len(), 0.9, keys.key_len());
    let mut map = kind.build(budget, 0.9).unwrap_or_else(|_| panic!("{kind}"));
    map.begin(0);
    let pairs: Vec<(&[u8], u64)> = (0..keys.len()).map(|i| (keys.get(i), i as u64)).collect();
    for run in pairs.chunks(BATCH) {
        assert_eq!(map.put_batch(run), run.len(), "{kind} holds its keys");
    }
    map
}

/// `OPS` keys of `keys`, in a scrambled order, laid out one after the other as a pass reads them.
fn stream(keys: &Keys) -> Vec<u8> {
    let n = keys.len();
    let mut out = Vec::with_capacity(OPS * keys.key_len());
    for i in 0..OPS {
        out.extend_from_slice(keys.get((i * 7919 + 13) % n));
    }
    out
}

/// The largest cardinality to run (`BENCH_MAX_KEYS`, default 10^7).
fn max_keys() -> usize {
    std::env::var("BENCH_MAX_KEYS").ok().and_then(|v| v.parse().ok()).unwrap_or(10_000_000)
}

/// What one cardinality and key length needs, built on first use.
struct Setup {
    present: Keys,
    hits: Vec<u8>,
    misses: Vec<u8>,
}

fn bench_maps(c: &mut Criterion) {
    for key_len in [16usize, 64] {
        for n in [10_000usize, 100_000, 1_000_000, 10_000_000].into_iter().filter(|&n| n <= max_keys()) {
            let mut setup: Option<Setup> = None;
            let built = |setup: &mut Option<Setup>| {
                if setup.is_none() {
                    let present = Keys::new(n, key_len, 1);
                    let (hits, misses) = (stream(&present), stream(&Keys::new(OPS, key_len, 2)));
                    *setup = Some(Setup { present, hits, misses });
                }
            };
            let label = format!("{n}/{key_len}B");
            let mut group = c.benchmark_group(format!("offset_map/{key_len}B"));
            group.throughput(Throughput::Elements(OPS as u64)).sample_size(20);
            for kind in MapKind::ALL {
                let mut map: Option<Box<dyn OffsetMap>> = None;
                let mut offset = n as u64;
                group.bench_function(BenchmarkId::new(format!("{kind}/put"), &label), |b| {
                    built(&mut setup);
                    let s = setup.as_ref().expect("built");
                    let map = map.get_or_insert_with(|| filled(kind, &s.present));
                    b.iter(|| {
                        let mut run: Vec<(&[u8], u64)> = Vec::with_capacity(BATCH);
                        for key in s.hits.chunks_exact(key_len) {
                            run.push((key, offset));
                            offset += 1;
                            if run.len() == BATCH {
                                map.put_batch(&run);
                                run.clear();
                            }
                        }
                    })
                });
                for what in ["get_present", "get_absent"] {
                    group.bench_function(BenchmarkId::new(format!("{kind}/{what}"), &label), |b| {
                        built(&mut setup);
                        let s = setup.as_ref().expect("built");
                        let map = map.get_or_insert_with(|| filled(kind, &s.present));
                        let keys = if what == "get_present" { &s.hits } else { &s.misses };
                        let refs: Vec<&[u8]> = keys.chunks_exact(key_len).collect();
                        let mut out = [None; BATCH];
                        let mut probes = Probes::default();
                        b.iter(|| {
                            for run in refs.chunks(BATCH) {
                                map.get_batch(run, &mut out, &mut probes);
                            }
                            out[0]
                        })
                    });
                }
            }
            group.bench_function(BenchmarkId::new("bare/get_present", &label), |b| {
                built(&mut setup);
                let s = setup.as_ref().expect("built");
                let mut bare = BareMap::new(n, 0.9);
                let pairs: Vec<(&[u8], u64)> = (0..n).map(|i| (s.present.get(i), i as u64)).collect();
                for run in pairs.chunks(BATCH) {
                    bare.put_batch(run);
                }
                let refs: Vec<&[u8]> = s.hits.chunks_exact(key_len).collect();
                let mut out = [None; BATCH];
                b.iter(|| {
                    for run in refs.chunks(BATCH) {
                        bare.get_batch(run, &mut out);
                    }
                    out[0]
                })
            });
            group.finish();
        }
    }
}

criterion_group!(benches, bench_maps);
criterion_main!(benches);
