//! Timing the offset maps on the workload of the maps issue: `n` distinct keys, each put 4 times (in 4
//! rounds over the keys in a seeded order, through `put_batch` in runs of `cleaner::map::BATCH`, as pass 1 feeds them), the map
//! sized so that `n` keys fill it to its load factor; then a get of every present key and of `n` absent keys
//! (through `get_batch`, as pass 2 asks). The keys are laid out in the order they are visited, so that
//! reading them streams through memory as a pass streams through a segment: the random accesses timed are
//! the map's own.

use std::time::Instant;

use cleaner::map::BATCH;
use cleaner::{MapKind, OffsetMap, Probes};
use serde::Serialize;

use crate::Keys;
use crate::bare::BareMap;

/// Nanoseconds per operation of one map on one workload.
#[derive(Debug, Clone, Serialize)]
pub struct MapTimes {
    /// `skimpy`, `fullkey`, `compact` or `bare`.
    pub map: String,
    /// Distinct keys.
    pub keys: usize,
    /// Bytes per key.
    pub key_bytes: usize,
    /// The map's budget in bytes (for `bare`, its table).
    pub budget_bytes: usize,
    /// ns per put (4 per key).
    pub put_ns: f64,
    /// ns per get of a present key.
    pub hit_ns: f64,
    /// ns per get of an absent key.
    pub miss_ns: f64,
    /// Probes per get, hits and misses together (0 for `bare`).
    pub probes_per_get: f64,
    /// Budget bytes per key held.
    pub bytes_per_key: f64,
}

/// The order in which keys are visited in round `round`: a seeded stride through them, computed before any
/// timing starts (a division per key would cost as much as a probe).
fn order(n: usize, round: usize) -> Vec<u32> {
    // A stride coprime to n visits every key once per round in a scrambled order.
    let mut stride = (n as u64 / 2 + 1 + round as u64 * 7919) | 1;
    while gcd(stride, n as u64) != 1 {
        stride += 2;
    }
    (0..n).map(|i| ((i as u64 * stride + round as u64 * 104_729) % n as u64) as u32).collect()
}

fn gcd(a: u64, b: u64) -> u64 {
    if b == 0 { a } else { gcd(b, a % b) }
}

/// Times `kind` on `present` keys (absent keys from `absent`), at `load_factor`.
///
/// # Panics
/// When the map cannot be built or refuses a key within its budget.
pub fn time_map(kind: MapKind, present: &Keys, absent: &Keys, load_factor: f64) -> MapTimes {
    let n = present.len();
    let budget = kind.bytes_for(n, load_factor, present.key_len());
    let mut map = kind.build(budget, load_factor).unwrap_or_else(|_| panic!("{kind}: cannot build {budget} bytes"));
    map.begin(0);
    let mut run: Vec<(&[u8], u64)> = Vec::with_capacity(BATCH);
    let visit: Vec<u32> = (0..4).flat_map(|r| order(n, r)).collect();
    let keys = stream(present, &visit);
    let started = Instant::now();
    for (offset, key) in keys.chunks_exact(present.key_len()).enumerate() {
        run.push((key, offset as u64));
        if run.len() == BATCH {
            assert_eq!(map.put_batch(&run), BATCH, "{kind} refused a key within its budget");
            run.clear();
        }
    }
    assert_eq!(map.put_batch(&run), run.len());
    let put_ns = started.elapsed().as_nanos() as f64 / (4 * n) as f64;
    let mut probes = Probes::default();
    let (hit_ns, hits) = gets(&*map, present, &mut probes);
    let (miss_ns, misses) = gets(&*map, absent, &mut probes);
    assert_eq!((hits, misses), (n, 0), "{kind}: every present key found, no absent one");
    MapTimes {
        map: kind.name().to_owned(),
        keys: n,
        key_bytes: present.key_len(),
        budget_bytes: budget,
        put_ns,
        hit_ns,
        miss_ns,
        probes_per_get: probes.probes as f64 / probes.lookups.max(1) as f64,
        bytes_per_key: map.stats().touched_bytes.max(if kind == MapKind::FullKey { 0 } else { budget as u64 }) as f64
            / n as f64,
    }
}

/// The keys of `keys` in the order of `visit`, one after the other.
fn stream(keys: &Keys, visit: &[u32]) -> Vec<u8> {
    let mut out = Vec::with_capacity(visit.len() * keys.key_len());
    for &i in visit {
        out.extend_from_slice(keys.get(i as usize));
    }
    out
}

/// ns per get over `keys`, and how many were found.
fn gets(map: &dyn OffsetMap, keys: &Keys, probes: &mut Probes) -> (f64, usize) {
    let mut run: Vec<&[u8]> = Vec::with_capacity(BATCH);
    let mut out = [None; BATCH];
    let mut found = 0;
    let stream = stream(keys, &order(keys.len(), 9));
    let started = Instant::now();
    for key in stream.chunks_exact(keys.key_len()) {
        run.push(key);
        if run.len() == BATCH {
            map.get_batch(&run, &mut out, probes);
            found += out.iter().filter(|o| o.is_some()).count();
            run.clear();
        }
    }
    map.get_batch(&run, &mut out, probes);
    found += out.iter().take(run.len()).filter(|o| o.is_some()).count();
    (started.elapsed().as_nanos() as f64 / keys.len() as f64, found)
}

/// Times the bare limit ([`BareMap`]) on the same workload.
pub fn time_bare(present: &Keys, absent: &Keys, load_factor: f64) -> MapTimes {
    let n = present.len();
    let mut map = BareMap::new(n, load_factor);
    let mut run: Vec<(&[u8], u64)> = Vec::with_capacity(16);
    let visit: Vec<u32> = (0..4).flat_map(|r| order(n, r)).collect();
    let keys = stream(present, &visit);
    let started = Instant::now();
    for (offset, key) in keys.chunks_exact(present.key_len()).enumerate() {
        run.push((key, offset as u64));
        if run.len() == 16 {
            map.put_batch(&run);
            run.clear();
        }
    }
    map.put_batch(&run);
    let put_ns = started.elapsed().as_nanos() as f64 / (4 * n) as f64;
    let time_gets = |keys: &Keys| {
        let mut run: Vec<&[u8]> = Vec::with_capacity(16);
        let mut out = [None; 16];
        let stream = stream(keys, &order(keys.len(), 9));
        let started = Instant::now();
        for key in stream.chunks_exact(keys.key_len()) {
            run.push(key);
            if run.len() == 16 {
                map.get_batch(&run, &mut out);
                run.clear();
            }
        }
        map.get_batch(&run, &mut out);
        started.elapsed().as_nanos() as f64 / keys.len() as f64
    };
    let (hit_ns, miss_ns) = (time_gets(present), time_gets(absent));
    let slots = ((n as f64 / load_factor).ceil() as usize).max(1);
    MapTimes {
        map: "bare".into(),
        keys: n,
        key_bytes: present.key_len(),
        budget_bytes: slots * 16,
        put_ns,
        hit_ns,
        miss_ns,
        probes_per_get: 0.0,
        bytes_per_key: (slots * 16) as f64 / n as f64,
    }
}
