//! Memory in Kafka passes is bounded per batch, not per record: a partition of a few MB holding one zstd batch that
//! inflates to a million tiny records is compacted, analysed and sized within the decompressed bytes and a
//! little more (before, every record of the batch was collected, about 100 bytes each, beside the bytes).

use std::path::Path;
use std::process::Command;

use crate::common;
use common::{bin, path, stderr};

/// A partition: one closed segment holding one zstd batch of `n` records over 100 keys (one-byte values),
/// then an active segment of one record.
fn partition(dir: &Path, n: usize) {
    partition_of(dir, n, 1);
}

/// As [`partition`] with `batches` such batches in the closed segment.
fn partition_of(dir: &Path, n: usize, batches: usize) {
    use log_core::kafka::{Compression, RecordToWrite, new_header, write_batch};
    std::fs::create_dir_all(dir).expect("mkdir");
    let keys: Vec<Vec<u8>> = (0..100).map(|k| format!("k{k}").into_bytes()).collect();
    let (mut segment, mut out, mut scratch) = (Vec::new(), Vec::new(), Vec::new());
    for b in 0..batches {
        let base = b * n;
        let records: Vec<RecordToWrite<'_>> = (base..base + n)
            .map(|i| RecordToWrite {
                offset: i as i64,
                timestamp: 1,
                key: Some(&keys[i % 100]),
                value: Some(b"v"),
                header_count: 0,
                header_bytes: &[],
            })
            .collect();
        out.clear();
        write_batch(
            &new_header(base as i64, (n - 1) as i32),
            Compression::Zstd,
            None,
            &records,
            &mut out,
            &mut scratch,
        )
        .expect("batch");
        segment.extend_from_slice(&out);
    }
    std::fs::write(dir.join(format!("{:020}.log", 0)), &segment).expect("segment");
    let next = batches * n;
    let last = [RecordToWrite {
        offset: next as i64,
        timestamp: 1,
        key: Some(b"k0"),
        value: Some(b"v"),
        header_count: 0,
        header_bytes: &[],
    }];
    out.clear();
    write_batch(&new_header(next as i64, 0), Compression::None, None, &last, &mut out, &mut scratch).expect("batch");
    std::fs::write(dir.join(format!("{next:020}.log")), &out).expect("segment");
}

/// The peak resident memory (KiB) of `logcompact args`, from the kernel's accounting of the finished child
/// (`getrusage`), measured from a small Python process: a child of this test process would be charged the
/// test's own memory (a spawned child shares its parent's address space until it runs the new program).
fn peak_kib(args: &[&str]) -> i64 {
    let script = "import resource, subprocess, sys\n\
                  r = subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)\n\
                  sys.stderr.write(r.stderr.decode(errors='replace'))\n\
                  print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)\n\
                  sys.exit(r.returncode)\n";
    let bin = bin();
    let out = Command::new("python3").args(["-c", script, &bin]).args(args).output().expect("python3 runs");
    assert!(out.status.success(), "{args:?}: {}", stderr(&out));
    String::from_utf8_lossy(&out.stdout).trim().parse().expect("a number of KiB")
}

#[test]
fn a_batch_of_a_million_tiny_records_is_compacted_in_memory_bounded_by_its_bytes() {
    const N: usize = 1_000_000;
    let tmp = tempfile::tempdir().expect("tempdir");
    let part = tmp.path().join("kafka-logs").join("tiny-0");
    partition(&part, N);
    let size = std::fs::metadata(part.join(format!("{:020}.log", 0))).expect("segment").len();
    assert!(size < 8_000_000, "a few MB: {size} bytes");
    // About 9 MB decompressed: every record collected (about 100 bytes each) would add 100 MB. The build before
    // this bound (4a6e2c2) peaked at 230 MB compacting it and 212 MB analysing it.
    let peak = peak_kib(&["analyze", "--format", "kafka", "--dir", path(&part), "--dedupe-buffer", "1MiB"]);
    assert!(peak < 80 * 1024, "analyze peaked at {peak} KiB");
    let peak = peak_kib(&crate::common::compact_kafka(path(&part), &["--dedupe-buffer", "1MiB"]));
    assert!(peak < 80 * 1024, "compact peaked at {peak} KiB");
    let dump = Command::new(bin()).args(["dump", "--format", "kafka", "--json", "--dir", path(&part)]).output();
    let v: serde_json::Value = serde_json::from_slice(&dump.expect("dump").stdout).expect("json");
    let kept: usize =
        v["batches"].as_array().expect("batches").iter().map(|b| b["records"].as_array().map_or(0, Vec::len)).sum();
    assert_eq!(kept, 101, "the latest record of each of 100 keys, and the active segment's");
}

