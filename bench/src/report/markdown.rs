//! `report.md`: the tables a reader wants, with the machine named and how to read them.

use std::fmt::Write;

use cleaner::MapKind;

use super::{Cell, Report, Spread};

fn mb(bytes: u64) -> String {
    let b = bytes as f64;
    if b >= (1u64 << 30) as f64 {
        format!("{:.1} GiB", b / (1u64 << 30) as f64)
    } else if b >= (1u64 << 20) as f64 {
        format!("{:.1} MiB", b / (1u64 << 20) as f64)
    } else {
        format!("{:.0} KiB", b / 1024.0)
    }
}

/// `1.05x (1.07, 1.02–1.15)`: the fastest run over the fastest floor, then every run's ratio: median and range.
fn ratio(best: f64, s: &Spread) -> String {
    if s.median == 0.0 {
        "-".to_owned()
    } else if (s.max - s.min).abs() < 1e-9 {
        format!("{best:.2}x")
    } else {
        format!("{best:.2}x ({:.2}, {:.2}–{:.2})", s.median, s.min, s.max)
    }
}

/// `1.10 / 1.40`: pass 1 over the floor's walk 1, pass 2 over its walk 2 (medians of the runs).
fn phases(pass1: &Spread, pass2: &Spread) -> String {
    if pass1.median == 0.0 { "-".to_owned() } else { format!("{:.2} / {:.2}", pass1.median, pass2.median) }
}

fn find<'a>(r: &'a Report, map: &str, backend: &str, keys: u64, share: f64) -> Option<&'a Cell> {
    r.results.iter().find(|c| c.map == map && c.backend == backend && c.keys == keys && c.buffer_share == share)
}

/// The keys a buffer holds, as a reader reads it (the external pass holds any number).
fn held(capacity: u64) -> String {
    if capacity == u64::MAX { "any".to_owned() } else { capacity.to_string() }
}

