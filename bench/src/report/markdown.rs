//! `report.md`: the tables a reader wants, with the machine named and how to read them.

use std::fmt::Write;

use cleaner::MapKind;

use super::{Cell, Report};

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

fn find<'a>(r: &'a Report, map: &str, backend: &str, keys: u64, share: f64) -> Option<&'a Cell> {
    r.results.iter().find(|c| c.map == map && c.backend == backend && c.keys == keys && c.buffer_share == share)
}

/// The Markdown text of `report`.
pub fn render(report: &Report) -> String {
    let mut md = String::new();
    let c = &report.config;
    let _ = writeln!(md, "# logcompact report{}\n", if c.quick { " (quick)" } else { "" });
    let _ = writeln!(md, "Machine: {}. Build: `{}`.\n", report.machine.describe(), report.git_revision);
    let _ = writeln!(
        md,
        "How to read: every row is one workload ({} records a key over N distinct {}-byte keys, {}-byte values, {}% \
         tombstones) cleaned until nothing is dirty by one offset map in one dedupe buffer. The buffer is the same \
         for the three maps of a row: a share of what Kafka's `skimpy` map needs to map the workload in one pass, so \
         a map that holds more keys per byte takes fewer passes. ns/record is the time of all passes over the \
         records of the log; lower is better. Times are of one run on a shared machine: compare the maps within a \
         report, not across machines. Every cell left the same log (checked by digest).\n",
        c.records_per_key,
        c.key_bytes,
        c.value_bytes,
        c.tombstone_fraction * 100.0
    );
    let largest = c.cardinalities.iter().copied().max().unwrap_or(0);
    let _ = writeln!(md, "## By map ({largest} keys, memory backend, the buffer skimpy needs for one pass)\n");
    let _ = writeln!(
        md,
        "| map | bytes/slot | bytes/key | keys held | passes | pass 1 ns/record | pass 2 ns/record | records/s | MB/s | probes/lookup |"
    );
    let _ = writeln!(md, "|---|---|---|---|---|---|---|---|---|---|");
    for map in MapKind::ALL {
        if let Some(x) = find(report, map.name(), "mem", largest, 1.0) {
            let _ = writeln!(
                md,
                "| {} | {:.0} | {:.1} | {} | {} | {:.0} | {:.0} | {:.2} M | {:.0} | {:.2} |",
                x.map,
                x.bytes_per_slot,
                x.bytes_per_key,
                x.capacity,
                x.passes_to_clean,
                x.pass1_ns_per_record,
                x.pass2_ns_per_record,
                x.records_per_s / 1e6,
                x.bytes_per_s / 1e6,
                x.probes_per_lookup
            );
        }
    }
    let _ = writeln!(md, "\n## By cardinality and buffer (memory backend): passes, ns/record\n");
    let _ = write!(md, "| keys | buffer |");
    for map in MapKind::ALL {
        let _ = write!(md, " {map} |");
    }
    let _ = writeln!(md, "\n|---|---|---|---|---|");
    for &keys in &c.cardinalities {
        for share in c.shares_for(keys) {
            let Some(any) = find(report, "skimpy", "mem", keys, share) else { continue };
            let _ = write!(md, "| {keys} | {} ({:.0}% of skimpy's one pass) |", mb(any.buffer_bytes), share * 100.0);
            for map in MapKind::ALL {
                match find(report, map.name(), "mem", keys, share) {
                    Some(x) => {
                        let _ = write!(
                            md,
                            " {} pass{}, {:.0} ns |",
                            x.passes_to_clean,
                            if x.passes_to_clean == 1 { "" } else { "es" },
                            x.pass1_ns_per_record + x.pass2_ns_per_record
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
    let _ = writeln!(md, "\n|---|---|---|---|");
    for &keys in &c.cardinalities {
        let _ = write!(md, "| {keys} |");
        for map in MapKind::ALL {
            let _ = write!(md, " {} |", mb(map.bytes_for(keys as usize, c.load_factor, c.key_bytes) as u64));
        }
        md.push('\n');
    }
    let files: Vec<&Cell> = report.results.iter().filter(|x| x.backend == "file").collect();
    if !files.is_empty() {
        let _ = writeln!(md, "\n## File backend (memory-mapped segments, page cache)\n");
        let _ = writeln!(md, "| map | keys | buffer | passes | pass 1 ns/record | pass 2 ns/record | records/s |");
        let _ = writeln!(md, "|---|---|---|---|---|---|---|");
        for x in files {
            let _ = writeln!(
                md,
                "| {} | {} | {} | {} | {:.0} | {:.0} | {:.2} M |",
                x.map,
                x.keys,
                mb(x.buffer_bytes),
                x.passes_to_clean,
                x.pass1_ns_per_record,
                x.pass2_ns_per_record,
                x.records_per_s / 1e6
            );
        }
    }
    if !report.kafka.is_empty() {
        let k = &report.kafka[0];
        let _ = writeln!(
            md,
            "\n## Kafka partitions (magic 2 batches of 100 records, {} records over {} keys, memory store)\n",
            k.records, k.keys
        );
        let _ = writeln!(
            md,
            "Compacted until clean into Kafka's layout; every row kept the same {} records.\n",
            k.records_kept
        );
        let _ = writeln!(
            md,
            "| codec | map | buffer | passes | pass 1 ns/record | pass 2 ns/record | records/s | MB/s of batches |"
        );
        let _ = writeln!(md, "|---|---|---|---|---|---|---|---|");
        for x in &report.kafka {
            let _ = writeln!(
                md,
                "| {} | {} | {} | {} | {:.0} | {:.0} | {:.2} M | {:.0} |",
                x.codec,
                x.map,
                mb(x.buffer_bytes),
                x.passes_to_clean,
                x.pass1_ns_per_record,
                x.pass2_ns_per_record,
                x.records_per_s / 1e6,
                x.bytes_per_s / 1e6
            );
        }
    }
    let _ = writeln!(md, "\nCharts: `report.svg`. Every cell: `report.json`.");
    md
}