#[test]
fn a_repair_plan_of_a_large_damaged_segment_reads_it_a_window_at_a_time() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = tmp.path().join("log");
    let generated = Command::new(bin())
        .args(["gen", "--dir", path(&dir), "--records", "64000", "--keys", "1000", "--value-bytes", "1000"])
        .output()
        .expect("gen");
    assert!(generated.status.success(), "{}", stderr(&generated));
    let roll = Command::new(bin()).args(["roll", "--dir", path(&dir)]).output().expect("roll");
    assert!(roll.status.success(), "{}", stderr(&roll));
    let seg = dir.join(format!("{:020}.log", 0));
    let mut bytes = std::fs::read(&seg).expect("read");
    assert!(bytes.len() > 60 << 20, "one segment of {} bytes", bytes.len());
    let at = bytes.len() / 2;
    bytes[at] ^= 0x04;
    std::fs::write(&seg, &bytes).expect("write");
    drop(bytes);
    // Reading the whole segment, as the repair did before it streamed, would take 64 MB more than this.
    let out = Command::new(bin()).args(["repair", "--dir", path(&dir)]).output().expect("repair");
    assert!(String::from_utf8_lossy(&out.stdout).contains("a repair would: cut"), "{}", stderr(&out));
    let peak = peak_kib(&["repair", "--dir", path(&dir)]);
    assert!(peak < 40 * 1024, "the repair plan peaked at {peak} KiB");
}

#[test]
fn a_json_dump_of_batches_of_a_million_tiny_records_streams_them() {
    // `dump --format kafka --json` collected each batch's records as JSON values (about 1.7 KB a record): 1.67 GB
    // for one batch of a million tiny records, an abort at 8 GB for a few of them. It now writes each record as
    // it is decoded: memory is one batch's decompressed bytes and a record.
    const N: usize = 1_000_000;
    let tmp = tempfile::tempdir().expect("tempdir");
    let part = tmp.path().join("kafka-logs").join("tiny-0");
    partition_of(&part, N, 4);
    let size = std::fs::metadata(part.join(format!("{:020}.log", 0))).expect("segment").len();
    assert!(size < 8_000_000, "a few MB: {size} bytes");
    for style in ["--json", "--json-lines"] {
        let peak = peak_kib(&["dump", "--format", "kafka", style, "--dir", path(&part)]);
        assert!(peak < 64 * 1024, "dump {style} peaked at {peak} KiB");
    }
    let dump = Command::new(bin()).args(["dump", "--format", "kafka", "--json", "--dir", path(&part)]).output();
    let v: serde_json::Value = serde_json::from_slice(&dump.expect("dump").stdout).expect("json");
    let records: usize =
        v["batches"].as_array().expect("batches").iter().map(|b| b["records"].as_array().map_or(0, Vec::len)).sum();
    assert_eq!(records, 4 * N + 1, "every record");
}

