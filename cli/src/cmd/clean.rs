//! `logcompact clean --data-dir DIR`: the cleaner manager over every log of a data directory, as a broker runs
//! its cleaner threads ([`logcompact::datadir::clean`]); this module prints its events and wires the signals.

use std::io::Write;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use clap::Args;
use cleaner::manager::{Event, LogState, ManagerStatus};
use logcompact::datadir::{self, CleanRequest, Hooks, status_file};

use crate::args::{
    BrokerArgs, BufferArgs, ClockArgs, FormatArg, LogSettingsArgs, MapArgs, ThreadsArgs, tell_broker_notice,
};
use crate::failure::Failure;
use crate::out::QuietPipe;
use crate::progress::{Pause, Reporter};

/// `clean`'s arguments.
#[derive(Debug, Args)]
#[command(group(clap::ArgGroup::new("mode").required(true).args(["until_clean", "watch"])))]
pub struct CleanArgs {
    /// The data directory
    ///
    /// Every subdirectory is a log's directory (with --format kafka: a stopped broker's log directory, every
    /// `<topic>-<partition>` subdirectory a partition).
    #[arg(long, value_name = "DIR")]
    data_dir: PathBuf,
    /// The logs' format.
    ///
    /// A Kafka log directory is held under the broker's lock for the run; the partitions of the topics the
    /// broker compacts are compacted, each with its settings as the broker resolves them from its KRaft
    /// metadata log (--config and flags go over them).
    #[arg(long, value_enum, default_value_t = FormatArg::Native)]
    format: FormatArg,
    /// Run until no log is cleanable, then exit.
    #[arg(long)]
    until_clean: bool,
    /// Keep cleaning as logs get dirty, until SIGINT or SIGTERM.
    #[arg(long)]
    watch: bool,
    /// Each pass's summary in full (seven lines, as Kafka's cleaner logs it) instead of one line a pass.
    #[arg(long)]
    verbose: bool,
    #[command(flatten)]
    threads: ThreadsArgs,
    #[command(flatten)]
    map: MapArgs,
    #[command(flatten)]
    buffer: BufferArgs,
    /// log.cleaner.backoff.ms, with --watch (default 15000).
    ///
    /// log.cleaner.backoff.ms: how long a watching thread with nothing to clean sleeps (--watch only: an
    /// --until-clean run ends when nothing is cleanable). Default: 15000.
    #[arg(long, hide_short_help = true, value_name = "MS", conflicts_with = "until_clean", allow_hyphen_values = true)]
    backoff_ms: Option<u64>,
    /// log.cleaner.io.max.bytes.per.second: the bytes all threads together read per second.
    ///
    /// Default: no limit.
    #[arg(long, hide_short_help = true, value_name = "BYTES", value_parser = logcompact::parse_bytes, allow_hyphen_values = true)]
    io_max_bytes_per_second: Option<u64>,
    /// Retries of a log whose pass failed before it waits for SIGHUP or a new run (--until-clean waits for them;
    /// 0 ends it at the first failure).
    #[arg(long, hide_short_help = true, value_name = "N", default_value_t = 3, allow_hyphen_values = true)]
    max_retries: u32,
    /// The wait before the first retry of a failed log; it doubles with every failure.
    #[arg(long, hide_short_help = true, value_name = "MS", default_value_t = 10_000, allow_hyphen_values = true)]
    retry_backoff_ms: u64,
    /// Which log a free thread takes: dirtiest-first (Kafka's) or oldest-dirty-first (no log starves).
    #[arg(long, hide_short_help = true, value_name = "POLICY", default_value = "dirtiest-first")]
    policy: String,
    /// --until-clean only: with the clock fixed no retry comes due, so a log whose pass fails is left
    /// uncleanable at once.
    #[command(flatten)]
    clock: ClockArgs,
    #[command(flatten)]
    settings: LogSettingsArgs,
    /// A settings file, over the broker's settings.
    ///
    /// Per-log settings: `name = value` lines for every log, then `[log]` sections (a topic's name in a Kafka
    /// log directory), with Kafka's setting names. Saved in the data directory for later runs, until replaced.
    #[arg(long, value_name = "FILE")]
    config: Option<PathBuf>,
    #[command(flatten)]
    broker: BrokerArgs,
    /// With --format kafka: the other replicas' audit files (`logcompact audit`). A tombstone or transaction
    /// marker then goes only once its delete horizon passed and every other replica's cleaner has cleaned past
    /// it; a replica without a file keeps every one. Without it, removal is timed by the horizon alone, as
    /// Kafka's cleaner does.
    #[arg(long, value_name = "FILE", num_args = 1..)]
    replica_audits: Vec<PathBuf>,
    /// Print each event as one JSON line, and the final status as JSON.
    #[arg(long)]
    json: bool,
    /// Serve Prometheus metrics at http://HOST:PORT/metrics while the run lasts
    ///
    /// Kafka's cleaner gauges under the JMX exporter's names (kafka_log_logcleaner_*, kafka_log_logcleanermanager_*)
    /// and per-log series (logcompact_log_*). Port 0 takes a free port; the address is printed on standard error.
    #[arg(long, value_name = "HOST:PORT")]
    metrics_addr: Option<String>,
}

