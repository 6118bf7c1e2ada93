//! `logcompact audit`: what each replica of a broker's partitions holds, as the state a `read_committed`
//! consumer rebuilds from it, written to a file (`--data-dir`, read-only, beside a running broker); and the
//! files of every broker compared (`--compare`), naming the partitions whose replicas disagree.

use std::fmt::Write as _;
use std::path::PathBuf;

use clap::Args;
use logcompact::audit::compare::{CompareReport, PartitionReport, View};
use logcompact::audit::{AuditRequest, audit_broker, compare};

use crate::failure::Failure;
use crate::out::{diag_line, print_json, print_line};

/// `audit`'s arguments.
#[derive(Debug, Args)]
#[command(group(clap::ArgGroup::new("what").required(true).args(["data_dir", "compare"])))]
pub struct AuditArgs {
    /// A log directory of the broker (repeat for each of its log.dirs). Read only: no lock, nothing written,
    /// so it runs beside the running broker.
    #[arg(long, value_name = "DIR", requires = "out")]
    data_dir: Vec<PathBuf>,
    /// The audit file to write (outside every log directory).
    #[arg(long, value_name = "FILE")]
    out: Option<PathBuf>,
    /// Compare the audit files of the brokers (one a broker, at least two). Exits 1 when replicas disagree.
    #[arg(long, value_name = "FILE", num_args = 2.., conflicts_with_all = ["data_dir", "out", "memory_keys", "tmp_dir", "summary", "partition"])]
    compare: Vec<PathBuf>,
    /// Slots of a partition's table of keys in memory (24 bytes each, rounded down to a power of two); once
    /// three quarters hold keys, they go to --tmp-dir as a sorted run.
    #[arg(long, value_name = "N", default_value_t = 4 << 20)]
    memory_keys: usize,
    /// Where sorted runs of a partition too large for --memory-keys go (never a log directory).
    #[arg(long, value_name = "DIR")]
    tmp_dir: Option<PathBuf>,
    /// Write each partition's key-range hashes (4,096 ranges at most, a few bytes a range) instead of its
    /// keys: a small file. --compare then names the partitions whose ranges differ, to audit in full with
    /// --partition; the others agree.
    #[arg(long, requires = "data_dir")]
    summary: bool,
    /// Audit only this partition (`<topic>-<partition>`; repeat for more).
    #[arg(long, value_name = "NAME", requires = "data_dir")]
    partition: Vec<String>,
    /// Print JSON.
    #[arg(long)]
    json: bool,
}

/// Runs `audit`.
///
/// # Errors
/// [`Failure`]: usage, unreadable files; exit 1 when compared replicas disagree.
pub fn run(a: &AuditArgs) -> Result<(), Failure> {
    if !a.compare.is_empty() {
        return run_compare(a);
    }
    let Some(out) = &a.out else { return Err(Failure::Usage("audit --data-dir needs --out FILE".into())) };
    let mut req = AuditRequest::new(a.data_dir.clone(), out.clone());
    req.memory_entries = a.memory_keys;
    req.summary = a.summary;
    req.partitions = a.partition.clone();
    if let Some(t) = &a.tmp_dir {
        req.tmp_dir = t.clone();
    }
    let started = std::time::Instant::now();
    let summary = audit_broker(&req, &mut |_| {}).map_err(|e| match e {
        logcompact::audit::AuditError::OutInLogDir { .. } | logcompact::audit::AuditError::NoSuchPartition { .. } => {
            Failure::Usage(e.to_string())
        }
        e => Failure::Runtime(e.to_string()),
    })?;
    let secs = started.elapsed().as_secs_f64();
    if a.json {
        return print_json(&serde_json::json!({
            "file": out, "partitions": summary.partitions, "keys": summary.keys, "records": summary.records,
            "file_bytes": summary.file_bytes, "seconds": secs,
            "unreadable": summary.unreadable.iter().map(|(n, w)| serde_json::json!({"partition": n, "why": w})).collect::<Vec<_>>(),
        }));
    }
    for (name, why) in &summary.unreadable {
        diag_line(format_args!("{name}: not read: {why}"));
    }
    print_line(&format!(
        "audit: {} partitions, {} records, {} keys in {:.1} s; wrote {} ({} bytes). Compare it with the other \
         brokers' files: logcompact audit --compare FILE FILE...",
        summary.partitions,
        summary.records,
        summary.keys,
        secs,
        out.display(),
        summary.file_bytes
    ))
}

fn run_compare(a: &AuditArgs) -> Result<(), Failure> {
    let report = compare::compare(&a.compare).map_err(|e| match e {
        compare::CompareError::File(_) => Failure::Runtime(e.to_string()),
        e => Failure::Usage(e.to_string()),
    })?;
    if a.json {
        print_json(&report)?;
    } else {
        print_line(&human(&report))?;
    }
    let disagreeing = report.partitions.iter().filter(|p| p.needs_attention()).count();
    if disagreeing > 0 {
        return Err(Failure::Corruption(format!(
            "audit: the replicas of {disagreeing} partition(s) disagree or could not be compared (see above)"
        )));
    }
    Ok(())
}

