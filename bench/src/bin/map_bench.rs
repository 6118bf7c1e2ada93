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
    cleaner::allocator::return_large_frees_to_the_system();
    bench::exit_if_help(
        "map-bench: the offset maps side by side with the bare limit

usage: map-bench [--keys 1000000,10000000] [--key-bytes 16] [--maps skimpy,fullkey,compact]
                 [--load-factors 0.9]

Prints one JSON line per map, cardinality and load factor, with each map's times over the bare limit's at the
same load factor in the same run (put_over_bare, hit_over_bare, miss_over_bare).",
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
    let load_factors: Vec<f64> = arg("--load-factors")
        .unwrap_or_else(|| "0.9".into())
        .split(',')
        .map(|s| s.trim().parse().expect("--load-factors F[,F...]"))
        .collect();
    for &n in &cardinalities {
        let present = Keys::new(n, key_bytes, 1);
        let absent = Keys::new(n, key_bytes, 2);
        for &lf in &load_factors {
            let bare = time_bare(&present, &absent, lf);
            let mut line = serde_json::to_value(&bare).expect("json");
            line["load_factor"] = lf.into();
            println!("{line}");
            for &kind in &maps {
                let t = time_map(kind, &present, &absent, lf);
                let mut line = serde_json::to_value(&t).expect("json");
                line["load_factor"] = lf.into();
                line["put_over_bare"] = (t.put_ns / bare.put_ns).into();
                line["hit_over_bare"] = (t.hit_ns / bare.hit_ns).into();
                line["miss_over_bare"] = (t.miss_ns / bare.miss_ns).into();
                println!("{line}");
            }
        }
    }
}
