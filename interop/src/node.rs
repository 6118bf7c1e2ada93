//! One KRaft node (broker and controller in one JVM) on free loopback ports, in a directory of its own:
//! `server.properties`, the log directories `data-0`, `data-1`, ... (the metadata log in `data-0`, as on a
//! broker whose `metadata.log.dir` is unset), and `logs/` with `server.log` and `log-cleaner.log`.

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::{Error, Kafka, Result, path_str, succeeded};

/// How a node is made.
#[derive(Debug, Clone)]
pub struct NodeSpec {
    /// Log directories (at least one).
    pub log_dirs: usize,
    /// `transaction.version` to format with (`None`: 4.4's default, 2).
    pub transaction_version: Option<u8>,
    /// More `server.properties` lines (`name=value`).
    pub extra: Vec<String>,
}

impl Default for NodeSpec {
    fn default() -> Self {
        NodeSpec { log_dirs: 2, transaction_version: None, extra: Vec::new() }
    }
}

/// One partition's line of the broker's `Completed load of UnifiedLog(...)`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PartitionLoad {
    /// Segments loaded.
    pub segments: u64,
    /// Its local log start offset.
    pub log_start: i64,
    /// Its log end offset.
    pub log_end: i64,
}

/// What a broker's `server.log` says about the logs it loaded since its last start.
#[derive(Debug, Clone, Default)]
pub struct LoadFindings {
    /// Lines that mean the broker judged a file bad (an index rebuilt, a segment truncated, a checkpoint
    /// unreadable, a stray directory).
    pub failures: Vec<String>,
    /// Every WARN or ERROR line but those every start of such a node prints.
    pub unexpected: Vec<String>,
    /// Each partition's load, by `<topic>-<partition>`.
    pub loads: BTreeMap<String, PartitionLoad>,
}

/// Lines of `server.log` that mean a broker judged files another tool wrote as bad.
pub const FAILURE_LINES: [&str; 12] = [
    "Found an orphaned index file",
    "Could not find offset index file",
    "Found a corrupted index file",
    "Found invalid messages in log segment",
    "Corruption found in segment",
    "Found invalid offset during recovery",
    "Deleting all segments because logEndOffset",
    "Failed to load producer snapshot",
    "Resetting first dirty offset",
    "which is larger than the log end offset",
    "Failed to access checkpoint file",
    "is not in the form of topic-partition",
];

/// WARN lines every start of this kind of node prints, whatever its files hold.
const EXPECTED_WARNINGS: [&str; 2] =
    ["Performing controller activation", "The config `log.cleaner.enable` is deprecated"];

/// A node: its directory, ports and, while it runs, its JVM.
#[derive(Debug)]
pub struct Node {
    kafka: &'static Kafka,
    /// The node's directory.
    pub dir: PathBuf,
    broker_port: u16,
    controller_port: u16,
    /// Its `node.id`, and the cluster's `controller.quorum.voters` (`None`: this node alone).
    membership: (u32, Option<String>),
    child: Option<Child>,
    /// Lines of `server.log` before the current run.
    start_line: usize,
}

/// Two free loopback ports (bound and released: another process could take one in between, which a start
/// then reports).
fn free_ports() -> Result<(u16, u16)> {
    let pairs = free_port_pairs(1)?;
    Ok(pairs[0])
}

/// `n` pairs of free loopback ports, all different (every one held until all are found).
pub(crate) fn free_port_pairs(n: usize) -> Result<Vec<(u16, u16)>> {
    let bind = || {
        std::net::TcpListener::bind("127.0.0.1:0").map_err(|source| Error::Io {
            what: "bind",
            path: PathBuf::from("127.0.0.1:0"),
            source,
        })
    };
    let port = |l: &std::net::TcpListener| {
        l.local_addr().map(|a| a.port()).map_err(|source| Error::Io { what: "bind", path: PathBuf::new(), source })
    };
    // All held at once, so they differ.
    let mut held = Vec::with_capacity(2 * n);
    for _ in 0..2 * n {
        held.push(bind()?);
    }
    let mut pairs = Vec::with_capacity(n);
    for two in held.chunks(2) {
        pairs.push((port(&two[0])?, port(&two[1])?));
    }
    Ok(pairs)
}

