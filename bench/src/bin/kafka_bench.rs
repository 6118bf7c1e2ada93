//! Analyze and compact throughput on a generated Kafka partition (uncompressed or lz4 batches), with each map.
//!
//! `cargo run --release -p bench --bin kafka-bench -- [--bytes 1GiB] [--keys 1000000] [--codec none|lz4] [--dir D]
//! [--segment-bytes 256MiB] [--dedupe-buffer 128MiB] [--generate-only]` writes a partition
//! (`bench::kafka::write_partition`: 100 records a batch, 16-byte keys, 100-byte values of random letters that
//! compress about 2x, 1% tombstones) into `D/bench-<codec>-0`, then times `analyze` (one read with the three
//! maps replayed, then a dry run) and, per map, an in-place compaction of a copy of it until clean (the copy not
//! timed), and prints a JSON line each, with the passes, the bytes they wrote and their peak resident memory
//! (anonymous and file-backed, sampled every millisecond). `--generate-only` stops
//! after writing the partition and leaves it (to compact it with another build, say). `--shape
//! consumer_offsets` writes `__consumer_offsets` instead (`bench::kafka::write_offsets_partition`: a group a
//! 21 keys). `--backlog`: 4 GiB of 16M keys, every map, the external pass and `auto` (a flag beside it wins).
//! Beside the floors, the disk's (`bench::io_floor`: the partition read once, what is kept written once).
//! And the least pass 1 (`bench::bare::kafka_keys_floor`: every key parsed and hashed, nothing remembered,
//! the `keys_floor` line): with the disk's floor, a floor under a two-pass cleaner on one thread
//! (`over_two_pass_floor`).

use std::path::PathBuf;
use std::time::Instant;

use std::sync::Arc;

use bench::bare::{Out, Recompress};
use cleaner::advise::Budget;
use cleaner::{Cleaner, CleanerConfig, PassOptions, SystemClock};
use log_core::kafka::Compression;
use log_core::{Format, LogConfig};

/// Analyze and compact throughput on a generated Kafka partition, with each map.
///
/// Writes a partition (100 records a batch, 16-byte keys, 100-byte values, 1% tombstones) into
/// D/bench-<codec>-0, times analyze, the floors (what a pass must do with its own parsing: batches and records
/// read, keys put in and looked up in a bare table, CRC-32Cs checked, kept batches written with Kafka's .index
/// and .timeindex and synced; the codec floor also compresses a rebuilt batch again with its codec) and, per
/// map, an in-place compaction of a copy until clean, and prints a JSON line each, the compactions with their
/// time over each floor per phase and their peak resident memory above the opened copy's (anonymous, and
/// file-backed: the mapped segments' pages).
///
/// D may hold other files: kafka-bench refuses to start when a directory it would write (bench-<codec>-0, and
/// kafka-bench-work for the copies it compacts) is there already, and removes only what it wrote (D too, if it
/// made D and D is left empty).
#[derive(clap::Parser)]
#[command(name = "kafka-bench")]
struct Args {
    /// The backlog: --bytes 4GiB --keys 16M --maps skimpy,compact,external,auto (a flag given beside it wins).
    #[arg(long)]
    backlog: bool,
    /// Bytes of the partition written [default: 1GiB; --backlog: 4GiB].
    #[arg(long, value_parser = bench::args::bytes)]
    bytes: Option<u64>,
    /// Distinct keys [default: 1000000; --backlog: 16M].
    #[arg(long, value_parser = bench::args::count)]
    keys: Option<u64>,
    /// The partition: `plain` (uniform keys) or `consumer_offsets` (groups committing 20 partitions each,
    /// uncompressed; --keys / 21 groups).
    #[arg(long, value_parser = ["plain", "consumer_offsets"], default_value = "plain")]
    shape: String,
    /// The batches' codec.
    #[arg(long, value_parser = bench::args::codec, default_value = "none")]
    codec: Compression,
    /// Where the partition and the copies go.
    #[arg(long, value_name = "D", default_value_os_t = std::env::temp_dir().join("kafka-bench"))]
    dir: PathBuf,
    /// The partition's segment size.
    #[arg(long, value_parser = bench::args::bytes, default_value = "256MiB")]
    segment_bytes: u64,
    /// The dedupe buffer of every compaction.
    #[arg(long, value_parser = bench::args::bytes, default_value = "128MiB", conflicts_with = "generate_only")]
    dedupe_buffer: u64,
    /// The maps to compact with, comma separated (`auto`: Kafka's map, the external pass once it fills)
    /// [default: skimpy,fullkey,compact; --backlog: skimpy,compact,external,auto].
    #[arg(long, value_parser = bench::args::map_choice, value_delimiter = ',', conflicts_with = "generate_only")]
    maps: Option<Vec<bench::args::MapChoice>>,
    /// Stop after writing the partition, and keep it.
    #[arg(long)]
    generate_only: bool,
    /// Leave out the analyze run (a minute at 8 GiB: for a curve of the compactions alone).
    #[arg(long, conflicts_with = "generate_only")]
    no_analyze: bool,
}

