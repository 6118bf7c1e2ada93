//! The backlog in the benchmarks (issue 46): `vs-kafka --backlog` gives one table, a partition at a time
//! (plain and `__consumer_offsets`), of Kafka's own cleaner, the disk's floor and each of our maps, with
//! passes, seconds, bytes read and written, peak memory and whether each kept Kafka's records and files; and
//! `kafka-bench --shape consumer_offsets` writes and compacts `__consumer_offsets` beside the disk's floor.
//! Small sizes here (the preset's 4 GiB is the benchmark's, its figures in docs/memory.md).

use std::process::Command;

/// The table's rows of `partition`, each as its cells.
fn rows<'t>(table: &'t str, partition: &str) -> Vec<Vec<&'t str>> {
    table
        .lines()
        .map(|l| l.trim_matches('|').split('|').map(str::trim).collect::<Vec<_>>())
        .filter(|cells| cells.first() == Some(&partition))
        .collect()
}

/// The two-pass floor's row: the keys walk, then the read-once, write-once floor.
const TWO_PASS: &str = "floor: two passes (keys parsed and hashed, then read once, write kept once)";

#[test]
fn vs_kafka_backlog_gives_one_table_of_kafka_the_floor_and_every_map_for_both_shapes() {
    // Without Kafka (LOGCOMPACT_SKIP_KAFKA outside CI) there is nothing to compare with.
    if kafka_interop::Kafka::get().is_none() {
        return;
    }
    let root = tempfile::tempdir().expect("tempdir");
    // The preset, shrunk: about 2 MiB a partition, 20k keys, a buffer of about 2,400 keys for Kafka's map.
    let out = Command::new(env!("CARGO_BIN_EXE_vs-kafka"))
        .args(["--backlog", "--bytes", "2MiB", "--keys", "20k", "--segment-bytes", "256KiB"])
        .args(["--dedupe-buffer", "64KiB", "--threads", "1", "--dir"])
        .arg(root.path().join("d"))
        .output()
        .expect("run vs-kafka");
    let table = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{table}\n{}", String::from_utf8_lossy(&out.stderr));
    for partition in ["none", "__consumer_offsets"] {
        let rows = rows(&table, partition);
        let cleaners: Vec<&str> = rows.iter().map(|r| r[2]).collect();
        assert_eq!(
            cleaners,
            ["Kafka 4.4", "floor: read once, write kept once", TWO_PASS, "skimpy", "compact", "external", "auto"],
            "{table}"
        );
        let row = |cleaner: &str| rows.iter().find(|r| r[2] == cleaner).expect("row");
        let passes = |cleaner: &str| row(cleaner)[4].parse::<u64>().expect("passes");
        // Kafka's map fills: Kafka's cleaner and ours with its map take the same several passes and write
        // Kafka's files; auto and the external pass take one, with Kafka's records in other files.
        assert!(passes("Kafka 4.4") > 1, "{table}");
        assert_eq!(passes("skimpy"), passes("Kafka 4.4"), "{table}");
        assert_eq!((passes("auto"), passes("external")), (1, 1), "{table}");
        assert_eq!(row("skimpy")[12], "yes", "skimpy's files are Kafka's: {table}");
        for ours in ["skimpy", "compact", "external", "auto"] {
            assert_eq!(row(ours)[11], "yes", "{ours} keeps Kafka's records: {table}");
            // Every row reads and writes something, and is measured against the floor.
            assert!(row(ours)[8].parse::<f64>().expect("read") > 0.0, "{table}");
            assert!(row(ours)[7].trim_end_matches('x').parse::<f64>().expect("over floor") > 0.0, "{table}");
        }
        // The floor reads the partition once and writes what Kafka kept once: less than any pass reads.
        let read = |cleaner: &str| row(cleaner)[8].parse::<f64>().expect("read");
        assert!(read("floor: read once, write kept once") <= read("external"), "{table}");
        // The two-pass floor reads it twice (every key parsed and hashed first) and takes longer than the floor.
        assert_eq!(read(TWO_PASS), 2.0 * read("floor: read once, write kept once"), "{table}");
        let seconds = |cleaner: &str| row(cleaner)[5].trim_end_matches(" s").parse::<f64>().expect("seconds");
        assert!(seconds(TWO_PASS) >= seconds("floor: read once, write kept once"), "{table}");
    }
    // What the run wrote under --dir is gone.
    let left: Vec<_> = std::fs::read_dir(root.path().join("d")).map(|d| d.flatten().count()).into_iter().collect();
    assert!(left.iter().all(|&n| n == 0), "left behind under --dir: {left:?}");
}