fn view(v: &View) -> String {
    match v {
        View::Live { offset, value_hash, transactional } => format!(
            "offset {offset} (value {value_hash:016x}{})",
            if *transactional { ", in a transaction" } else { "" }
        ),
        View::Deleted { offset } => format!("deleted at offset {offset}"),
        View::Absent => "no record".into(),
    }
}

fn partition(out: &mut String, p: &PartitionReport) {
    let replicas: Vec<String> = p.replicas.iter().map(|r| r.node_id.to_string()).collect();
    let leader = p.leader.map_or_else(|| "unknown".into(), |l| l.to_string());
    if let Some(why) = &p.not_compared {
        let _ = writeln!(out, "{}: not compared: {why}", p.name);
        return;
    }
    if let Some(r) = &p.ranges {
        if r.ranges_differing == 0 && p.stuck_transactions.is_empty() {
            let _ = writeln!(
                out,
                "{}: agree: every one of {} key ranges on brokers {} (leader {leader}) (summaries: range hashes)",
                p.name,
                r.ranges,
                replicas.join(", ")
            );
        } else {
            let _ = writeln!(
                out,
                "{}: AUDIT IN FULL: {} of {} key ranges differ between brokers {} (summaries cannot tell a                  disagreement from keys written too recently): on each broker `logcompact audit --data-dir DIR                  --partition {} --out FILE`, then --compare those files",
                p.name,
                r.ranges_differing,
                r.ranges,
                replicas.join(", "),
                p.name
            );
        }
        stuck(out, p);
        missing(out, p);
        return;
    }
    if !p.disagrees() {
        let _ = writeln!(
            out,
            "{}: agree: {} keys compared below offset {} on brokers {} (leader {leader}); {} too recent to compare, \
             {} below a log start",
            p.name,
            p.keys_compared,
            p.compared_below,
            replicas.join(", "),
            p.keys_recent,
            p.keys_below_log_start
        );
    } else {
        let odd = p.odd_replicas();
        let odd_names: Vec<String> = odd.iter().map(|n| format!("broker {n}")).collect();
        let _ = writeln!(
            out,
            "{}: DISAGREE: {} differs from the leader ({leader}) and the majority on {} of {} keys compared below \
             offset {}",
            p.name,
            odd_names.join(" and "),
            p.keys_disagreeing,
            p.keys_compared,
            p.compared_below
        );
        for (outcome, n) in &p.outcomes {
            let _ = writeln!(out, "  {n} keys: {}", outcome.describe());
        }
        stuck(out, p);
        for d in p.disagreements.iter().take(10) {
            let views: Vec<String> = d.views.iter().map(|(n, v)| format!("broker {n} {}", view(v))).collect();
            let _ = writeln!(out, "  key {:016x}: {}", d.key_hash, views.join("; "));
        }
        if p.keys_disagreeing > 10 {
            let _ = writeln!(out, "  ... {} more keys (--json lists up to 1000)", p.keys_disagreeing - 10);
        }
        for n in &odd {
            let dir = p
                .replicas
                .iter()
                .find(|r| r.node_id == *n)
                .and_then(|r| r.header.dir.parent().map(|d| d.display().to_string()))
                .unwrap_or_else(|| "<its log dir>".into());
            let _ = writeln!(
                out,
                "  fix: stop broker {n}, then `logcompact refetch --data-dir {dir} --partition {} --to <a directory \
                 outside its log directories>`, then start it: it fetches the partition again from the leader",
                p.name
            );
        }
    }
    missing(out, p);
}

/// The transactions one replica holds open that the others closed.
fn stuck(out: &mut String, p: &PartitionReport) {
    for (node, pid, first) in &p.stuck_transactions {
        let _ = writeln!(
            out,
            "  broker {node} holds a transaction of producer {pid} open from offset {first} that the others \
             closed: read_committed consumers of it stop there for good"
        );
    }
}

/// The replicas the metadata names with no file.
fn missing(out: &mut String, p: &PartitionReport) {
    if !p.missing.is_empty() {
        let _ = writeln!(
            out,
            "  no audit file of broker(s) {} (the metadata names them as replicas)",
            p.missing.iter().map(i32::to_string).collect::<Vec<_>>().join(", ")
        );
    }
}

fn human(report: &CompareReport) -> String {
    let mut out = String::new();
    for w in &report.warnings {
        let _ = writeln!(out, "warning: {w}");
    }
    for p in &report.partitions {
        partition(&mut out, p);
    }
    let disagreeing = report.partitions.iter().filter(|p| p.needs_attention()).count();
    let _ = write!(
        out,
        "{} partitions of brokers {}: {}",
        report.partitions.len(),
        report.brokers.keys().map(i32::to_string).collect::<Vec<_>>().join(", "),
        if disagreeing == 0 { "every replica agrees".to_owned() } else { format!("{disagreeing} disagree") }
    );
    out
}