/// A new cluster id: 16 bytes as Kafka's `Uuid.toString` writes them (URL-safe base64, no padding), never
/// starting with `-` (Kafka's `randomUuid` rule).
pub(crate) fn cluster_id() -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    let seed = format!("{:?}{}", Instant::now(), std::process::id());
    let mut bits: u128 = xxhash_rust::xxh3::xxh3_128(seed.as_bytes());
    let mut out = String::new();
    // 22 characters of 6 bits cover 132 bits: the 128 bits and 4 zero bits, as base64 pads the last one.
    let mut acc = Vec::new();
    for _ in 0..21 {
        acc.push(((bits >> 122) & 0x3f) as usize);
        bits <<= 6;
    }
    acc.push(((bits >> 124) & 0x0f) as usize * 4);
    for (i, a) in acc.into_iter().enumerate() {
        let c = if i == 0 && a == 62 { b'A' } else { ALPHABET[a] };
        out.push(char::from(c));
    }
    out
}

impl Node {
    /// Formats a new node in `dir` (created) as `spec` says.
    ///
    /// # Errors
    /// When the storage tool fails.
    pub fn format(kafka: &'static Kafka, dir: &Path, spec: &NodeSpec) -> Result<Node> {
        let ports = free_ports()?;
        Node::format_member(kafka, dir, spec, Member { id: 1, ports, voters: None, cluster_id: cluster_id() })
    }

    /// Formats a node of a cluster in `dir` (created): its id, ports and the cluster's voters as `member` says.
    ///
    /// # Errors
    /// When the storage tool fails.
    pub(crate) fn format_member(kafka: &'static Kafka, dir: &Path, spec: &NodeSpec, member: Member) -> Result<Node> {
        fs::create_dir_all(dir.join("logs")).map_err(|source| Error::Io {
            what: "create",
            path: dir.to_path_buf(),
            source,
        })?;
        let (broker_port, controller_port) = member.ports;
        let node = Node {
            kafka,
            dir: dir.to_path_buf(),
            broker_port,
            controller_port,
            membership: (member.id, member.voters),
            child: None,
            start_line: 0,
        };
        let mut props = node.properties(spec.log_dirs);
        for line in &spec.extra {
            props.push_str(line);
            props.push('\n');
        }
        let file = dir.join("server.properties");
        fs::write(&file, props).map_err(|source| Error::Io { what: "write", path: file.clone(), source })?;
        let id = member.cluster_id;
        let mut args = vec!["format", "-t", &id, "-c", path_str(&file)];
        let feature = spec.transaction_version.map(|v| format!("transaction.version={v}"));
        if let Some(f) = &feature {
            args.extend(["-f", f.as_str()]);
        }
        succeeded("kafka-storage format", kafka.run("kafka.tools.StorageTool", &args)?)?;
        Ok(node)
    }

    /// The node whose files lie in `dir` (a copy of another's, say): `server.properties` is written anew with
    /// free ports and this directory's paths, every other line kept.
    ///
    /// # Errors
    /// When `server.properties` cannot be read or written.
    pub fn open(kafka: &'static Kafka, dir: &Path) -> Result<Node> {
        let file = dir.join("server.properties");
        let old = fs::read_to_string(&file).map_err(|source| Error::Io { what: "read", path: file.clone(), source })?;
        let log_dirs = old
            .lines()
            .find_map(|l| l.strip_prefix("log.dirs="))
            .map_or(1, |v| v.split(',').filter(|s| !s.is_empty()).count());
        let (broker_port, controller_port) = free_ports()?;
        let node = Node {
            kafka,
            dir: dir.to_path_buf(),
            broker_port,
            controller_port,
            membership: (1, None),
            child: None,
            start_line: 0,
        };
        let ours: Vec<&str> =
            ["process.roles", "node.id", "controller.quorum.voters", "listeners", "advertised.listeners", "log.dirs"]
                .to_vec();
        let mut props = node.properties(log_dirs);
        for line in old.lines() {
            let name = line.split('=').next().unwrap_or_default();
            if !ours.contains(&name) && !props.lines().any(|l| l == line) {
                props.push_str(line);
                props.push('\n');
            }
        }
        fs::write(&file, props).map_err(|source| Error::Io { what: "write", path: file.clone(), source })?;
        Ok(node)
    }

