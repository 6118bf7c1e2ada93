//! Head to head with Kafka 4.4's own cleaner: the same partition, buffer, settings and clock, cleaned by
//! Kafka's `Cleaner` (offline in its JVM, `kafka-interop`'s `OfflineClean`, timed there around `doClean`) and by
//! this project's `compact` front door with each map (in a child process of this one, timed around its
//! passes), each on a fresh copy, several rounds. Prints a table (and `--json` lines): seconds, Kafka's over
//! ours, peak resident memory of each process (the JVM's VmHWM; ours a child process's own VmHWM), output bytes over Kafka's,
//! and whether every segment file came out byte for byte Kafka's.
//!
//! `cargo run --release -p bench --bin vs-kafka -- [--records 2M] [--keys 250k] [--codecs none,lz4,gzip,zstd]
//! [--maps compact,skimpy] [--dedupe-buffer 128MiB] [--segment-bytes 64MiB] [--rounds 2] [--threads 1] [--dir D] [--json]`
//! (`--write-only --dir D`: only writes the partitions, `D/vs-<codec>/vs-0`, and keeps them: to profile a pass on
//! them without Java).
//!
//! The partitions are written by `bench::kafka::write_partition` (100 records a batch of 16-byte keys and
//! 100-byte values, about 12 KiB as a producer's default 16 KiB batches are, 1% tombstones), compressed as Kafka
//! compresses them (the codecs are Kafka's byte for byte), so Kafka's cleaner reads them as its own; with
//! `--broker`, by a real Kafka 4.4 broker from its Java producer (`kafka_interop::bench_partitions`: the default
//! idempotent producer, 16-byte keys, 100-byte values of words, 1% tombstones; produced once for a size and
//! cached under `target/kafka-interop/`).

use std::path::PathBuf;
use std::time::Instant;

use bench::vs_kafka::{Run, Settings, copy, first_difference, log_bytes, segment_files};
use cleaner::map::MapKind;
use log_core::kafka::Compression;

/// The clock both cleaners are given: after every record's timestamp.
const NOW_MS: i64 = 4_000_000_000_000;

/// Kafka 4.4's own cleaner against ours, on the same partition, buffer, settings and clock.
///
/// --threads is ours: a pass's groups of segments copied in parallel (Kafka's cleaner runs a log on one
/// thread). --write-only writes the partitions (D/vs-<codec>/vs-0) and keeps them, running no cleaner (no Java
/// needed). --broker: the partitions are written by a real Kafka 4.4 broker from its Java producer (once for a
/// size, cached under target/kafka-interop/) instead of by this project's writer.
///
/// Needs Java 17 and Maven (Kafka's jars are resolved from Maven Central into target/ once). Writes its
/// partitions and copies under D (default: a new temporary directory), which it removes at the end.
#[derive(clap::Parser)]
#[command(name = "vs-kafka")]
struct Args {
    /// Records of each partition.
    #[arg(long, value_parser = bench::args::count, default_value = "2M")]
    records: u64,
    /// Distinct keys.
    #[arg(long, value_parser = bench::args::count, default_value = "250k")]
    keys: u64,
    /// The codecs, a partition each, comma separated.
    #[arg(long, value_parser = bench::args::codec, value_delimiter = ',', default_value = "none,lz4,gzip,zstd")]
    codecs: Vec<Compression>,
    /// Our maps, comma separated.
    #[arg(long, value_parser = bench::args::map, value_delimiter = ',', default_value = "compact,skimpy")]
    maps: Vec<MapKind>,
    /// The dedupe buffer of both cleaners.
    #[arg(long = "dedupe-buffer", value_parser = bench::args::bytes, default_value = "128MiB")]
    buffer: u64,
    /// The partitions' segment size.
    #[arg(long, value_parser = bench::args::bytes, default_value = "64MiB")]
    segment_bytes: u64,
    /// Rounds, each on fresh copies.
    #[arg(long, default_value_t = 2, value_parser = at_least_one)]
    rounds: usize,
    /// Our threads within a pass.
    #[arg(long, default_value_t = 1)]
    threads: usize,
    /// Where the partitions and copies go.
    #[arg(long, value_name = "D")]
    dir: Option<PathBuf>,
    /// JSON lines as well as the table.
    #[arg(long)]
    json: bool,
    /// Only write the partitions, and keep them.
    #[arg(long, requires = "dir", conflicts_with = "broker")]
    write_only: bool,
    /// Partitions a real Kafka 4.4 broker wrote.
    #[arg(long)]
    broker: bool,
}

