//! Head to head with Kafka 4.4's own cleaner: the same partition, buffer, settings and clock, cleaned by
//! Kafka's `Cleaner` (offline in its JVM, `kafka-interop`'s `OfflineClean`, timed there around `doClean`) and by
//! this project's `compact` front door with each map (in a child process of this one, timed around its
//! passes), each on a fresh copy, several rounds; and beside them the disk's floor (`bench::io_floor`: the
//! partition read once, what Kafka kept written once and synced) and the two-pass floor (that, and before it
//! every key parsed and hashed with nothing remembered: `bench::bare::kafka_keys_walk`, the least a two-pass
//! cleaner does on one thread). Prints one table (and `--json` lines), a row
//! a cleaner: passes, seconds, Kafka's seconds over its, its seconds over the floor, bytes read and written,
//! peak resident memory of its process (the JVM's VmHWM; ours a child process's own VmHWM), and whether every
//! segment file came out byte for byte Kafka's.
//!
//! `cargo run --release -p bench --bin vs-kafka -- [--records 2M | --bytes 4GiB] [--keys 250k]
//! [--shapes plain,consumer_offsets] [--codecs none,lz4,gzip,zstd] [--maps compact,skimpy,external,auto]
//! [--dedupe-buffer 128MiB] [--segment-bytes 64MiB] [--rounds 2] [--threads 1,2] [--dir D] [--json]`
//! (`--write-only --dir D`: only writes the partitions, `D/vs-<codec>/vs-0` and
//! `D/vs-offsets/__consumer_offsets-0`, and keeps them: to profile a pass on them without Java).
//!
//! `--backlog`: a partition Kafka's cleaner fell behind on, as issue 46 describes it: 4 GiB of 16M keys (1%
//! tombstones) and a `__consumer_offsets` of 4 GiB from 762k groups, 256 MiB segments, uncompressed, Kafka's
//! cleaner and each of our maps, the external pass and `auto` on one thread and on two, one round. Any flag
//! given beside it wins (`--backlog --bytes 16GiB --keys 64M --segment-bytes 1GiB`: the 16 GiB table).
//!
//! The partitions are written by `bench::kafka::write_partition` (100 records a batch of 16-byte keys and
//! 100-byte values, about 12 KiB as a producer's default 16 KiB batches are, 1% tombstones) and
//! `bench::kafka::write_offsets_partition` (groups committing 20 partitions each, group metadata, one offset in
//! 200 deleted), compressed as Kafka compresses them (the codecs are Kafka's byte for byte), so Kafka's cleaner
//! reads them as its own; with `--broker`, by a real Kafka 4.4 broker from its Java producer
//! (`kafka_interop::bench_partitions`: the default idempotent producer, 16-byte keys, 100-byte values of
//! words, 1% tombstones; produced once for a size and cached under `target/kafka-interop/`).

use std::path::{Path, PathBuf};
use std::time::Instant;

use bench::args::MapChoice;
use bench::head_to_head::{Contender, Said, Setup};
use bench::vs_kafka::Settings;
use log_core::kafka::Compression;

/// The clock both cleaners are given: after every record's timestamp.
const NOW_MS: i64 = 4_000_000_000_000;