    /// `server.properties` for `log_dirs` directories under this node's directory.
    fn properties(&self, log_dirs: usize) -> String {
        let dirs: Vec<String> =
            (0..log_dirs.max(1)).map(|i| self.dir.join(format!("data-{i}")).display().to_string()).collect();
        let (b, c) = (self.broker_port, self.controller_port);
        let (id, voters) = (self.membership.0, self.membership.1.clone().unwrap_or_else(|| format!("1@127.0.0.1:{c}")));
        // A node alone holds every internal topic's one replica; a cluster's nodes hold them on every node.
        let rf = if self.membership.1.is_some() { 3 } else { 1 };
        // A voter is broker and controller in one JVM; the other nodes of a cluster are brokers only.
        let voter = voters.split(',').any(|v| v.starts_with(&format!("{id}@")));
        let (roles, listeners) = if voter {
            ("broker,controller", format!("PLAINTEXT://127.0.0.1:{b},CONTROLLER://127.0.0.1:{c}"))
        } else {
            ("broker", format!("PLAINTEXT://127.0.0.1:{b}"))
        };
        format!(
            "process.roles={roles}\nnode.id={id}\ncontroller.quorum.voters={voters}\n\
             listeners={listeners}\nadvertised.listeners=PLAINTEXT://127.0.0.1:{b}\n\
             inter.broker.listener.name=PLAINTEXT\ncontroller.listener.names=CONTROLLER\n\
             listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT\nlog.dirs={}\nnum.partitions=1\n\
             offsets.topic.replication.factor={rf}\noffsets.topic.num.partitions=1\n\
             transaction.state.log.replication.factor={rf}\ntransaction.state.log.min.isr=1\n\
             transaction.state.log.num.partitions=1\nshare.coordinator.state.topic.replication.factor={rf}\n\
             share.coordinator.state.topic.min.isr=1\nshare.coordinator.state.topic.num.partitions=1\n\
             group.initial.rebalance.delay.ms=0\ntransaction.max.timeout.ms=86400000\nlog.cleaner.enable=false\n\
             metadata.log.segment.ms=2000\nmetadata.log.max.record.bytes.between.snapshots=16384\n\
             metadata.log.max.snapshot.interval.ms=5000\n",
            dirs.join(",")
        )
    }

    /// The log directories, in `log.dirs` order (the first holds the metadata log).
    pub fn log_dirs(&self) -> Vec<PathBuf> {
        let mut dirs: Vec<PathBuf> = fs::read_dir(&self.dir)
            .map(|es| {
                es.flatten()
                    .map(|e| e.path())
                    .filter(|p| p.file_name().is_some_and(|n| n.to_string_lossy().starts_with("data-")))
                    .collect()
            })
            .unwrap_or_default();
        dirs.sort();
        dirs
    }

    /// The partition directory `name` (`<topic>-<partition>`), in whichever log directory holds it.
    pub fn partition(&self, name: &str) -> Option<PathBuf> {
        self.log_dirs().into_iter().map(|d| d.join(name)).find(|p| p.is_dir())
    }

    /// Every partition directory of every log directory, by name (the metadata log included).
    pub fn partitions(&self) -> BTreeMap<String, PathBuf> {
        let mut all = BTreeMap::new();
        for d in self.log_dirs() {
            for e in fs::read_dir(&d).into_iter().flatten().flatten() {
                let name = e.file_name().to_string_lossy().into_owned();
                if e.path().is_dir() && !name.starts_with('.') {
                    all.insert(name, e.path());
                }
            }
        }
        all
    }

    /// `host:port` of the broker's listener.
    pub fn bootstrap(&self) -> String {
        format!("127.0.0.1:{}", self.broker_port)
    }

    fn server_log(&self) -> PathBuf {
        self.dir.join("logs").join("server.log")
    }

    fn server_log_text(&self) -> String {
        fs::read_to_string(self.server_log()).unwrap_or_default()
    }

    /// Starts the broker and waits until it says `Kafka Server started` (90 s at most).
    ///
    /// # Errors
    /// [`Error::Timeout`] or [`Error::Command`] (the JVM exited) with the end of its output.
    pub fn start(&mut self) -> Result<()> {
        self.launch()?;
        self.await_start()
    }

    /// This node's `node.id`.
    pub fn id(&self) -> u32 {
        self.membership.0
    }

