//! The offset maps side by side with the bare limit, on the maps issue's workload: `cargo run --release -p
//! bench --bin map-bench -- [--keys 1000000,10000000] [--key-bytes 16]`. Prints one JSON line per map and
//! cardinality. One run on a shared machine: compare the ratios within a run, not absolute figures.

use bench::Keys;
use bench::maps::{time_bare, time_map};
use cleaner::MapKind;

fn arg(name: &str) -> Option<String> {
    let args: Vec<String> = std::env::args().collect();
    args.iter().position(|a| a == name).and_then(|i| args.get(i + 1).cloned())
}

fn main() {
    bench::exit_if_help(
        "map-bench: the offset maps side by side with the bare limit

usage: map-bench [--keys 1000000,10000000] [--key-bytes 16]

Prints one JSON line per map and cardinality.",
    );
    let cardinalities: Vec<usize> = arg("--keys")
        .unwrap_or_else(|| "1000000,10000000".into())
        .split(',')
        .map(|s| s.trim().parse().expect("--keys N[,N...]"))
        .collect();
    let key_bytes: usize = arg("--key-bytes").map_or(16, |s| s.parse().expect("--key-bytes B"));
    let maps: Vec<MapKind> = arg("--maps").map_or(MapKind::ALL.to_vec(), |s| {
        s.split(',').map(|m| MapKind::from_name(m.trim()).expect("a map name")).collect()
    });
    for &n in &cardinalities {
        let present = Keys::new(n, key_bytes, 1);
        let absent = Keys::new(n, key_bytes, 2);
        let line = |t: &bench::maps::MapTimes| println!("{}", serde_json::to_string(t).expect("json"));
        line(&time_bare(&present, &absent, 0.9));
        for &kind in &maps {
            line(&time_map(kind, &present, &absent, 0.9));
        }
    }
}