/// Kafka 4.4's own cleaner against ours, on the same partition, buffer, settings and clock, beside the disk's
/// floor (the partition read once, what is kept written once) and the two-pass floor (every key parsed and
/// hashed first, nothing remembered).
///
/// --threads is ours: a pass's groups of segments copied in parallel (Kafka's cleaner runs a log on one
/// thread). --write-only writes the partitions (D/vs-<codec>/vs-0, D/vs-offsets/__consumer_offsets-0) and
/// keeps them, running no cleaner (no Java needed). --broker: the partitions are written by a real Kafka 4.4
/// broker from its Java producer (once for a size, cached under target/kafka-interop/) instead of by this
/// project's writer.
///
/// --backlog: 4 GiB partitions of 16M keys (plain, 1% tombstones, and __consumer_offsets from 762k groups),
/// 256 MiB segments, uncompressed, maps skimpy,compact,external,auto, threads 1,2, one round; a flag given
/// beside it wins.
///
/// Needs Java 17 and Maven (Kafka's jars are resolved from Maven Central into target/ once). Writes its
/// partitions and copies under D (default: a new temporary directory), which it removes at the end.
#[derive(clap::Parser)]
#[command(name = "vs-kafka")]
struct Args {
    /// The backlog preset (see above).
    #[arg(long, conflicts_with = "broker")]
    backlog: bool,
    /// Records of each partition [default: 2M].
    #[arg(long, value_parser = bench::args::count, conflicts_with = "bytes")]
    records: Option<u64>,
    /// Bytes of batches of each partition, instead of a count of records [--backlog: 4GiB].
    #[arg(long, value_parser = bench::args::bytes)]
    bytes: Option<u64>,
    /// Distinct keys (of `consumer_offsets`: about this many, 21 a group) [default: 250k; --backlog: 16M].
    #[arg(long, value_parser = bench::args::count)]
    keys: Option<u64>,
    /// The partitions' shapes, comma separated: `plain` (a partition a codec), `consumer_offsets` (one,
    /// uncompressed, as the group coordinator writes it) [default: plain; --backlog: both].
    #[arg(long, value_parser = shape, value_delimiter = ',')]
    shapes: Option<Vec<Shape>>,
    /// The codecs of the plain shape, comma separated [default: none,lz4,gzip,zstd; --backlog: none].
    #[arg(long, value_parser = bench::args::codec, value_delimiter = ',')]
    codecs: Option<Vec<Compression>>,
    /// Our maps, comma separated (`auto`: Kafka's map, the external pass once it fills) [default:
    /// compact,skimpy; --backlog: skimpy,compact,external,auto].
    #[arg(long, value_parser = bench::args::map_choice, value_delimiter = ',', conflicts_with = "write_only")]
    maps: Option<Vec<MapChoice>>,
    /// The dedupe buffer of both cleaners.
    #[arg(long = "dedupe-buffer", value_parser = bench::args::bytes, default_value = "128MiB", conflicts_with = "write_only")]
    buffer: u64,
    /// The partitions' segment size [default: 64MiB; --backlog: 256MiB].
    #[arg(long, value_parser = bench::args::bytes)]
    segment_bytes: Option<u64>,
    /// Rounds, each on fresh copies [default: 2; --backlog: 1].
    #[arg(long, value_parser = at_least_one, conflicts_with = "write_only")]
    rounds: Option<usize>,
    /// Our threads within a pass, comma separated: a row each [default: 1; --backlog: 1,2].
    #[arg(long, value_parser = at_least_one, value_delimiter = ',', conflicts_with = "write_only")]
    threads: Option<Vec<usize>>,
    /// Where the partitions and copies go.
    #[arg(long, value_name = "D")]
    dir: Option<PathBuf>,
    /// JSON lines as well as the table.
    #[arg(long, conflicts_with = "write_only")]
    json: bool,
    /// Only write the partitions, and keep them.
    #[arg(long, requires = "dir", conflicts_with = "broker")]
    write_only: bool,
    /// Partitions a real Kafka 4.4 broker wrote (the plain shape only).
    #[arg(long)]
    broker: bool,
}

/// A partition's shape.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Shape {
    /// Uniform keys, a partition a codec.
    Plain,
    /// `__consumer_offsets`.
    ConsumerOffsets,
}

fn shape(text: &str) -> Result<Shape, String> {
    match text.trim() {
        "plain" => Ok(Shape::Plain),
        "consumer_offsets" => Ok(Shape::ConsumerOffsets),
        _ => Err(format!("unknown shape {text} (plain or consumer_offsets)")),
    }
}

/// A count of at least one.
fn at_least_one(text: &str) -> Result<usize, String> {
    match text.parse::<usize>() {
        Ok(n) if n >= 1 => Ok(n),
        _ => Err(format!("{text} is not a count of at least 1")),
    }
}

/// What a run does: the flags, with the preset's or the defaults where none was given.
struct Plan {
    records: u64,
    bytes: u64,
    keys: u64,
    shapes: Vec<Shape>,
    codecs: Vec<Compression>,
    maps: Vec<MapChoice>,
    segment_bytes: u64,
    rounds: usize,
    threads: Vec<usize>,
}