    /// Starts the broker's JVM without waiting for it (the nodes of a cluster wait for each other's quorum):
    /// [`Node::await_start`] then waits.
    ///
    /// # Errors
    /// When `java` cannot be started.
    pub(crate) fn launch(&mut self) -> Result<()> {
        self.stop()?;
        self.start_line = self.server_log_text().lines().count();
        let logs = self.dir.join("logs");
        let stdout_path = logs.join("stdout.txt");
        let stdout = fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&stdout_path)
            .map_err(|source| Error::Io { what: "open", path: stdout_path.clone(), source })?;
        let stderr =
            stdout.try_clone().map_err(|source| Error::Io { what: "open", path: stdout_path.clone(), source })?;
        let mut cmd = Command::new("java");
        cmd.args(crate::JVM_ARGS)
            .arg(format!(
                "-Dlog4j2.configurationFile={}",
                self.kafka.root.join("interop/kafka/log4j2-broker.xml").display()
            ))
            .arg(format!("-Dkafka.logs.dir={}", logs.display()))
            .arg("-cp")
            .arg(self.kafka.class_path())
            .arg("kafka.Kafka")
            .arg(self.dir.join("server.properties"))
            .stdin(Stdio::null())
            .stdout(stdout)
            .stderr(stderr);
        let child =
            cmd.spawn().map_err(|source| Error::Io { what: "start java", path: PathBuf::from("java"), source })?;
        self.child = Some(child);
        Ok(())
    }

    /// Waits until the broker launched says `Kafka Server started` (90 s at most).
    ///
    /// # Errors
    /// As [`Node::start`].
    pub(crate) fn await_start(&mut self) -> Result<()> {
        let stdout_path = self.dir.join("logs").join("stdout.txt");
        let deadline = Instant::now() + Duration::from_secs(90);
        loop {
            if self.since_start().contains("Kafka Server started") {
                return Ok(());
            }
            if let Some(c) = self.child.as_mut()
                && let Ok(Some(status)) = c.try_wait()
            {
                self.child = None;
                let out = fs::read_to_string(&stdout_path).unwrap_or_default();
                let tail: Vec<&str> = out.lines().rev().take(20).collect();
                return Err(Error::Command {
                    what: format!("the broker of {}", self.dir.display()),
                    status: status.to_string(),
                    stderr: tail.into_iter().rev().collect::<Vec<_>>().join("\n") + "\n" + &self.errors_since_start(),
                });
            }
            if Instant::now() > deadline {
                let detail = self.errors_since_start();
                let _ = self.kill();
                return Err(Error::Timeout { what: "the broker's start".into(), seconds: 90, detail });
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// Stops the broker as an operator does (SIGTERM, then waiting for the JVM itself to exit, 60 s at most,
    /// then SIGKILL). Nothing when it does not run.
    ///
    /// # Errors
    /// [`Error::Timeout`] when it had to be killed.
    pub fn stop(&mut self) -> Result<()> {
        let Some(mut child) = self.child.take() else { return Ok(()) };
        if let Some(pid) = rustix::process::Pid::from_raw(child.id() as i32) {
            let _ = rustix::process::kill_process(pid, rustix::process::Signal::TERM);
        }
        let deadline = Instant::now() + Duration::from_secs(60);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = child.try_wait() {
                return Ok(());
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let _ = child.kill();
        let _ = child.wait();
        Err(Error::Timeout { what: "the broker's stop".into(), seconds: 60, detail: self.errors_since_start() })
    }

    /// Kills the broker at once (SIGKILL), as a crash would.
    ///
    /// # Errors
    /// Never in practice; the kill's own error is ignored.
    pub fn kill(&mut self) -> Result<()> {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
        Ok(())
    }

    /// `server.log` since the last start.
    pub fn since_start(&self) -> String {
        self.server_log_text().lines().skip(self.start_line).collect::<Vec<_>>().join("\n")
    }

    fn errors_since_start(&self) -> String {
        let lines: Vec<String> = self
            .since_start()
            .lines()
            .filter(|l| l.contains("] ERROR ") || l.contains("] WARN "))
            .take(20)
            .map(str::to_owned)
            .collect();
        lines.join("\n")
    }

    /// What `server.log` says of the logs loaded since the last start.
    pub fn load_findings(&self) -> LoadFindings {
        let text = self.since_start();
        let mut found = LoadFindings::default();
        for line in text.lines() {
            if FAILURE_LINES.iter().any(|f| line.contains(f)) {
                found.failures.push(line.to_owned());
            }
            let warn = line.contains("] WARN ") || line.contains("] ERROR ");
            if warn && !EXPECTED_WARNINGS.iter().any(|w| line.contains(w)) {
                found.unexpected.push(line.to_owned());
            }
            if let Some((name, load)) = parse_load(line) {
                found.loads.insert(name, load);
            }
        }
        found
    }

    /// Makes the next start judge every batch: removes the clean-shutdown marker and the recovery points of
    /// every log directory, as after a crash.
    ///
    /// # Errors
    /// When a file cannot be removed.
    pub fn force_recovery(&self) -> Result<()> {
        for d in self.log_dirs() {
            for name in [".kafka_cleanshutdown", "recovery-point-offset-checkpoint"] {
                let p = d.join(name);
                match fs::remove_file(&p) {
                    Ok(()) => {}
                    Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                    Err(source) => return Err(Error::Io { what: "remove", path: p, source }),
                }
            }
        }
        Ok(())
    }

    /// Runs a Kafka tool's class against this broker: `args` may hold `{bootstrap}`, replaced by its address.
    ///
    /// # Errors
    /// When `java` cannot be started.
    pub fn tool(&self, class: &str, args: &[&str]) -> Result<std::process::Output> {
        let boot = self.bootstrap();
        let args: Vec<String> = args.iter().map(|a| a.replace("{bootstrap}", &boot)).collect();
        let refs: Vec<&str> = args.iter().map(String::as_str).collect();
        self.kafka.run(class, &refs)
    }
}

/// `(partition, load)` of a `Completed load of UnifiedLog(dir=.../<name>, ...) with N segments,
/// local-log-start-offset X and log-end-offset Y` line.
fn parse_load(line: &str) -> Option<(String, PartitionLoad)> {
    const LOAD: &str = "Completed load of ";
    let rest = &line[line.find(LOAD)? + LOAD.len()..];
    let rest = &rest[rest.find("Log(dir=")? + "Log(dir=".len()..];
    let dir = rest.split([',', ')']).next()?;
    let name = Path::new(dir).file_name()?.to_string_lossy().into_owned();
    let number_after = |key: &str| -> Option<i64> {
        let at = rest.find(key)? + key.len();
        rest[at..].trim_start().split(|c: char| !(c.is_ascii_digit() || c == '-')).next()?.parse().ok()
    };
    let segments = {
        let at = rest.find(" with ")? + " with ".len();
        rest[at..].split(' ').next()?.parse().ok()?
    };
    Some((
        name,
        PartitionLoad {
            segments,
            log_start: number_after("local-log-start-offset")?,
            log_end: number_after("log-end-offset")?,
        },
    ))
}

/// Who a node of a cluster is.
pub(crate) struct Member {
    /// Its `node.id`.
    pub(crate) id: u32,
    /// Its broker and controller ports.
    pub(crate) ports: (u16, u16),
    /// `controller.quorum.voters` of the cluster (`None`: this node alone).
    pub(crate) voters: Option<String>,
    /// The cluster's id.
    pub(crate) cluster_id: String,
}

impl Drop for Node {
    fn drop(&mut self) {
        let _ = self.kill();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_load_line_is_read() {
        let line = "[2026-12-03 15:00:00,123] INFO Completed load of Log(dir=/tmp/n/data-0/txn-0, topicId=abc, \
                    topic=txn, partition=0, highWatermark=0, lastStableOffset=0, logStartOffset=0, logEndOffset=1737) \
                    with 6 segments, local-log-start-offset 0 and log-end-offset 1737 in 12ms (1/7 completed in /tmp/n/data-0) \
                    (kafka.log.LogManager)";
        let (name, load) = parse_load(line).expect("parsed");
        assert_eq!(name, "txn-0");
        assert_eq!(load, PartitionLoad { segments: 6, log_start: 0, log_end: 1737 });
    }

    #[test]
    fn cluster_ids_are_22_url_safe_characters() {
        let id = cluster_id();
        assert_eq!(id.len(), 22);
        assert!(!id.starts_with('-'));
        assert!(id.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_'));
    }
}
