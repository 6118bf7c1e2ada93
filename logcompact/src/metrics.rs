//! Prometheus metrics of a running cleaner manager: Kafka's cleaner gauges under the names the Prometheus JMX
//! exporter's usual Kafka rules give them, and a few per-log series, in the Prometheus text exposition format
//! (version 0.0.4), served over HTTP at `/metrics` for `clean --watch --metrics-addr HOST:PORT`.
//!
//! The exposition is built with the `prometheus` crate (its registry and text encoder), the HTTP side with
//! `tiny_http`: nothing of the format is written by hand. Every scrape renders the latest status the manager
//! published ([`MetricsServer::publish`]), so a scrape never waits for a pass.
//!
//! | series | from |
//! |---|---|
//! | `kafka_log_logcleaner_max_buffer_utilization_percent` | `kafka.log:type=LogCleaner,name=max-buffer-utilization-percent` |
//! | `kafka_log_logcleaner_cleaner_recopy_percent` | `...,name=cleaner-recopy-percent` |
//! | `kafka_log_logcleaner_max_clean_time_secs` | `...,name=max-clean-time-secs` |
//! | `kafka_log_logcleaner_max_compaction_delay_secs` | `...,name=max-compaction-delay-secs` |
//! | `kafka_log_logcleaner_deadthreadcount` | `...,name=DeadThreadCount` |
//! | `kafka_log_logcleanermanager_uncleanable_partitions_count{logDirectory}` | `kafka.log:type=LogCleanerManager,name=uncleanable-partitions-count` |
//! | `kafka_log_logcleanermanager_uncleanable_bytes{logDirectory}` | `...,name=uncleanable-bytes` |
//! | `kafka_log_logcleanermanager_time_since_last_run_ms` | `...,name=time-since-last-run-ms` |
//! | `kafka_log_logcleanermanager_max_dirty_percent` | `...,name=max-dirty-percent` |
//! | `logcompact_log_dirty_bytes{log}`, `logcompact_log_clean_bytes{log}`, `logcompact_log_dirty_ratio{log}` | each log now |
//! | `logcompact_log_passes{log}`, `logcompact_log_last_clean_timestamp_seconds{log}`, `logcompact_log_uncleanable{log}` | each log's passes in this run, its last pass's end, 1 when uncleanable |
//!
//! # Example
//! ```
//! let status = cleaner::manager::ManagerStatus::default();
//! let text = logcompact::render_metrics(&status, "/var/lib/kafka/data").expect("render");
//! assert!(text.contains("kafka_log_logcleaner_max_buffer_utilization_percent 0"));
//! ```

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

use cleaner::manager::{LogState, ManagerStatus};
use prometheus::{Encoder, Gauge, GaugeVec, Opts, Registry, TextEncoder};

/// Why metrics could not be rendered or served.
#[derive(Debug, thiserror::Error)]
pub enum MetricsError {
    /// The address could not be listened on (in use, not local, not permitted).
    #[error("cannot serve metrics on {addr}: {reason}")]
    Listen {
        /// The address asked for.
        addr: String,
        /// What the system said.
        reason: String,
    },
    /// A series could not be registered or encoded (a bug: names and labels are fixed).
    #[error("cannot render the metrics: {reason}")]
    Render {
        /// What the encoder said.
        reason: String,
    },
}

fn render_error(e: &prometheus::Error) -> MetricsError {
    MetricsError::Render { reason: e.to_string() }
}

/// A per-log series: its name (after `logcompact_log_`), its help, and each log's value.
type PerLog<'a> = (&'static str, &'static str, Vec<(&'a str, f64)>);

/// A gauge without labels, registered in `registry`.
fn gauge(registry: &Registry, name: &str, help: &str, value: f64) -> Result<(), MetricsError> {
    let g = Gauge::with_opts(Opts::new(name, help)).map_err(|e| render_error(&e))?;
    g.set(value);
    registry.register(Box::new(g)).map_err(|e| render_error(&e))
}