/// Runs `clean`: the settings resolved in their layers, then the manager over the data directory.
///
/// # Errors
/// As [`clean`].
pub fn run(a: &CleanArgs) -> Result<(), Failure> {
    crate::mistakes::data_dir(&a.data_dir, a.format.into(), "clean", "compact")?;
    a.map.checked()?;
    let manager = cleaner::manager::ManagerConfig {
        threads: a.threads.count(),
        dedupe_buffer_bytes: a.buffer.bytes()?,
        load_factor: a.buffer.load_factor,
        map: a.map.map.into(),
        backoff_ms: a.backoff_ms.unwrap_or(cleaner::manager::DEFAULT_BACKOFF_MS),
        io_max_bytes_per_second: a.io_max_bytes_per_second.map_or(f64::INFINITY, |b| b as f64),
        max_retries: a.max_retries,
        retry_backoff_ms: a.retry_backoff_ms,
        spill_dir: a.map.spill_dir.clone(),
        one_pass: a.map.one_pass(),
    };
    if a.watch && a.clock.now_ms.is_some() {
        return Err(Failure::Usage("--now-ms fixes the clock, so it goes with --until-clean, not --watch".into()));
    }
    // The same checks of a clock given by hand as compact's.
    a.clock.clock()?;
    let format = a.format.into();
    let layers = logcompact::datadir::layers(
        &a.data_dir,
        format,
        a.config.as_deref(),
        &a.settings.flags(),
        &a.broker.source(format)?,
    )
    .map_err(|e| Failure::from_data_dir(&e))?;
    tell_broker_notice(&layers);
    let request = CleanRequest {
        data_dir: a.data_dir.clone(),
        format,
        manager,
        policy: a.policy.clone(),
        layers,
        mode: if a.watch { cleaner::manager::Mode::Watch } else { cleaner::manager::Mode::UntilClean },
        now_ms: a.clock.now_ms,
        clock_trust: a.clock.trust(),
        replica_floors: replica_floors(a, format)?,
    };
    clean(&request, a.json, a.verbose, a.metrics_addr.as_deref())
}

/// The other replicas' audits `--replica-audits` names, read once; `None` without the option.
fn replica_floors(
    a: &CleanArgs,
    format: log_core::Format,
) -> Result<Option<std::collections::BTreeMap<String, u64>>, Failure> {
    if a.replica_audits.is_empty() {
        return Ok(None);
    }
    if format != log_core::Format::Kafka {
        return Err(Failure::Usage("--replica-audits is for a broker's log directory (--format kafka)".into()));
    }
    let own = logcompact::kafka::kraft::meta_property(&a.data_dir, "node.id").and_then(|n| n.trim().parse().ok());
    logcompact::audit::ReplicaFloors::read(&a.replica_audits, own)
        .map(|f| Some(f.all()))
        .map_err(|e| Failure::Usage(e.to_string()))
}