/// A count of at least one.
fn at_least_one(text: &str) -> Result<usize, String> {
    match text.parse::<usize>() {
        Ok(n) if n >= 1 => Ok(n),
        _ => Err(format!("{text} is not a count of at least 1")),
    }
}

/// A line on standard error; a failed write is ignored.
fn eprintln_quiet(line: &str) {
    let _ = std::io::Write::write_all(&mut std::io::stderr(), format!("{line}\n").as_bytes());
}

fn mib(b: u64) -> f64 {
    b as f64 / f64::from(1 << 20)
}

/// Writes each codec's partition under `dir` and keeps it.
fn write_only(a: &Args, dir: &std::path::Path) -> Result<(), String> {
    let keys = bench::Keys::new(usize::try_from(a.keys).map_err(|e| e.to_string())?, 16, 1);
    for &codec in &a.codecs {
        let target = dir.join(format!("vs-{}", codec.name())).join("vs-0");
        let store = storage_file::FileStore::open(&target).map_err(|e| e.to_string())?;
        bench::kafka::write_partition(&store, &keys, a.records, u64::MAX, codec, a.segment_bytes, 1)?;
        println!("{}", target.display());
    }
    Ok(())
}

fn run(a: &Args) -> Result<(), String> {
    if a.write_only {
        let dir = a.dir.as_ref().ok_or("--write-only needs --dir: the partitions are kept there")?;
        return write_only(a, dir);
    }
    let kafka = kafka_interop::Kafka::get().ok_or("LOGCOMPACT_SKIP_KAFKA is set: there is no Kafka to run")?;
    let tmp = tempfile::tempdir().map_err(|e| e.to_string())?;
    let root = a.dir.clone().unwrap_or_else(|| tmp.path().to_path_buf());
    let keys = bench::Keys::new(usize::try_from(a.keys).map_err(|e| e.to_string())?, 16, 1);
    let exe = std::env::current_exe().map_err(|e| e.to_string())?;
    let settings = Settings {
        buffer_bytes: a.buffer,
        segment_bytes: a.segment_bytes,
        load_factor: 0.9,
        now_ms: NOW_MS,
        threads: a.threads,
    };
    if !a.json {
        println!(
            "| codec | MiB | Kafka's cleaner | ours | Kafka / ours | peak RSS Kafka / ours | output bytes ours / Kafka | identical |"
        );
        println!("|---|---|---|---|---|---|---|---|");
    }
    let broker = if a.broker {
        let t = Instant::now();
        let spec =
            kafka_interop::bench_partitions::Spec { records: a.records, keys: a.keys, segment_bytes: a.segment_bytes };
        let written = kafka_interop::bench_partitions::get(kafka, &spec).map_err(|e| e.to_string())?;
        eprintln_quiet(&format!("the broker's partitions ready in {:.1} s", t.elapsed().as_secs_f64()));
        Some(written)
    } else {
        None
    };
    for &codec in &a.codecs {
        let (source, name) = match &broker {
            Some(w) => {
                let name = format!("bench-{}-0", codec.name());
                let p = w.partitions.iter().find(|p| p.name == name).ok_or(format!("the broker wrote no {name}"))?;
                (p.dir.clone(), name)
            }
            None => {
                let source = root.join(format!("vs-{}", codec.name())).join("vs-0");
                let store = storage_file::FileStore::open(&source).map_err(|e| e.to_string())?;
                let t = Instant::now();
                bench::kafka::write_partition(&store, &keys, a.records, u64::MAX, codec, a.segment_bytes, 1)?;
                eprintln!("{}: wrote {} records in {:.1} s", codec.name(), a.records, t.elapsed().as_secs_f64());
                (source, "vs-0".to_owned())
            }
        };
        let size = log_bytes(&source)?;
        let mut best: Vec<Option<Run>> = vec![None; a.maps.len() + 1];
        let mut identical = vec![true; a.maps.len()];
        for round in 0..a.rounds {
            let kdir = root.join(format!("round-{round}-kafka")).join(&name);
            copy(&source, &kdir)?;
            let k = bench::vs_kafka::kafka_clean(kafka, &kdir, &settings)?;
            let kfiles = segment_files(&kdir)?;
            for (i, &map) in a.maps.iter().enumerate() {
                let odir = root.join(format!("round-{round}-{}", map.name())).join(&name);
                copy(&source, &odir)?;
                let o = bench::vs_kafka::ours_in_child(&exe, &odir, map, &settings)?;
                let ofiles = segment_files(&odir)?;
                if ofiles != kfiles {
                    identical[i] = false;
                    eprintln_quiet(&format!("{} {}: {}", codec.name(), map.name(), first_difference(&kfiles, &ofiles)));
                }
                if a.json {
                    println!("{}", serde_json::json!({"codec": codec.name(), "round": round, "run": o, "kafka": k}));
                }
                if best[i + 1].as_ref().is_none_or(|b| o.seconds < b.seconds) {
                    best[i + 1] = Some(o);
                }
                let _ = std::fs::remove_dir_all(odir.parent().unwrap_or(&odir));
            }
            if best[0].as_ref().is_none_or(|b| k.seconds < b.seconds) {
                best[0] = Some(k);
            }
            let _ = std::fs::remove_dir_all(kdir.parent().unwrap_or(&kdir));
        }
        let Some(k) = best[0].clone() else { continue };
        for (i, o) in best[1..].iter().enumerate() {
            let Some(o) = o else { continue };
            if !a.json {
                println!(
                    "| {} | {:.0} | {:.2} s | {}: {:.2} s | {:.1}x | {:.0} / {:.0} MiB | {:.3} | {} |",
                    codec.name(),
                    mib(size),
                    k.seconds,
                    o.cleaner,
                    o.seconds,
                    k.seconds / o.seconds.max(1e-9),
                    mib(k.peak_rss_bytes),
                    mib(o.peak_rss_bytes),
                    o.bytes_after as f64 / k.bytes_after.max(1) as f64,
                    if identical[i] { "yes" } else { "no" }
                );
            }
        }
        if broker.is_none() {
            let _ = std::fs::remove_dir_all(source.parent().unwrap_or(&source));
        }
    }
    Ok(())
}

fn main() -> std::process::ExitCode {
    cleaner::allocator::return_large_frees_to_the_system();
    let argv: Vec<String> = std::env::args().skip(1).collect();
    if argv.first().map(String::as_str) == Some(bench::vs_kafka::CHILD_FLAG) {
        return match bench::vs_kafka::child_main(&argv[1..]) {
            Ok(()) => std::process::ExitCode::SUCCESS,
            Err(e) => {
                let _ = std::io::Write::write_all(&mut std::io::stderr(), format!("error: {e}\n").as_bytes());
                std::process::ExitCode::FAILURE
            }
        };
    }
    let a: Args = bench::args::parse_or_exit();
    match run(&a) {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            let _ = std::io::Write::write_all(&mut std::io::stderr(), format!("error: {e}\n").as_bytes());
            std::process::ExitCode::FAILURE
        }
    }
}