/// The Markdown text of `report`.
pub fn render(report: &Report) -> String {
    let mut md = String::new();
    let c = &report.config;
    let _ = writeln!(md, "# logcompact report{}\n", if c.quick { " (quick)" } else { "" });
    let _ = writeln!(md, "Machine: {}. Build: `{}`.\n", report.machine.describe(), report.git_revision);
    md.push_str(&super::conclusion::render(report));
    let _ = writeln!(md, "## How to read the tables\n");
    let _ = writeln!(
        md,
        "How to read: every row is one workload ({} records a key over N distinct {}-byte keys, {}-byte values, {}% \
         tombstones) cleaned until nothing is dirty by one offset map (or the external pass) in one dedupe buffer. \
         The buffer is the same for every map of a row: a share of what Kafka's `skimpy` map needs to map the \
         workload in one pass, so a map that holds more keys per byte takes fewer passes; the external pass takes \
         one whatever the buffer. ns/record is the time of all passes over the records of the log; lower is better. \
         Each cell ran {} times on a fresh copy of its log, each run beside its floor (what a pass must do on the same \
         log and nothing more, with its own few lines of parsing: read the frames, put the keys in a bare table, check \
         the CRC-32Cs pass 2 checks, write the kept frames and their index to new files and sync them, or into memory \
         on the memory backend); the figures are the median run's; *over floor* is the \
         fastest run's time over the fastest floor's (noise only adds time), then every run's ratio (median, range); *per phase* is pass 1 over the floor's first walk / pass 2 over its \
         second (medians). Memory is the peak of a run's cleaning above what its log held \
         (anonymous: maps, buffers and, on the memory backend, the new segments; file-backed: mapped segments). \
         Every cell left the same log (checked by digest).\n",
        c.records_per_key,
        c.key_bytes,
        c.value_bytes,
        c.tombstone_fraction * 100.0,
        c.repeats
    );
    if report.peak_rss_bytes > 0 {
        let _ = writeln!(md, "The report itself peaked at {} of resident memory.\n", mb(report.peak_rss_bytes));
    }
    let largest = c.cardinalities.iter().copied().max().unwrap_or(0);
    let backend = if c.file_only.contains(&largest) { "file" } else { "mem" };
    let _ = writeln!(md, "## By map ({largest} keys, {backend} backend, the buffer skimpy needs for one pass)\n");
    let _ = writeln!(
        md,
        "| map | bytes/slot | bytes/key | keys held | passes | pass 1 ns/record | pass 2 ns/record | records/s | MB/s | \
         over floor | per phase | anon MiB | file MiB | probes/lookup |"
    );
    let _ = writeln!(md, "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|");
    for map in MapKind::WITH_EXTERNAL {
        if let Some(x) = find(report, map.name(), backend, largest, 1.0) {
            // The external pass has no slots: its memory is the buffer and the bit set, in the memory columns.
            let (slot, per_key) = if map == MapKind::External {
                ("-".to_owned(), "-".to_owned())
            } else {
                (format!("{:.0}", x.bytes_per_slot), format!("{:.1}", x.bytes_per_key))
            };
            let _ = writeln!(
                md,
                "| {} | {slot} | {per_key} | {} | {} | {:.0} | {:.0} | {:.2} M | {:.0} | {} | {} | {:.0} | {:.0} | {:.2} |",
                x.map,
                held(x.capacity),
                x.passes_to_clean,
                x.pass1_ns_per_record,
                x.pass2_ns_per_record,
                x.records_per_s / 1e6,
                x.bytes_per_s / 1e6,
                ratio(x.best_over_floor, &x.over_floor),
                phases(&x.pass1_over_floor, &x.pass2_over_floor),
                x.peak_rss_anon_bytes as f64 / f64::from(1u32 << 20),
                x.peak_rss_file_bytes as f64 / f64::from(1u32 << 20),
                x.probes_per_lookup
            );
        }
    }
    let _ = writeln!(md, "\n## By cardinality and buffer: passes, ns/record, over floor, peak anonymous memory\n");
    let _ = write!(md, "| keys | buffer |");
    for map in MapKind::WITH_EXTERNAL {
        let _ = write!(md, " {map} |");
    }
    let _ = writeln!(md, "\n|---|---|---|---|---|---|");
    for &keys in &c.cardinalities {
        let backend = if c.file_only.contains(&keys) { "file" } else { "mem" };
        for share in c.shares_for(keys) {
            let Some(any) = find(report, "skimpy", backend, keys, share) else { continue };
            let _ = write!(
                md,
                "| {keys}{} | {} ({:.0}% of skimpy's one pass) |",
                if backend == "file" { " (file)" } else { "" },
                mb(any.buffer_bytes),
                share * 100.0
            );
            for map in MapKind::WITH_EXTERNAL {
                match find(report, map.name(), backend, keys, share) {
                    Some(x) => {
                        let _ = write!(
                            md,
                            " {} pass{}, {:.0} ns, {:.2}x, {} |",
                            x.passes_to_clean,
                            if x.passes_to_clean == 1 { "" } else { "es" },
                            x.pass1_ns_per_record + x.pass2_ns_per_record,
                            x.best_over_floor,
                            mb(x.peak_rss_anon_bytes)
                        );
                    }
                    None => md.push_str(" |"),
                }
            }
            md.push('\n');
        }
    }
    let _ = writeln!(md, "\n## The buffer each map needs for one pass\n");
    let _ = write!(md, "| keys |");
    for map in MapKind::ALL {
        let _ = write!(md, " {map} |");
    }
    let _ = writeln!(md, " external |\n|---|---|---|---|---|");
    for &keys in &c.cardinalities {
        let _ = write!(md, "| {keys} |");
        for map in MapKind::ALL {
            let _ = write!(md, " {} |", mb(map.bytes_for(keys as usize, c.load_factor, c.key_bytes) as u64));
        }
        md.push_str(" any (one pass in any buffer) |\n");
    }
    let files: Vec<&Cell> =
        report.results.iter().filter(|x| x.backend == "file" && !c.file_only.contains(&x.keys)).collect();
    if !files.is_empty() {
        let _ = writeln!(md, "\n## File backend (memory-mapped segments, page cache)\n");
        let _ = writeln!(
            md,
            "| map | keys | buffer | passes | pass 1 ns/record | pass 2 ns/record | records/s | over floor | per phase | anon MiB | file MiB |"
        );
        let _ = writeln!(md, "|---|---|---|---|---|---|---|---|---|---|---|");
        for x in files {
            let _ = writeln!(
                md,
                "| {} | {} | {} | {} | {:.0} | {:.0} | {:.2} M | {} | {} | {:.0} | {:.0} |",
                x.map,
                x.keys,
                mb(x.buffer_bytes),
                x.passes_to_clean,
                x.pass1_ns_per_record,
                x.pass2_ns_per_record,
                x.records_per_s / 1e6,
                ratio(x.best_over_floor, &x.over_floor),
                phases(&x.pass1_over_floor, &x.pass2_over_floor),
                x.peak_rss_anon_bytes as f64 / f64::from(1u32 << 20),
                x.peak_rss_file_bytes as f64 / f64::from(1u32 << 20)
            );
        }
    }
    if !report.kafka.is_empty() {
        let _ = writeln!(
            md,
            "\n## Kafka partitions (generated: magic 2 batches of 100 records; and written by a real broker; memory store)\n\n\
             Compacted until clean into Kafka's layout, each run beside its floors (what a pass must do with its own \
             parsing: batch headers and records read by their varints, compressed batches decompressed, keys in a bare \
             table, CRC-32Cs checked, a batch that keeps every record copied, one that keeps some rebuilt from its kept \
             records' bytes, with Kafka's `.index` and `.timeindex`, into memory as the pass writes here; the *floor* \
             leaves a rebuilt batch uncompressed, the *codec floor* compresses it again with its codec at Kafka's level, \
             as a pass must: the same floor for uncompressed batches). Shapes: `plain` \
             (uniform keys), `transactions` (an exactly-once changelog: transactions of three batches ended by COMMIT \
             markers, one in 50 aborted), `consumer_offsets` (committed offsets of groups over partitions, group \
             metadata, deleted offsets); every row of one of these shapes kept the same records. The `broker` shapes \
             are partitions a real Kafka 4.4 broker wrote from its Java clients (kafka-interop's `BenchPartitions`: \
             the same records a topic, 16-byte keys, 100-byte values of words, 1% tombstones; the default idempotent \
             producer and its 16 KiB batches, one topic a codec; an exactly-once changelog of 500-record \
             transactions, one in 20 aborted; `__consumer_offsets` from groups committing 20 partitions at a time), \
             each read into memory; rows of one of them and one codec kept the same records.\n"
        );
        let _ = writeln!(
            md,
            "| shape | codec | records | keys | map | buffer | passes | kept | pass 1 ns/record | pass 2 ns/record | \
             records/s | over floor | per phase | over codec floor | pass 2 over codec floor | anon MiB |"
        );
        let _ = writeln!(md, "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|");
        for x in &report.kafka {
            let _ = writeln!(
                md,
                "| {} | {} | {} | {} | {} | {} | {} | {} | {:.0} | {:.0} | {:.2} M | {} | {} | {} | {:.2}x | {:.0} |",
                x.shape,
                x.codec,
                x.records,
                x.keys,
                x.map,
                mb(x.buffer_bytes),
                x.passes_to_clean,
                x.records_kept,
                x.pass1_ns_per_record,
                x.pass2_ns_per_record,
                x.records_per_s / 1e6,
                ratio(x.best_over_floor, &x.over_floor),
                phases(&x.pass1_over_floor, &x.pass2_over_floor),
                ratio(x.best_over_codec_floor, &x.over_codec_floor),
                x.pass2_over_codec_floor.median,
                x.peak_rss_anon_bytes as f64 / f64::from(1u32 << 20)
            );
        }
    }
    render_vs_kafka(report, &mut md);
    render_backlog(report, &mut md);
    let _ = writeln!(md, "\nCharts: `report.svg`. Every cell: `report.json`.");
    md
}