/// Runs the manager over the data directory until it is clean, or until a signal when watching.
///
/// SIGINT and SIGTERM stop it: running passes are abandoned (their logs unchanged) and the status written; a
/// second signal ends the process at once. SIGHUP makes every uncleanable log due for a retry.
///
/// # Errors
/// [`Failure::Usage`] for bad settings or a data directory without logs; [`Failure::Runtime`] when the
/// directory is held by another process, or an until-clean run is interrupted; [`Failure::Corruption`] when
/// a log is left uncleanable (after the others were cleaned).
fn clean(req: &CleanRequest, json: bool, verbose: bool, metrics_addr: Option<&str>) -> Result<(), Failure> {
    // Listening comes first: an address in use is refused before anything is cleaned.
    let metrics = match metrics_addr {
        None => None,
        Some(addr) => {
            let server = logcompact::MetricsServer::start(addr, &req.data_dir.display().to_string())
                .map_err(|e| Failure::Runtime(e.to_string()))?;
            crate::out::diag!("serving Prometheus metrics at http://{}/metrics", server.addr());
            Some(Arc::new(server))
        }
    };
    // Progress while an until-clean run lasts (a watch has no end to count towards): the bytes and records all
    // threads read, and the passes, every dirty log counting one to begin with and a partial pass one more.
    let meter = Arc::new(logcompact::progress::Meter::running_total());
    let passes = Arc::new(Passes {
        meter: Arc::clone(&meter),
        expected: AtomicU64::new(0),
        totals: std::sync::Mutex::new(Totals::default()),
    });
    let reporter = match req.mode {
        cleaner::manager::Mode::UntilClean => Some(Reporter::start("clean", Arc::clone(&meter))),
        cleaner::manager::Mode::Watch => None,
    };
    let bar = reporter.as_ref().map(Reporter::pause);
    let hooks = Hooks {
        on_start: {
            let passes = Arc::clone(&passes);
            Arc::new(move |status: &ManagerStatus| {
                let cleanable = status.logs.iter().filter(|l| l.state == LogState::Idle && l.dirty_bytes > 0).count();
                passes.expect(cleanable as u64);
            })
        },
        on_event: listen(json, verbose, bar.clone(), &passes),
        on_notice: {
            let bar = bar.clone();
            Arc::new(move |line: &str| suspended(bar.as_ref(), || crate::out::diag!("{line}")))
        },
        on_status: {
            let metrics = metrics.clone();
            Arc::new(move |status: &ManagerStatus| {
                if let Some(m) = &metrics {
                    m.publish(status);
                }
            })
        },
        stop: Arc::new(AtomicBool::new(false)),
        retry: Arc::new(AtomicBool::new(false)),
        meter: Some(meter),
    };
    register_signals(&hooks.stop, &hooks.retry)?;
    let finished = datadir::clean(req, &hooks).map_err(|e| Failure::from_data_dir(&e));
    drop(reporter);
    let finished = finished?;
    for (name, why) in &finished.left_alone {
        crate::out::diag!("left alone: {name}: {why}");
    }
    report(&finished.status, json)?;
    let uncleanable = finished.uncleanable_with_errors();
    if !uncleanable.is_empty() {
        // Exit 1 only for damage; a log that was busy, or whose disk filled, is exit 3 (try again later).
        let failure = if finished.uncleanable_by_corruption() { Failure::Corruption } else { Failure::Runtime };
        return Err(failure(format!(
            "{} log(s) left uncleanable: {} (the others were cleaned; `logcompact status --data-dir {}{}` shows why)",
            uncleanable.len(),
            uncleanable.iter().map(|(name, why)| format!("{name}: {why}")).collect::<Vec<_>>().join("; "),
            req.data_dir.display(),
            if req.format == logcompact::Format::Kafka { " --format kafka" } else { "" }
        )));
    }
    if !finished.skipped.is_empty() {
        let (what, whose) = match req.format {
            logcompact::Format::Kafka => ("partition(s)", "their topic's settings"),
            logcompact::Format::Native => ("log(s)", "their settings"),
        };
        // A settings error names its log first already.
        let named = |(name, why): &(String, String)| {
            if why.starts_with(&format!("{name}: ")) { why.clone() } else { format!("{name}: {why}") }
        };
        return Err(Failure::Usage(format!(
            "{} {what} skipped, {whose} not fitting (any others were cleaned): {}",
            finished.skipped.len(),
            finished.skipped.iter().map(named).collect::<Vec<_>>().join("; ")
        )));
    }
    if finished.interrupted && req.mode == cleaner::manager::Mode::UntilClean {
        return Err(Failure::Runtime("interrupted: running passes were abandoned, their logs unchanged".into()));
    }
    if !json && req.mode == cleaner::manager::Mode::UntilClean {
        // The run's last word: what it did in all, and the verdict.
        let totals = passes.totals.lock().map(|t| t.line()).unwrap_or_default();
        let verdict = match req.format {
            logcompact::Format::Kafka => "every compacted partition is clean; the broker can be started",
            logcompact::Format::Native => "every compacted log is clean",
        };
        crate::out::print_line(&format!("{totals}\n{verdict}"))?;
    }
    Ok(())
}