impl Plan {
    fn of(a: &Args) -> Result<Plan, String> {
        let backlog = a.backlog;
        let pick =
            |given: Option<u64>, preset: u64, default: u64| given.unwrap_or(if backlog { preset } else { default });
        let (records, bytes) = match (a.records, a.bytes) {
            (Some(r), _) => (r, u64::MAX),
            (None, Some(b)) => (u64::MAX, b),
            (None, None) if backlog => (u64::MAX, 4 << 30),
            (None, None) => (2_000_000, u64::MAX),
        };
        let maps = |names: &str| names.split(',').map(bench::args::map_choice).collect::<Result<Vec<_>, _>>();
        let plan = Plan {
            records,
            bytes,
            keys: pick(a.keys, 16_000_000, 250_000),
            shapes: a.shapes.clone().unwrap_or(if backlog {
                vec![Shape::Plain, Shape::ConsumerOffsets]
            } else {
                vec![Shape::Plain]
            }),
            codecs: a.codecs.clone().unwrap_or(if backlog {
                vec![Compression::None]
            } else {
                vec![Compression::None, Compression::Lz4, Compression::Gzip, Compression::Zstd]
            }),
            maps: match &a.maps {
                Some(m) => m.clone(),
                None => maps(if backlog { "skimpy,compact,external,auto" } else { "compact,skimpy" })?,
            },
            segment_bytes: pick(a.segment_bytes, 256 << 20, 64 << 20),
            rounds: a.rounds.unwrap_or(if backlog { 1 } else { 2 }),
            threads: a.threads.clone().unwrap_or(if backlog { vec![1, 2] } else { vec![1] }),
        };
        if a.codecs.is_some() && !plan.shapes.contains(&Shape::Plain) {
            return Err("--codecs are the plain shape's: __consumer_offsets is written uncompressed, as the group \
                        coordinator writes it"
                .into());
        }
        if a.broker && plan.shapes.contains(&Shape::ConsumerOffsets) {
            return Err("--broker gives the plain shape only: leave out --shapes consumer_offsets".into());
        }
        if a.broker && plan.bytes != u64::MAX {
            return Err("--broker writes a count of records: give --records, not --bytes".into());
        }
        Ok(plan)
    }

    /// The consumer groups of the `consumer_offsets` shape: 21 keys a group (20 partitions' offsets and the
    /// group's metadata).
    fn groups(&self) -> u64 {
        (self.keys / 21).max(1)
    }
}

/// A line on standard error; a failed write is ignored.
fn eprintln_quiet(line: &str) {
    let _ = std::io::Write::write_all(&mut std::io::stderr(), format!("{line}\n").as_bytes());
}

fn mib(b: u64) -> f64 {
    b as f64 / f64::from(1 << 20)
}

/// One partition to clean: its label in the table, where it is, its directory's name.
struct Partition {
    label: String,
    source: PathBuf,
    name: String,
    /// Removed at the end (written by this run, not the broker's cache).
    ours: bool,
}

/// One partition the plan asks for: a shape, and the plain shape's codec.
#[derive(Debug, Clone, Copy)]
struct Unit {
    shape: Shape,
    codec: Compression,
}

/// The plan's partitions, in order: each codec's plain partition, then `__consumer_offsets`.
fn units(plan: &Plan) -> Vec<Unit> {
    let mut out = Vec::new();
    for &shape in &plan.shapes {
        match shape {
            Shape::Plain => out.extend(plan.codecs.iter().map(|&codec| Unit { shape, codec })),
            Shape::ConsumerOffsets => out.push(Unit { shape, codec: Compression::None }),
        }
    }
    out
}