/// A gauge with one label per series.
fn gauge_vec(
    registry: &Registry,
    name: &str,
    help: &str,
    label: &str,
    series: &[(&str, f64)],
) -> Result<(), MetricsError> {
    let v = GaugeVec::new(Opts::new(name, help), &[label]).map_err(|e| render_error(&e))?;
    for (value_of_label, value) in series {
        v.with_label_values(&[*value_of_label]).set(*value);
    }
    registry.register(Box::new(v)).map_err(|e| render_error(&e))
}

/// The exposition text of `status` (Prometheus text format 0.0.4). `log_directory` labels the per-directory
/// gauges, as Kafka's `logDirectory` tag does.
///
/// # Errors
/// [`MetricsError::Render`] only on a bug (a series registered twice).
pub fn render(status: &ManagerStatus, log_directory: &str) -> Result<String, MetricsError> {
    let registry = Registry::new();
    let g = &status.gauges;
    let cleaner = "kafka_log_logcleaner_";
    let manager = "kafka_log_logcleanermanager_";
    for (name, help, value) in [
        (
            "max_buffer_utilization_percent",
            "The largest share of an offset map's slots filled by a thread's last pass, in percent",
            g.max_buffer_utilization_percent,
        ),
        (
            "cleaner_recopy_percent",
            "Bytes written over bytes read by the threads' last passes, in percent",
            g.cleaner_recopy_percent,
        ),
        ("max_clean_time_secs", "The longest of the threads' last passes, in seconds", g.max_clean_time_secs),
        (
            "max_compaction_delay_secs",
            "How far past max.compaction.lag.ms the logs of the threads' last passes were, at most, in seconds",
            g.max_compaction_delay_secs,
        ),
        ("deadthreadcount", "Cleaner threads that died", g.dead_thread_count as f64),
    ] {
        gauge(&registry, &format!("{cleaner}{name}"), help, value)?;
    }
    gauge_vec(
        &registry,
        &format!("{manager}uncleanable_partitions_count"),
        "Logs marked uncleanable after a failed pass",
        "logDirectory",
        &[(log_directory, g.uncleanable_partitions_count as f64)],
    )?;
    gauge_vec(
        &registry,
        &format!("{manager}uncleanable_bytes"),
        "Dirty bytes of the logs marked uncleanable",
        "logDirectory",
        &[(log_directory, g.uncleanable_bytes as f64)],
    )?;
    gauge(
        &registry,
        &format!("{manager}time_since_last_run_ms"),
        "Milliseconds since a cleaner thread last looked for a log to clean",
        g.time_since_last_run_ms as f64,
    )?;
    gauge(
        &registry,
        &format!("{manager}max_dirty_percent"),
        "The highest dirty ratio among the cleanable logs at that look, in percent",
        g.max_dirty_percent,
    )?;
    let per_log = |f: &dyn Fn(&cleaner::manager::LogStatus) -> f64| -> Vec<(&str, f64)> {
        status.logs.iter().map(|l| (l.name.as_str(), f(l))).collect()
    };
    let series: [PerLog<'_>; 6] = [
        ("dirty_bytes", "Bytes a pass could take now", per_log(&|l| l.dirty_bytes as f64)),
        ("clean_bytes", "Bytes already through a pass", per_log(&|l| l.clean_bytes as f64)),
        ("dirty_ratio", "Dirty bytes over clean plus dirty bytes", per_log(&|l| l.dirty_ratio)),
        ("passes", "Passes this run made over the log", per_log(&|l| l.passes as f64)),
        (
            "last_clean_timestamp_seconds",
            "When the log's last pass ended, in seconds since the Unix epoch (0: none yet)",
            per_log(&|l| l.last_clean_ms.map_or(0.0, |ms| ms as f64 / 1000.0)),
        ),
        (
            "uncleanable",
            "1 when the log's last pass failed and it waits for a retry",
            per_log(&|l| f64::from(u8::from(l.state == LogState::Uncleanable))),
        ),
    ];
    for (name, help, values) in &series {
        gauge_vec(&registry, &format!("logcompact_log_{name}"), help, "log", values)?;
    }
    let mut out = Vec::new();
    TextEncoder::new().encode(&registry.gather(), &mut out).map_err(|e| render_error(&e))?;
    String::from_utf8(out).map_err(|e| MetricsError::Render { reason: e.to_string() })
}