#[test]
fn a_read_only_command_costs_what_the_partition_needs_not_the_buffer_asked_for() {
    // `advise` and `analyze` replay pass 1 with every map: each map was sized for the whole buffer and cleared
    // in full, so a 16 GiB buffer on a 3 MiB partition peaked at 9.5 GB and took 21 s (2 GiB: 4.1 GB); the time follows the memory cleared. Each
    // map is now sized for the keys the dirty section's offsets can hold, as a pass sizes its own.
    let tmp = tempfile::tempdir().expect("tempdir");
    let part = tmp.path().join("kafka-logs").join("orders-0");
    common::kafka_partition(&part, 5000, 4, 200, 100);
    let bytes: u64 =
        std::fs::read_dir(&part).expect("list").map(|e| e.expect("entry").metadata().expect("stat").len()).sum();
    assert!((1 << 20..8 << 20).contains(&bytes), "a partition of a few MiB: {bytes} bytes");
    for cmd in ["advise", "analyze"] {
        let args = [cmd, "--format", "kafka", "--dir", path(&part), "--dedupe-buffer", "16GiB"];
        let peak = peak_kib(&args);
        assert!(peak < 64 * 1024, "{cmd} with a 16 GiB buffer on {bytes} bytes peaked at {peak} KiB");
        let out = Command::new(bin()).args(args).output().expect("run");
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(text.contains("16.0 GiB over 1 thread"), "{cmd}: the advice is for the buffer asked for: {text}");
    }
}

#[test]
fn a_dump_of_a_large_record_streams_its_value() {
    // Issue 42, finding 7: `dump --json-lines` of a legal 200 MiB record peaked at 3x its size (the value escaped
    // into a String, then held in a JSON value). Each kind of dump now escapes the value on its way out: memory is
    // the record's batch and a little more, whatever the value's bytes.
    const VALUE: usize = 200 << 20;
    use log_core::kafka::{Compression, RecordToWrite, new_header, write_batch};
    let tmp = tempfile::tempdir().expect("tempdir");
    let part = tmp.path().join("kafka-logs").join("large-0");
    std::fs::create_dir_all(&part).expect("mkdir");
    // Mostly plain text, with something of every kind to escape: quotes, backslashes, newlines, control
    // characters and bytes that are not UTF-8.
    let mut value = vec![b'x'; VALUE];
    for (i, b) in value.iter_mut().enumerate().step_by(4093) {
        *b = [b'"', b'\\', b'\n', 0x01, 0xff][i % 5];
    }
    let (mut out, mut scratch) = (Vec::new(), Vec::new());
    let records = [RecordToWrite {
        offset: 0,
        timestamp: 1,
        key: Some(b"k"),
        value: Some(&value),
        header_count: 0,
        header_bytes: &[],
    }];
    write_batch(&new_header(0, 0), Compression::None, None, &records, &mut out, &mut scratch).expect("batch");
    std::fs::write(part.join(format!("{:020}.log", 0)), &out).expect("segment");
    drop(out);
    let limit_kib = (VALUE as i64 * 13 / 10 + (32 << 20)) / 1024;
    for style in ["--json-lines", "--json", "--text"] {
        let args: Vec<&str> = ["dump", "--format", "kafka", "--dir", path(&part)]
            .into_iter()
            .chain((style != "--text").then_some(style))
            .collect();
        let peak = peak_kib(&args);
        eprintln!("dump {style} of a {VALUE}-byte value: peak {peak} KiB");
        assert!(peak < limit_kib, "dump {style} of a {VALUE}-byte value peaked at {peak} KiB");
    }
    // And the value comes back whole.
    let dump = Command::new(bin())
        .args(["dump", "--format", "kafka", "--json-lines", "--dir", path(&part)])
        .output()
        .expect("dump");
    let first = dump.stdout.split(|&b| b == b'\n').next().expect("a line");
    let batch: serde_json::Value = serde_json::from_slice(first).expect("json");
    let shown = batch["records"][0]["value"].as_str().expect("a value");
    let mut expected = String::with_capacity(VALUE);
    for chunk in value.utf8_chunks() {
        expected.push_str(&chunk.valid().replace('\\', "\\\\"));
        for b in chunk.invalid() {
            expected.push_str(&format!("\\x{b:02x}"));
        }
    }
    assert!(shown == expected, "the value as dump --json shows bytes");
}