/// `1.203 s (–1.310)`: the fastest run, then the slowest.
fn secs(s: &Spread) -> String {
    if (s.max - s.min).abs() < 1e-9 { format!("{:.3} s", s.min) } else { format!("{:.3} s (–{:.3})", s.min, s.max) }
}

/// The backlog's table (the full matrix, where Kafka's cleaner ran).
fn render_backlog(report: &Report, md: &mut String) {
    if report.backlog.is_empty() {
        return;
    }
    let _ = writeln!(
        md,
        "\n## The backlog\n\nA partition Kafka's cleaner fell behind on ({} MiB, {} keys drawn uniformly, 1% tombstones, \
         up to 256 MiB segments, uncompressed) cleaned until clean on fresh copies in a {} MiB buffer by Kafka \
         4.4's own cleaner and by each of ours on one thread (`auto`: Kafka's map, the external pass once it \
         fills), beside the disk's floor: the closed segments read once (mapped, a CRC-32C over every byte) and \
         the bytes Kafka's cleaner kept written once and synced. *Over floor*: seconds over the floor's. Peak RSS: \
         the JVM's `VmHWM`, and our child process's. *Records Kafka's*: the same offsets, keys and values; *files \
         Kafka's*: every closed segment's files byte for byte (a map that takes other passes than Kafka's writes \
         other files). `vs-kafka --backlog` gives the same table for `__consumer_offsets` too and on two threads.\n",
        report.backlog.first().map_or(0, |t| t.bytes >> 20),
        report.config.backlog_keys,
        report.config.backlog_buffer_bytes >> 20,
    );
    let _ = write!(md, "{}", crate::head_to_head::HEADER);
    for t in &report.backlog {
        let _ = write!(md, "{}", t.markdown());
    }
}