/// The passes of an until-clean run, as its progress counts them, and what they did in all.
struct Passes {
    meter: Arc<logcompact::progress::Meter>,
    /// Passes expected in all: never fewer than those done.
    expected: AtomicU64,
    /// The run's totals, for its last line.
    totals: std::sync::Mutex<Totals>,
}

/// What the run's passes did in all.
#[derive(Debug, Default)]
struct Totals {
    passes: u64,
    logs: std::collections::BTreeSet<String>,
    bytes_before: u64,
    bytes_after: u64,
    records_before: u64,
    records_after: u64,
    seconds: f64,
}

impl Totals {
    /// `clean: 12 passes over 9 logs: 1.2 GiB (8000000 records) to 310.4 MiB (2000000 records), 74.1% smaller,
    /// in 41.2 s`, or that no pass ran.
    fn line(&self) -> String {
        use log_core::human::{bytes, count};
        if self.passes == 0 {
            return "clean: no pass ran: every compacted log was already clean".to_owned();
        }
        let smaller = if self.bytes_before == 0 {
            0.0
        } else {
            100.0 * (1.0 - self.bytes_after as f64 / self.bytes_before as f64)
        };
        format!(
            "clean: {} over {}: {} ({}) to {} ({}), {smaller:.1}% smaller, in {}",
            count(self.passes, "pass", "passes"),
            count(self.logs.len() as u64, "log", "logs"),
            bytes(self.bytes_before),
            count(self.records_before, "record", "records"),
            bytes(self.bytes_after),
            count(self.records_after, "record", "records"),
            log_core::human::duration(self.seconds)
        )
    }
}

impl Passes {
    /// Expects `more` passes more.
    fn expect(&self, more: u64) {
        let expected = self.expected.fetch_add(more, Ordering::Relaxed) + more;
        self.meter.set_items("passes", Some(expected.max(self.meter.read().items)));
    }

    /// A pass over `log` done; one more is to come when it left its log dirty.
    fn done(&self, log: &str, stats: &cleaner::CleanStats) {
        self.meter.item_done();
        self.expect(u64::from(stats.map_full));
        if let Ok(mut t) = self.totals.lock() {
            t.passes += 1;
            t.logs.insert(log.to_owned());
            t.bytes_before += stats.pass2.bytes_read;
            t.bytes_after += stats.pass2.bytes_kept;
            t.records_before += stats.pass2.records_read;
            t.records_after += stats.pass2.records_kept;
            t.seconds += stats.total_seconds;
        }
    }
}