impl Args {
    fn bytes(&self) -> u64 {
        self.bytes.unwrap_or(if self.backlog { 4 << 30 } else { 1 << 30 })
    }

    fn keys(&self) -> u64 {
        self.keys.unwrap_or(if self.backlog { 16_000_000 } else { 1_000_000 })
    }

    fn maps(&self) -> Result<Vec<bench::args::MapChoice>, String> {
        match &self.maps {
            Some(m) => Ok(m.clone()),
            None => {
                let names = if self.backlog { "skimpy,compact,external,auto" } else { "skimpy,fullkey,compact" };
                names.split(',').map(bench::args::map_choice).collect()
            }
        }
    }

    fn offsets(&self) -> bool {
        self.shape == "consumer_offsets"
    }
}

fn generate(a: &Args, dir: &std::path::Path) -> Result<(u64, u64), String> {
    if a.offsets() && a.codec != Compression::None {
        return Err("--shape consumer_offsets is written uncompressed, as the group coordinator writes it: \
                    leave out --codec"
            .into());
    }
    let store = storage_file::FileStore::open(dir).map_err(|e| e.to_string())?;
    let w = if a.offsets() {
        let groups = (a.keys() / 21).max(1);
        bench::kafka::write_offsets_partition(&store, groups, u64::MAX, a.bytes(), a.segment_bytes, 1)?
    } else {
        let keys = bench::Keys::new(usize::try_from(a.keys()).map_err(|e| e.to_string())?, 16, 1);
        bench::kafka::write_partition(&store, &keys, u64::MAX, a.bytes(), a.codec, a.segment_bytes, 1)?
    };
    drop(store);
    let _ = std::fs::remove_file(dir.join("logcompact.lock"));
    Ok((w.records, w.bytes))
}

fn main() -> std::process::ExitCode {
    cleaner::allocator::return_large_frees_to_the_system();
    let a: Args = bench::args::parse_or_exit();
    match run(&a) {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            std::process::ExitCode::FAILURE
        }
    }
}

/// The directories this run writes under `--dir`, removed when it ends (the partition too, unless it was
/// asked for with `--generate-only`), and `--dir` itself if this run made it and it is left empty. Nothing
/// else under `--dir` is touched.
struct Written {
    dir: PathBuf,
    made_dir: bool,
    paths: Vec<PathBuf>,
    keep: Option<PathBuf>,
}

impl Written {
    fn claim(a: &Args, src: &std::path::Path) -> Result<Written, String> {
        let paths = vec![src.to_path_buf(), work_dir(a)];
        if let Some(p) = paths.iter().find(|p| p.exists()) {
            return Err(format!(
                "{} exists already: kafka-bench writes its own directories under --dir and never removes what it did \
                 not write; remove it or give another --dir",
                p.display()
            ));
        }
        let made_dir = !a.dir.exists();
        std::fs::create_dir_all(&a.dir).map_err(|e| format!("cannot create {}: {e}", a.dir.display()))?;
        let work = work_dir(a);
        std::fs::create_dir(&work).map_err(|e| format!("cannot create {}: {e}", work.display()))?;
        Ok(Written { dir: a.dir.clone(), made_dir, paths, keep: None })
    }
}