/// The table of Kafka 4.4's own cleaner beside ours, or the line saying why it did not run.
fn render_vs_kafka(report: &Report, md: &mut String) {
    if report.kafka.is_empty() {
        return;
    }
    let _ = writeln!(md, "\n## Kafka 4.4's own cleaner beside ours\n");
    if !report.kafka_cleaner.is_empty() {
        let _ = writeln!(md, "Kafka 4.4's own cleaner: {}.", report.kafka_cleaner);
        return;
    }
    let process = report.kafka.iter().filter_map(|k| k.vs_kafka.as_ref()).all(|v| v.rss_of_process);
    let _ = writeln!(
        md,
        "Each shape above written as files in Kafka's layout (`<topic>-0`) and cleaned until clean on fresh copies by \
         Kafka 4.4's own `Cleaner` (run offline in its JVM by kafka-interop's `OfflineClean`, timed around `doClean`) \
         and by ours (`compact --format kafka --until-clean` through the library), with the same buffer, load factor \
         ({}), topic settings (`cleanup.policy=compact`, the segment size, `delete.retention.ms` one day) and fixed \
         clock. Seconds: the fastest run, then the slowest ({} runs each at the full buffer, {} below it, where \
         Kafka's cleaner takes dozens of passes over the whole log); *Kafka / ours* is Kafka's fastest over \
         ours. Peak RSS: the JVM's `VmHWM` against {}. Bytes a key: what the buffer holds a key in (Kafka's \
         `SkimpyOffsetMap`: 24-byte slots). *Output*: bytes of the closed segments' `.log` files after, ours over \
         Kafka's; *byte for byte*: every closed segment's `.log`, `.index`, `.timeindex` and `.txnindex` the same. \
         Every row's records (offsets, keys, values, read back with Kafka's `.txnindex`) must be Kafka's (the \
         report fails otherwise) but in rows of another map than `skimpy` where either took several passes over \
         a transactional partition: passes that start elsewhere than Kafka's keep other stale committed \
         records, and those rows say whether theirs are Kafka's (see docs/kafka.md, \"Several passes\").\n",
        report.config.load_factor,
        report.config.kafka_cleaner_repeats,
        report.config.kafka_sweep_repeats.max(1),
        if process {
            "our whole process's peak (the `VmHWM` of a child doing only the compaction)"
        } else {
            "the growth of our anonymous and file-backed memory during the compaction (in the report's process)"
        }
    );
    let _ = writeln!(
        md,
        "| shape | codec | buffer | map | passes ours / Kafka | Kafka's cleaner | ours | Kafka / ours | \
         peak RSS Kafka / ours | bytes/key ours / Kafka | output ours / Kafka | byte for byte |"
    );
    let _ = writeln!(md, "|---|---|---|---|---|---|---|---|---|---|---|---|");
    for x in &report.kafka {
        let Some(v) = &x.vs_kafka else { continue };
        let _ = writeln!(
            md,
            "| {} | {} | {} ({:.0}%) | {} | {} / {} | {} | {} | {:.1}x | {:.0} / {:.0} MiB ({:.0}x) | {} / {:.1} | {:.3} | {} |",
            x.shape,
            x.codec,
            mb(x.buffer_bytes),
            x.buffer_share * 100.0,
            x.map,
            v.passes,
            v.kafka_passes,
            secs(&v.kafka_seconds),
            secs(&v.seconds),
            v.speedup,
            v.kafka_peak_rss_bytes as f64 / f64::from(1u32 << 20),
            v.peak_rss_bytes as f64 / f64::from(1u32 << 20),
            v.kafka_peak_rss_bytes as f64 / v.peak_rss_bytes.max(1) as f64,
            if x.map == "external" { "-".to_owned() } else { format!("{:.1}", v.bytes_per_key) },
            v.kafka_bytes_per_key,
            v.output_over_kafka,
            match (v.identical, v.same_records) {
                (true, _) => "yes".to_owned(),
                (false, true) => format!("no, the same records: {}", v.difference),
                // Allowed only where the report checked it is expected: another map than Kafka's, several passes
                // over a transactional partition (the report fails otherwise).
                (false, false) => format!(
                    "no: {}'s passes end elsewhere than Kafka's, so other stale committed records stay (expected; \
                     docs/kafka.md, \"Several passes\"): {}",
                    x.map, v.difference
                ),
            }
        );
    }
}