/// Runs `f` with the progress line, if any, out of its way.
fn suspended<R>(bar: Option<&Pause>, f: impl FnOnce() -> R) -> R {
    match bar {
        Some(r) => r.suspend(f),
        None => f(),
    }
}

/// Prints every event: the human summary of each pass (Kafka's cleaner log lines), or one JSON line.
fn listen(json: bool, verbose: bool, bar: Option<Pause>, passes: &Arc<Passes>) -> Arc<dyn Fn(&Event) + Send + Sync> {
    let passes = Arc::clone(passes);
    Arc::new(move |event: &Event| {
        if let Event::Cleaned { log, stats, .. } = event {
            passes.done(log, stats);
        }
        let text = if json { json_event(event) } else { human_event(event, verbose) };
        suspended(bar.as_ref(), || {
            let mut out = QuietPipe::new(std::io::stdout().lock());
            let _ = writeln!(out, "{text}").and_then(|()| out.flush());
        });
    })
}

fn json_event(event: &Event) -> String {
    let value = match event {
        Event::Cleaned { thread, log, stats, passes } => {
            serde_json::json!({"event": "cleaned", "thread": thread, "log": log, "passes": passes, "stats": stats})
        }
        Event::Failed { thread, log, error, failures, retry_at_ms } => serde_json::json!({
            "event": "failed", "thread": thread, "log": log, "error": error.to_string(),
            "corruption": error.is_corruption(),
            "failures": failures, "retry_at_ms": retry_at_ms,
        }),
        Event::Rolled { log } => serde_json::json!({"event": "rolled", "log": log}),
    };
    value.to_string()
}

fn human_event(event: &Event, verbose: bool) -> String {
    match event {
        Event::Cleaned { thread, log, stats, passes } if verbose => {
            cleaner::summary::summary(Some(*thread), log, stats, *passes)
        }
        Event::Cleaned { thread, log, stats, passes } => cleaner::summary::one_line(Some(*thread), log, stats, *passes),
        Event::Failed { thread, log, error, failures, retry_at_ms, .. } => {
            let next = retry_at_ms.map_or_else(
                || "no retry left: SIGHUP or a new run retries it".to_owned(),
                |at| format!("retried after {}", status_file::utc(at)),
            );
            format!("cleaner {thread}: log {log} is uncleanable (failure {failures}, {next}): {error}")
        }
        Event::Rolled { log } => {
            format!("rolled the active segment of {log}: its first record is older than max.compaction.lag.ms")
        }
    }
}

/// The final word: the gauges and a line per log, or the status as JSON.
fn report(status: &ManagerStatus, json: bool) -> Result<(), Failure> {
    let mut out = QuietPipe::new(std::io::stdout().lock());
    let failed = |e: std::io::Error| Failure::Runtime(format!("cannot write output: {e}"));
    if json {
        let text = serde_json::to_string(&serde_json::json!({"event": "finished", "status": status}))
            .map_err(|e| Failure::Runtime(e.to_string()))?;
        return writeln!(out, "{text}").map_err(failed);
    }
    writeln!(out, "{}", crate::cmd::status::table(status, None)).map_err(failed)
}

fn register_signals(interrupted: &Arc<AtomicBool>, retry: &Arc<AtomicBool>) -> Result<(), Failure> {
    use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};
    let failed = |e: std::io::Error| Failure::Runtime(format!("cannot install signal handlers: {e}"));
    for sig in [SIGINT, SIGTERM] {
        // A second signal, once the first has set the flag, ends the process at once.
        signal_hook::flag::register_conditional_shutdown(sig, 130, Arc::clone(interrupted)).map_err(failed)?;
        signal_hook::flag::register(sig, Arc::clone(interrupted)).map_err(failed)?;
    }
    signal_hook::flag::register(SIGHUP, Arc::clone(retry)).map_err(failed)?;
    Ok(())
}