/// An HTTP server answering `GET /metrics` with [`render`] of the latest published status, on a thread of its
/// own; stopped when dropped.
pub struct MetricsServer {
    server: Arc<tiny_http::Server>,
    latest: Arc<Mutex<ManagerStatus>>,
    addr: SocketAddr,
    thread: Option<JoinHandle<()>>,
}

impl std::fmt::Debug for MetricsServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MetricsServer").field("addr", &self.addr).finish_non_exhaustive()
    }
}

impl MetricsServer {
    /// Listens on `addr` (`HOST:PORT`; port 0 takes a free one, see [`MetricsServer::addr`]) and serves the
    /// metrics of `log_directory`'s cleaner, empty until the first [`MetricsServer::publish`].
    ///
    /// # Errors
    /// [`MetricsError::Listen`] when the address cannot be listened on.
    pub fn start(addr: &str, log_directory: &str) -> Result<MetricsServer, MetricsError> {
        let listen = |reason: String| MetricsError::Listen { addr: addr.to_owned(), reason };
        let server = tiny_http::Server::http(addr).map_err(|e| listen(e.to_string()))?;
        let bound = server.server_addr().to_ip().ok_or_else(|| listen("not an IP address".into()))?;
        let server = Arc::new(server);
        let latest = Arc::new(Mutex::new(ManagerStatus::default()));
        let thread = {
            let (server, latest, dir) = (Arc::clone(&server), Arc::clone(&latest), log_directory.to_owned());
            std::thread::Builder::new()
                .name("metrics".into())
                .spawn(move || serve(&server, &latest, &dir))
                .map_err(|e| listen(format!("cannot start its thread: {e}")))?
        };
        Ok(MetricsServer { server, latest, addr: bound, thread: Some(thread) })
    }

    /// The address it listens on.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Makes `status` what the next scrapes see.
    pub fn publish(&self, status: &ManagerStatus) {
        *self.latest.lock().unwrap_or_else(std::sync::PoisonError::into_inner) = status.clone();
    }
}

impl Drop for MetricsServer {
    fn drop(&mut self) {
        self.server.unblock();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// Answers requests until the server is unblocked.
fn serve(server: &tiny_http::Server, latest: &Mutex<ManagerStatus>, log_directory: &str) {
    let text_plain = "text/plain; version=0.0.4; charset=utf-8";
    while let Ok(request) = server.recv() {
        let path = request.url().split('?').next().unwrap_or_default().to_owned();
        let response = match (request.method(), path.as_str()) {
            (tiny_http::Method::Get, "/metrics") => {
                let status = latest.lock().unwrap_or_else(std::sync::PoisonError::into_inner).clone();
                match render(&status, log_directory) {
                    Ok(text) => (200, text),
                    Err(e) => (500, format!("{e}\n")),
                }
            }
            (tiny_http::Method::Get, "/") => (200, "logcompact cleaner metrics: GET /metrics\n".to_owned()),
            (tiny_http::Method::Get, _) => (404, "not found: the metrics are at /metrics\n".to_owned()),
            _ => (405, "only GET is served\n".to_owned()),
        };
        let (code, body) = response;
        let mut reply = tiny_http::Response::from_string(body).with_status_code(code);
        if let Ok(h) = tiny_http::Header::from_bytes(&b"Content-Type"[..], text_plain.as_bytes()) {
            reply = reply.with_header(h);
        }
        // A scraper that hung up is no concern of the cleaner's.
        let _ = request.respond(reply);
    }
}