#[test]
fn kafka_bench_writes_and_compacts_consumer_offsets_beside_the_disks_floor() {
    let root = tempfile::tempdir().expect("tempdir");
    let out = Command::new(env!("CARGO_BIN_EXE_kafka-bench"))
        .args(["--shape", "consumer_offsets", "--bytes", "512KiB", "--keys", "4200", "--segment-bytes", "64KiB"])
        .args(["--dedupe-buffer", "16000", "--maps", "skimpy,auto", "--dir"])
        .arg(root.path().join("d"))
        .output()
        .expect("run kafka-bench");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let lines: Vec<serde_json::Value> =
        String::from_utf8_lossy(&out.stdout).lines().filter_map(|l| serde_json::from_str(l).ok()).collect();
    let job = |name: &str, map: Option<&str>| {
        lines
            .iter()
            .find(|v| v["job"] == name && map.is_none_or(|m| v["map"] == m))
            .unwrap_or_else(|| panic!("{name}: {lines:?}"))
            .clone()
    };
    // __consumer_offsets' records are small (about 60 bytes in a batch of 100, against the plain shape's 125).
    let written = job("io_floor", None);
    let per_record = written["bytes"].as_f64().unwrap_or(0.0) / written["records"].as_f64().unwrap_or(f64::MAX);
    assert!(per_record > 0.0 && per_record < 90.0, "{per_record} bytes a record: {written}");
    let io = job("io_floor", None);
    assert!(io["bytes_read"].as_u64() > Some(400_000) && io["seconds"].as_f64() > Some(0.0), "{io}");
    let (skimpy, auto) = (job("compact", Some("skimpy")), job("compact", Some("auto")));
    // 200 groups' 4,200 keys in a buffer of about 600: Kafka's map takes several passes, auto one.
    assert!(skimpy["passes"].as_u64() > Some(1), "{skimpy}");
    assert_eq!(auto["passes"], 1, "{auto}");
    assert_eq!(auto["records_kept"], skimpy["records_kept"]);
    assert!(auto["over_io_floor"].as_f64() > Some(0.0), "{auto}");
    // --generate-only compacts nothing: a map given with it is refused, not ignored.
    let out = Command::new(env!("CARGO_BIN_EXE_kafka-bench"))
        .args(["--generate-only", "--maps", "auto", "--dir"])
        .arg(root.path().join("g"))
        .output()
        .expect("run kafka-bench");
    assert!(!out.status.success() && !root.path().join("g").exists(), "{}", String::from_utf8_lossy(&out.stderr));
    // A codec is refused for it: the coordinator writes it uncompressed.
    let out = Command::new(env!("CARGO_BIN_EXE_kafka-bench"))
        .args(["--shape", "consumer_offsets", "--codec", "lz4", "--dir"])
        .arg(root.path().join("e"))
        .output()
        .expect("run kafka-bench");
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("uncompressed"), "{}", String::from_utf8_lossy(&out.stderr));
}

#[test]
fn vs_kafka_refuses_a_flag_its_shapes_would_ignore() {
    // No flag silently ignored: codecs without the plain shape, bytes for the broker's partitions, a cleaner's
    // settings when only the partitions are written. Nothing is written under --dir.
    let root = tempfile::tempdir().expect("tempdir");
    let dir = root.path().join("d");
    let dir = dir.to_str().expect("utf-8");
    for args in [
        &["--shapes", "consumer_offsets", "--codecs", "lz4", "--dir", dir][..],
        &["--broker", "--bytes", "1MiB", "--dir", dir][..],
        &["--write-only", "--dir", dir, "--maps", "auto"][..],
        &["--write-only", "--dir", dir, "--dedupe-buffer", "1MiB"][..],
    ] {
        let out = Command::new(env!("CARGO_BIN_EXE_vs-kafka")).args(args).output().expect("run vs-kafka");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{args:?}");
        assert!(args.iter().any(|a| a.starts_with("--") && a != &"--dir" && err.contains(a)), "{args:?}: {err}");
        assert!(!root.path().join("d").exists(), "{args:?} wrote under --dir");
    }
}

#[test]
fn the_full_reports_backlog_row_cleans_one_partition_with_kafka_the_floor_and_every_map() {
    if kafka_interop::Kafka::get().is_none() {
        return;
    }
    // The full report's backlog, shrunk: 2 MiB of 20k keys in 256 KiB segments and a 64 KiB buffer (Kafka's
    // map takes several passes), ours run by a binary that takes the child flag (vs-kafka's).
    let config = bench::report::Config {
        kafka_records: 1,
        kafka_cleaner_repeats: 1,
        backlog_bytes: 2 << 20,
        backlog_keys: 20_000,
        backlog_buffer_bytes: 64 << 10,
        child_exe: Some(env!("CARGO_BIN_EXE_vs-kafka").into()),
        ..bench::report::Config::new(false)
    };
    let mut told = 0;
    let tables = bench::report::backlog::run(&config, &mut |_| told += 1).expect("the backlog");
    assert_eq!((tables.len(), told), (1, 1), "one table, told once");
    let t = &tables[0];
    let cleaners: Vec<&str> = t.ours.iter().map(|r| r.run.cleaner.as_str()).collect();
    assert_eq!(cleaners, ["skimpy", "compact", "external", "auto"]);
    assert!(t.kafka.run.passes > 1 && t.ours[0].run.passes == t.kafka.run.passes, "{t:?}");
    assert!(t.ours.iter().all(|r| r.same_records == Some(true) && r.run.seconds > 0.0), "{t:?}");
    assert!(t.floor.bytes_read >= 1 << 20 && t.floor.seconds() > 0.0, "{t:?}");
    // The report's markdown holds it.
    let report = bench::report::Report {
        schema_version: bench::report::SCHEMA_VERSION,
        git_revision: "test".into(),
        created_ms: 0,
        machine: bench::report::Machine::this(),
        config: config.clone(),
        results: Vec::new(),
        kafka: Vec::new(),
        kafka_cleaner: String::new(),
        backlog: tables.clone(),
        peak_rss_bytes: 0,
    };
    let md = bench::report::markdown::render(&report);
    assert!(md.contains("## The backlog") && md.contains("| plain | 2 | auto | 1 | 1 |"), "{md}");
}