/// Writes one of the plan's partitions under `root`, or finds the broker's (`broker`: its cache's), just
/// before it is cleaned: a backlog's partitions are not all on the disk at once.
fn partition(
    plan: &Plan,
    unit: Unit,
    root: &Path,
    broker: Option<&kafka_interop::bench_partitions::Written>,
) -> Result<Partition, String> {
    if let Some(written) = broker {
        let name = format!("bench-{}-0", unit.codec.name());
        let p = written.partitions.iter().find(|p| p.name == name).ok_or(format!("the broker wrote no {name}"))?;
        return Ok(Partition { label: unit.codec.name().to_owned(), source: p.dir.clone(), name, ours: false });
    }
    let t = Instant::now();
    let (label, source, name, groups) = match unit.shape {
        Shape::Plain => {
            (unit.codec.name().to_owned(), root.join(format!("vs-{}", unit.codec.name())).join("vs-0"), "vs-0", 0)
        }
        Shape::ConsumerOffsets => (
            "__consumer_offsets".to_owned(),
            root.join("vs-offsets").join("__consumer_offsets-0"),
            "__consumer_offsets-0",
            plan.groups(),
        ),
    };
    let store = storage_file::FileStore::open(&source).map_err(|e| e.to_string())?;
    let written = match unit.shape {
        Shape::Plain => {
            let keys = bench::Keys::new(usize::try_from(plan.keys).map_err(|e| e.to_string())?, 16, 1);
            let (records, bytes, segment_bytes) = (plan.records, plan.bytes, plan.segment_bytes);
            bench::kafka::write_partition(&store, &keys, records, bytes, unit.codec, segment_bytes, 1)?
        }
        Shape::ConsumerOffsets => {
            bench::kafka::write_offsets_partition(&store, groups, plan.records, plan.bytes, plan.segment_bytes, 1)?
        }
    };
    drop(store);
    let _ = std::fs::remove_file(source.join("logcompact.lock"));
    let of_groups = if groups > 0 { format!(", {groups} groups") } else { String::new() };
    eprintln_quiet(&format!(
        "{label}: wrote {} records ({:.0} MiB{of_groups}) in {:.1} s",
        written.records,
        mib(written.bytes),
        t.elapsed().as_secs_f64()
    ));
    Ok(Partition { label, source, name: name.to_owned(), ours: true })
}

/// The broker's partitions for the plan (produced once for a size, then cached).
fn broker_partitions(plan: &Plan) -> Result<kafka_interop::bench_partitions::Written, String> {
    let kafka = kafka_interop::Kafka::get().ok_or("LOGCOMPACT_SKIP_KAFKA is set: there is no Kafka to run")?;
    let t = Instant::now();
    let spec = kafka_interop::bench_partitions::Spec {
        records: plan.records,
        keys: plan.keys,
        segment_bytes: plan.segment_bytes,
    };
    let written = kafka_interop::bench_partitions::get(kafka, &spec).map_err(|e| e.to_string())?;
    eprintln_quiet(&format!("the broker's partitions ready in {:.1} s", t.elapsed().as_secs_f64()));
    Ok(written)
}

fn run(a: &Args) -> Result<(), String> {
    let plan = Plan::of(a)?;
    let tmp = tempfile::tempdir().map_err(|e| e.to_string())?;
    let root = a.dir.clone().unwrap_or_else(|| tmp.path().to_path_buf());
    if a.write_only {
        for unit in units(&plan) {
            println!("{}", partition(&plan, unit, &root, None)?.source.display());
        }
        return Ok(());
    }
    let kafka = kafka_interop::Kafka::get().ok_or("LOGCOMPACT_SKIP_KAFKA is set: there is no Kafka to run")?;
    let exe = std::env::current_exe().map_err(|e| e.to_string())?;
    let contenders: Vec<Contender> =
        plan.maps.iter().flat_map(|&map| plan.threads.iter().map(move |&threads| Contender { map, threads })).collect();
    let setup = Setup {
        kafka,
        exe: &exe,
        root: &root,
        settings: Settings {
            buffer_bytes: a.buffer,
            segment_bytes: plan.segment_bytes,
            load_factor: 0.9,
            now_ms: NOW_MS,
            threads: 1,
        },
        rounds: plan.rounds,
        contenders: &contenders,
    };
    if !a.json {
        print!("{}", bench::head_to_head::HEADER);
    }
    let broker = if a.broker { Some(broker_partitions(&plan)?) } else { None };
    for unit in units(&plan) {
        let p = partition(&plan, unit, &root, broker.as_ref())?;
        let table = bench::head_to_head::clean_each(&setup, &p.label, &p.source, &p.name, |said| match said {
            Said::Line(line) if a.json => println!("{line}"),
            Said::Line(_) => {}
            Said::Difference(d) => eprintln_quiet(&d),
        })?;
        if !a.json {
            print!("{}", table.markdown());
        }
        if p.ours {
            let _ = std::fs::remove_dir_all(p.source.parent().unwrap_or(&p.source));
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
