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
use logcompact::size::{parse_bytes, parse_count};

const USAGE: &str = "vs-kafka: Kafka 4.4's own cleaner against ours, on the same partition, buffer, settings and clock

usage: vs-kafka [--records 2M] [--keys 250k] [--codecs none,lz4,gzip,zstd,snappy] [--maps compact,skimpy]
                [--dedupe-buffer 128MiB] [--segment-bytes 64MiB] [--rounds 2] [--threads 1] [--dir D] [--json]
                [--broker]
       vs-kafka --write-only --dir D [--records ...] [--keys ...] [--codecs ...] [--segment-bytes ...]

--threads is ours: a pass's groups of segments copied in parallel (Kafka's cleaner runs a log on one thread).
--write-only writes the partitions (D/vs-<codec>/vs-0) and keeps them, running no cleaner (no Java needed).
--broker: the partitions are written by a real Kafka 4.4 broker from its Java producer (once for a size, cached
under target/kafka-interop/) instead of by this project's writer.

Needs Java 17 and Maven (Kafka's jars are resolved from Maven Central into target/ once). Writes its partitions
and copies under D (default: a new temporary directory), which it removes at the end.";

/// The clock both cleaners are given: after every record's timestamp.
const NOW_MS: i64 = 4_000_000_000_000;

struct Args {
    records: u64,
    keys: u64,
    codecs: Vec<Compression>,
    maps: Vec<MapKind>,
    buffer: u64,
    segment_bytes: u64,
    rounds: usize,
    threads: usize,
    dir: Option<PathBuf>,
    json: bool,
    write_only: bool,
    broker: bool,
}

fn codec(name: &str) -> Result<Compression, String> {
    Compression::ALL.into_iter().find(|c| c.name() == name).ok_or(format!("unknown codec {name}"))
}

fn parse() -> Result<Args, String> {
    let mut a = Args {
        records: 2_000_000,
        keys: 250_000,
        codecs: vec![Compression::None, Compression::Lz4, Compression::Gzip, Compression::Zstd],
        maps: vec![MapKind::Compact, MapKind::Skimpy],
        buffer: 128 << 20,
        segment_bytes: 64 << 20,
        rounds: 2,
        threads: 1,
        dir: None,
        json: false,
        write_only: false,
        broker: false,
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        match flag.as_str() {
            "-h" | "--help" => {
                println!("{USAGE}");
                std::process::exit(0);
            }
            "--json" => {
                a.json = true;
                continue;
            }
            "--write-only" => {
                a.write_only = true;
                continue;
            }
            "--broker" => {
                a.broker = true;
                continue;
            }
            _ => {}
        }
        let value = it.next().ok_or(format!("{flag} needs a value"))?;
        match flag.as_str() {
            "--records" => a.records = parse_count(&value).map_err(|e| format!("--records: {e}"))?,
            "--keys" => a.keys = parse_count(&value).map_err(|e| format!("--keys: {e}"))?,
            "--codecs" => a.codecs = value.split(',').map(|c| codec(c.trim())).collect::<Result<_, _>>()?,
            "--maps" => {
                a.maps = value
                    .split(',')
                    .map(|m| MapKind::from_name(m.trim()).ok_or(format!("unknown map {m}")))
                    .collect::<Result<_, _>>()?;
            }
            "--dedupe-buffer" => a.buffer = parse_bytes(&value).map_err(|e| format!("--dedupe-buffer: {e}"))?,
            "--segment-bytes" => a.segment_bytes = parse_bytes(&value).map_err(|e| format!("--segment-bytes: {e}"))?,
            "--rounds" => a.rounds = value.parse().map_err(|_| format!("--rounds: {value} is not a count"))?,
            "--threads" => a.threads = value.parse().map_err(|_| format!("--threads: {value} is not a count"))?,
            "--dir" => a.dir = Some(PathBuf::from(value)),
            other => return Err(format!("unknown option {other}")),
        }
    }
    if a.rounds == 0 {
        return Err("--rounds must be at least 1".into());
    }
    if a.broker && a.write_only {
        return Err("--broker and --write-only: the broker's partitions are kept under target/kafka-interop/".into());
    }
    Ok(a)
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
    let a = match parse() {
        Ok(a) => a,
        Err(e) => {
            let _ = std::io::Write::write_all(
                &mut std::io::stderr(),
                format!("error: {e} (vs-kafka --help shows the usage)\n").as_bytes(),
            );
            return std::process::ExitCode::from(2);
        }
    };
    match run(&a) {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            let _ = std::io::Write::write_all(&mut std::io::stderr(), format!("error: {e}\n").as_bytes());
            std::process::ExitCode::FAILURE
        }
    }
}
