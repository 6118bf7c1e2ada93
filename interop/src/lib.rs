//! A real Apache Kafka 4.4 broker, its own log cleaner and its tools, for this project's tests and benchmarks:
//! the reference that `--format kafka` is judged against. Java is used here only, never by the product.
//!
//! Everything comes from Maven Central: [`Kafka::get`] resolves `interop/kafka/pom.xml`'s jars once into
//! `target/kafka-interop/jars` (Maven's own cache in `target/kafka-m2`) and compiles the Java programs of
//! `interop/kafka/src` into `target/kafka-interop/classes`, under a lock, so concurrent test binaries do it once.
//! A [`Node`] is one KRaft node (broker and controller) on free loopback ports in a directory of its own; a
//! [`fixture::Fixture`] is a node with every kind of partition produced once and cached under `target/`, which
//! tests copy and change.
//!
//! Where Java 17 or Maven is missing, [`Kafka::get`] fails naming the fix; `LOGCOMPACT_SKIP_KAFKA=1` skips
//! (refused under CI, which must run these tests).
//!
//! ```no_run
//! let Some(kafka) = kafka_interop::Kafka::get() else { return };
//! let fixture = kafka_interop::fixture::main(kafka);
//! let tmp = std::env::temp_dir().join("node-copy");
//! let mut node = fixture.copy_to(&tmp);
//! node.start().expect("the broker starts");
//! assert!(node.load_findings().failures.is_empty());
//! ```

pub mod bench_partitions;
pub mod cleaner_server;
pub mod cluster;
pub mod fixture;
mod node;
mod setup;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

pub use cleaner_server::CleanerServer;
pub use cluster::Cluster;
pub use node::{LoadFindings, Node, NodeSpec, PartitionLoad};

/// The Kafka version every jar is of.
pub const KAFKA_VERSION: &str = "4.4.0";

/// Why the reference could not be run.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A tool the reference needs is missing.
    #[error("the real-Kafka tests need {tool}: {fix}")]
    Missing {
        /// What is missing.
        tool: &'static str,
        /// How to get it.
        fix: String,
    },
    /// A command failed.
    #[error("{what} failed ({status}): {stderr}")]
    Command {
        /// The command.
        what: String,
        /// Its exit status.
        status: String,
        /// The end of its standard error.
        stderr: String,
    },
    /// A file operation failed.
    #[error("{what} {}: {source}", path.display())]
    Io {
        /// What was being done.
        what: &'static str,
        /// On which path.
        path: PathBuf,
        /// The error.
        source: std::io::Error,
    },
    /// Something did not happen in time.
    #[error("{what} did not happen within {seconds} s{}", if detail.is_empty() { String::new() } else { format!(": {detail}") })]
    Timeout {
        /// What was waited for.
        what: String,
        /// How long.
        seconds: u64,
        /// What was seen meanwhile.
        detail: String,
    },
    /// A program printed something that is not what it should.
    #[error("{what}: {detail}")]
    Output {
        /// The program.
        what: String,
        /// What is wrong.
        detail: String,
    },
}

/// Result with [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// The resolved reference: jars, compiled programs and their logging settings.
#[derive(Debug)]
pub struct Kafka {
    /// The repository's root.
    pub root: PathBuf,
    /// The directory of every jar.
    pub jars: PathBuf,
    /// The compiled programs of `interop/kafka/src`.
    pub classes: PathBuf,
    /// Where fixtures and scratch directories go (`target/kafka-interop`).
    pub work: PathBuf,
    /// A hash of the programs' sources (fixtures are cached by it).
    pub sources_hash: u64,
}