impl Drop for Written {
    fn drop(&mut self) {
        for p in &self.paths {
            if self.keep.as_ref() != Some(p) {
                let _ = std::fs::remove_dir_all(p);
            }
        }
        if self.made_dir {
            // Only an empty directory is removed.
            let _ = std::fs::remove_dir(&self.dir);
        }
    }
}

/// Where the copies a run compacts live: a directory of this run's own, because a compaction of a copy
/// named `<topic>-<partition>` keeps its checkpoint and lock beside it, which must not land in `--dir` (a
/// broker's log directory given by mistake would take them as its own).
fn work_dir(a: &Args) -> PathBuf {
    a.dir.join("kafka-bench-work")
}

fn run(a: &Args) -> Result<(), String> {
    let maps = a.maps()?;
    let src = if a.offsets() {
        a.dir.join("__consumer_offsets-0")
    } else {
        a.dir.join(format!("bench-{}-0", a.codec.name()))
    };
    let mut written = Written::claim(a, &src)?;
    let t = Instant::now();
    let (records, bytes) = generate(a, &src)?;
    eprintln!("generated {records} records, {bytes} bytes in {:.1} s", t.elapsed().as_secs_f64());
    if a.generate_only {
        written.keep = Some(src.clone());
        eprintln!("the partition is {}", src.display());
        return Ok(());
    }
    if !a.no_analyze {
        let budget = Budget { total_bytes: 128 << 20, threads: 1, load_factor: 0.9 };
        let t = Instant::now();
        let opened = logcompact::open_read_only(&src, Format::Kafka).map_err(|e| e.to_string())?;
        let analysis = cleaner::analyze::analyze(
            &opened.log,
            "none".into(),
            budget,
            PassOptions::default(),
            Arc::new(SystemClock),
            None,
        )
        .map_err(|e| e.to_string())?;
        let s = t.elapsed().as_secs_f64();
        drop(opened);
        println!(
            "{}",
            serde_json::json!({"job": "analyze", "codec": a.codec.name(), "records": records, "bytes": bytes, "seconds": s,
                "records_per_s": records as f64 / s, "mb_per_s": bytes as f64 / s / 1e6, "distinct_keys": analysis.dirty.distinct.keys,
                "records_after_compaction": analysis.records_after_compaction})
        );
    }
    // The floors, on a writable open of the partition (its segments mapped, as a compaction reads them), writing
    // into the work directory: the floor leaves a rebuilt batch uncompressed, the codec floor compresses it again.
    let floor = {
        let out = work_dir(a).join("floor-0");
        logcompact::copy_log(&src, Format::Kafka, &out).map_err(|e| e.to_string())?;
        let config = LogConfig { segment_bytes: a.segment_bytes, ..LogConfig::default() };
        let log = logcompact::dir::open_writable_copy(&out, Format::Kafka, config).map_err(|e| e.to_string())?.log;
        let keys = usize::try_from(a.keys()).unwrap_or(usize::MAX);
        let interval = log.config().index_interval_bytes;
        // The least pass 1 (every key parsed and hashed, nothing remembered): with the disk's floor below, a
        // floor under a two-pass cleaner on one thread.
        let (keys_seconds, keys_hashed) = bench::bare::kafka_keys_floor(&log)?;
        println!(
            "{}",
            serde_json::json!({"job": "keys_floor", "codec": a.codec.name(), "records": records, "bytes": bytes,
                "seconds": keys_seconds, "keys_hashed": keys_hashed})
        );
        let mut floors = Vec::new();
        for (name, r) in [("floor", Recompress::No), ("codec_floor", Recompress::Yes)] {
            if name == "codec_floor" && a.codec == Compression::None {
                floors.push(floors[0]);
                continue;
            }
            let written = work_dir(a).join(format!("{name}-out"));
            let f = bench::bare::kafka_floor(&log, keys, Out::Dir(&written), a.segment_bytes, interval, r);
            let _ = std::fs::remove_dir_all(&written);
            println!(
                "{}",
                serde_json::json!({"job": name, "codec": a.codec.name(), "records": records, "bytes": bytes,
                    "pass1_seconds": f.pass1_seconds, "pass2_seconds": f.pass2_seconds, "seconds": f.seconds(),
                    "kept": f.kept, "bytes_written": f.bytes_written})
            );
            floors.push(f);
        }
        drop(log);
        let _ = std::fs::remove_dir_all(&out);
        (floors[0], floors[1], keys_seconds)
    };
    // The disk's floor: the partition read once, what the floor kept written once.
    let io = bench::io_floor::read_once_write_once(&src, floor.0.bytes_written, &work_dir(a).join("io-floor"))?;
    println!(
        "{}",
        serde_json::json!({"job": "io_floor", "codec": a.codec.name(), "records": records, "bytes": bytes,
            "read_seconds": io.read_seconds, "write_seconds": io.write_seconds, "seconds": io.seconds(),
            "bytes_read": io.bytes_read, "bytes_written": io.bytes_written})
    );
    for &map in &maps {
        let out = work_dir(a).join(format!("out-{}-0", map.name()));
        logcompact::copy_log(&src, Format::Kafka, &out).map_err(|e| e.to_string())?;
        let config = LogConfig { segment_bytes: a.segment_bytes, ..LogConfig::default() };
        let log = logcompact::dir::open_writable_copy(&out, Format::Kafka, config).map_err(|e| e.to_string())?.log;
        let dedupe_buffer_bytes = usize::try_from(a.dedupe_buffer).map_err(|e| format!("--dedupe-buffer: {e}"))?;
        let config =
            CleanerConfig { map: map.kind, one_pass: map.one_pass, dedupe_buffer_bytes, ..CleanerConfig::default() };
        let mut cleaner = Cleaner::new(config, Arc::new(SystemClock)).map_err(|e| e.to_string())?;
        let t = Instant::now();
        // Resident memory above what the opened copy held: the map's (anonymous) and the mapped segments'
        // pages the passes hold at once (file-backed: a window, not the partition).
        let (passes, peak) = bench::rss::peak_during(|| {
            cleaner.clean_until_clean(&log, PassOptions::default(), |_: &cleaner::CleanStats| Ok(()))
        });
        let passes = passes.map_err(|e| e.to_string())?;
        let s = t.elapsed().as_secs_f64();
        let sum = |f: &dyn Fn(&cleaner::CleanStats) -> f64| passes.iter().map(f).sum::<f64>();
        println!(
            "{}",
            serde_json::json!({"job": "compact", "map": map.name(), "codec": a.codec.name(), "records": records, "bytes": bytes,
                "seconds": s, "passes": passes.len(), "pass1_seconds": sum(&|p| p.pass1.seconds),
                "pass2_seconds": sum(&|p| p.pass2.seconds),
                "records_per_s": records as f64 / s, "mb_per_s": bytes as f64 / s / 1e6,
                "over_floor": s / floor.0.seconds(),
                "pass1_over_floor": sum(&|p| p.pass1.seconds) / floor.0.pass1_seconds,
                "pass2_over_floor": sum(&|p| p.pass2.seconds) / floor.0.pass2_seconds,
                "over_codec_floor": s / floor.1.seconds(),
                "over_io_floor": s / io.seconds(),
                "over_two_pass_floor": s / (floor.2 + io.seconds()),
                "pass1_over_keys_floor": sum(&|p| p.pass1.seconds) / floor.2,
                "pass2_over_codec_floor": sum(&|p| p.pass2.seconds) / floor.1.pass2_seconds,
                "records_kept": passes.last().map_or(0, |p| p.pass2.records_kept),
                "bytes_written": passes.iter().map(|p| p.bytes_written).sum::<u64>(),
                "peak_rss_anon_bytes": peak.anon, "peak_rss_file_bytes": peak.file,
                "external_phases": passes.iter().filter_map(|p| p.offset_map.external_phases).collect::<Vec<_>>()})
        );
        drop(log);
        let _ = std::fs::remove_dir_all(&out);
    }
    Ok(())
}
