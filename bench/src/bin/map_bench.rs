//! The offset maps side by side with the bare limit, on the maps issue's workload: `cargo run --release -p
//! bench --bin map-bench -- [--keys 1000000,10000000] [--key-bytes 16]`. Prints one JSON line per map and
//! cardinality. One run on a shared machine: compare the ratios within a run, not absolute figures.

use bench::Keys;
use bench::maps::{time_bare, time_map};
use cleaner::MapKind;

/// The offset maps side by side with the bare limit.
///
/// Prints one JSON line per map, cardinality and load factor, with each map's times over the bare limit's at
/// the same load factor in the same run (put_over_bare, hit_over_bare, miss_over_bare).
#[derive(clap::Parser)]
#[command(name = "map-bench")]
struct Args {
    /// Key cardinalities, comma separated.
    #[arg(long, value_parser = bench::args::count, value_delimiter = ',', default_value = "1000000,10000000")]
    keys: Vec<u64>,
    /// Bytes of each key.
    #[arg(long, default_value_t = 16)]
    key_bytes: usize,
    /// The maps, comma separated.
    #[arg(long, value_parser = bench::args::map, value_delimiter = ',', default_value = "skimpy,fullkey,compact")]
    maps: Vec<MapKind>,
    /// Load factors, comma separated.
    #[arg(long, value_delimiter = ',', default_value = "0.9")]
    load_factors: Vec<f64>,
}

fn main() {
    cleaner::allocator::return_large_frees_to_the_system();
    let a: Args = bench::args::parse_or_exit();
    let cardinalities: Vec<usize> = a.keys.iter().map(|&k| usize::try_from(k).unwrap_or(usize::MAX)).collect();
    let (key_bytes, maps, load_factors) = (a.key_bytes, a.maps.clone(), a.load_factors.clone());
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