impl Kafka {
    /// The reference, set up once per process; `None` when skipped (`LOGCOMPACT_SKIP_KAFKA`, outside CI).
    ///
    /// # Panics
    /// When it cannot be set up (no Java 17, no Maven, no access to Maven Central), naming the fix: a test that
    /// needs the reference fails rather than passes without it.
    pub fn get() -> Option<&'static Kafka> {
        match Kafka::try_get() {
            Ok(k) => k,
            Err(why) => panic!("{why}"),
        }
    }

    /// As [`Kafka::get`] without the panic, for a caller that goes on without the reference (a benchmark that
    /// names what it could not run): `Ok(None)` when skipped (`LOGCOMPACT_SKIP_KAFKA`, outside CI), `Err` naming
    /// why it cannot be set up (no Java 17, no Maven, no access to Maven Central, or the skip asked for under
    /// CI). Set up once per process, as [`Kafka::get`].
    ///
    /// # Errors
    /// Why the reference cannot be had, with the fix.
    pub fn try_get() -> Result<Option<&'static Kafka>, &'static str> {
        static FOUND: std::sync::OnceLock<Result<Option<Kafka>, String>> = std::sync::OnceLock::new();
        match FOUND.get_or_init(setup::find_or_make) {
            Ok(k) => Ok(k.as_ref()),
            Err(why) => Err(why.as_str()),
        }
    }

    /// The class path of the jars and the programs.
    pub fn class_path(&self) -> String {
        format!("{}:{}/*", self.classes.display(), self.jars.display())
    }

    /// A `java` command for `class`, logging as the tools do (warnings to standard error), with the heap and
    /// locale every program of the reference runs with.
    pub fn java(&self, class: &str) -> Command {
        self.java_with(&[], class)
    }

    /// As [`Kafka::java`] with the JVM options `jvm` besides.
    pub fn java_with(&self, jvm: &[&str], class: &str) -> Command {
        let mut c = Command::new("java");
        c.args(JVM_ARGS)
            .args(jvm)
            .arg(format!("-Dlog4j2.configurationFile={}", self.root.join("interop/kafka/log4j2-tools.xml").display()))
            .arg("-cp")
            .arg(self.class_path())
            .arg(class);
        c
    }

    /// Runs `class` with `args` and returns its output, whatever its exit status.
    ///
    /// # Errors
    /// [`Error::Io`] when `java` cannot be started.
    pub fn run(&self, class: &str, args: &[&str]) -> Result<Output> {
        self.java(class).args(args).output().map_err(|source| Error::Io {
            what: "run java",
            path: PathBuf::from("java"),
            source,
        })
    }

    /// Runs `class` with `args`, which must succeed and print one JSON value on standard output.
    ///
    /// # Errors
    /// [`Error::Command`] when it fails; [`Error::Output`] when its output is no JSON.
    pub fn run_json(&self, class: &str, args: &[&str]) -> Result<serde_json::Value> {
        let out = succeeded(&format!("{class} {}", args.join(" ")), self.run(class, args)?)?;
        serde_json::from_slice(&out.stdout)
            .map_err(|e| Error::Output { what: class.to_owned(), detail: format!("no JSON on standard output: {e}") })
    }

    /// Kafka 4.4's own cleaner (`Cleaner.doClean`, offline) on the partition directory `dir`, which it rewrites:
    /// give it a copy. `now_ms` fixes its clock; `configs` are the topic's settings (`name=value`). Returns what
    /// `OfflineClean` prints (the passes with their statistics and times, the files after).
    ///
    /// `jvm`: JVM options besides (a larger heap, say).
    ///
    /// # Errors
    /// As [`Kafka::run_json`].
    pub fn offline_clean(
        &self,
        jvm: &[&str],
        dir: &Path,
        now_ms: i64,
        buffer_bytes: u64,
        configs: &[String],
        extra: &[&str],
    ) -> Result<serde_json::Value> {
        let (now, buffer) = (now_ms.to_string(), buffer_bytes.to_string());
        let mut args = vec!["--dir", path_str(dir), "--now-ms", &now, "--buffer-bytes", &buffer];
        for c in configs {
            args.extend(["--config", c.as_str()]);
        }
        args.extend(extra);
        // Kafka's own assertions on, as its tests run it.
        let out = self
            .java_with(&[&["-ea"], jvm].concat(), "org.apache.kafka.storage.internals.log.OfflineClean")
            .args(&args)
            .output()
            .map_err(|source| Error::Io { what: "run java", path: PathBuf::from("java"), source })?;
        let out = succeeded(&format!("OfflineClean {}", args.join(" ")), out)?;
        serde_json::from_slice(&out.stdout)
            .map_err(|e| Error::Output { what: "OfflineClean".into(), detail: format!("no JSON: {e}") })
    }
}

/// The JVM options of every program: a small heap (the broker runs in 256 MiB) and the locale Kafka's number
/// formats assume.
const JVM_ARGS: [&str; 3] = ["-Xmx256m", "-Duser.language=en", "-Duser.country=US"];

/// `out` when its command exited 0.
///
/// # Errors
/// [`Error::Command`] naming `what`, its status and the end of its standard error.
pub fn succeeded(what: &str, out: Output) -> Result<Output> {
    if out.status.success() {
        return Ok(out);
    }
    let err = String::from_utf8_lossy(&out.stderr);
    let tail: String = err.lines().rev().take(30).collect::<Vec<_>>().into_iter().rev().collect::<Vec<_>>().join("\n");
    Err(Error::Command { what: what.to_owned(), status: out.status.to_string(), stderr: tail })
}

/// A path as text (the reference's paths are this repository's and temporary directories: UTF-8).
pub fn path_str(p: &Path) -> &str {
    p.to_str().unwrap_or_default()
}

/// Copies the directory tree `from` to `to` (which must not exist) as `cp -a` does: the segments' modification
/// times matter to Kafka's cleaner (the legacy delete horizon of a segment is its time).
///
/// # Errors
/// [`Error::Command`] when the copy fails.
pub fn copy_tree(from: &Path, to: &Path) -> Result<()> {
    let out = Command::new("cp").arg("-a").arg(from).arg(to).output().map_err(|source| Error::Io {
        what: "run cp",
        path: from.to_path_buf(),
        source,
    })?;
    succeeded(&format!("cp -a {} {}", from.display(), to.display()), out).map(drop)
}

/// Says what a long setup step is doing on standard error, past the test harness's capture (which takes only
/// `eprintln!`'s lines), so that a person watching `cargo test` sees why it is quiet; a failed write is ignored.
pub(crate) fn say(line: &str) {
    use std::io::Write;
    let _ = writeln!(std::io::stderr().lock(), "{line}");
}
