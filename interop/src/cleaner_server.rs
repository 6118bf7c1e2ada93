//! Kafka's own cleaner kept running in one JVM for many partitions (`OfflineCleanServer`): a case costs the
//! cleaning, not a JVM's start, which is what lets a differential fuzzer judge thousands of partitions in
//! minutes.
//!
//! ```no_run
//! let Some(kafka) = kafka_interop::Kafka::get() else { return };
//! let mut server = kafka.cleaner_server().expect("the JVM starts");
//! let out = server
//!     .clean(&["--dir".into(), "/tmp/copy/t-0".into(), "--now-ms".into(), "1800000000000".into(), "--until-clean".into()])
//!     .expect("Kafka's cleaner ran");
//! println!("{} passes", out["passes"].as_array().map_or(0, Vec::len));
//! ```

use std::io::{BufRead, BufReader, Write};
use std::path::PathBuf;
use std::process::{Child, ChildStdin, ChildStdout, Stdio};

use crate::{Error, Kafka, Result};

/// One JVM running Kafka's cleaner on request. Dropping it ends the JVM.
#[derive(Debug)]
pub struct CleanerServer {
    child: Child,
    input: ChildStdin,
    output: BufReader<ChildStdout>,
    /// Requests sent whose answers were not read yet.
    pending: usize,
}

fn io(what: &'static str) -> impl FnOnce(std::io::Error) -> Error {
    move |source| Error::Io { what, path: PathBuf::from("OfflineCleanServer"), source }
}

impl Kafka {
    /// Starts a JVM serving Kafka's cleaner ([`CleanerServer`]), with Kafka's assertions on.
    ///
    /// # Errors
    /// [`Error::Io`] when `java` cannot be started.
    pub fn cleaner_server(&self) -> Result<CleanerServer> {
        let mut child = self
            .java_with(
                &["-ea", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1"],
                "org.apache.kafka.storage.internals.log.OfflineCleanServer",
            )
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .map_err(io("start"))?;
        let input = child
            .stdin
            .take()
            .ok_or_else(|| Error::Output { what: "OfflineCleanServer".into(), detail: "no standard input".into() })?;
        let output =
            BufReader::new(child.stdout.take().ok_or_else(|| Error::Output {
                what: "OfflineCleanServer".into(),
                detail: "no standard output".into(),
            })?);
        Ok(CleanerServer { child, input, output, pending: 0 })
    }
}

impl CleanerServer {
    /// Sends one OfflineClean command line (`args`, none holding a tab or a line break) without waiting for its
    /// answer ([`CleanerServer::receive`]), so that other work can run while Kafka's cleaner does.
    ///
    /// # Errors
    /// [`Error::Output`] for an argument with a tab or line break; [`Error::Io`] when the JVM is gone.
    pub fn send(&mut self, args: &[String]) -> Result<()> {
        if let Some(bad) = args.iter().find(|a| a.contains(['\t', '\n', '\r'])) {
            return Err(Error::Output {
                what: "OfflineCleanServer".into(),
                detail: format!("an argument holds a tab or a line break: {bad:?}"),
            });
        }
        let mut line = args.join("\t");
        line.push('\n');
        self.input.write_all(line.as_bytes()).and_then(|()| self.input.flush()).map_err(io("write to"))?;
        self.pending += 1;
        Ok(())
    }

    /// The answer to the oldest request sent: what OfflineClean prints.
    ///
    /// # Errors
    /// [`Error::Command`] with Kafka's message when the run failed; [`Error::Io`] or [`Error::Output`] when
    /// the JVM is gone or answered otherwise.
    pub fn receive(&mut self) -> Result<serde_json::Value> {
        let mut line = String::new();
        let n = self.output.read_line(&mut line).map_err(io("read from"))?;
        if n == 0 {
            return Err(Error::Output { what: "OfflineCleanServer".into(), detail: "the JVM ended".into() });
        }
        self.pending = self.pending.saturating_sub(1);
        let mut answer: serde_json::Value = serde_json::from_str(&line)
            .map_err(|e| Error::Output { what: "OfflineCleanServer".into(), detail: format!("no JSON: {e}") })?;
        if let Some(ok) = answer.get_mut("ok") {
            return Ok(ok.take());
        }
        Err(Error::Command {
            what: "Kafka's cleaner".into(),
            status: "failed".into(),
            stderr: format!(
                "{}{}",
                answer["error"].as_str().unwrap_or("no message"),
                answer["trace"].as_str().map(|t| format!("\n{t}")).unwrap_or_default()
            ),
        })
    }

    /// Sends `args` and waits for the answer.
    ///
    /// # Errors
    /// As [`CleanerServer::send`] and [`CleanerServer::receive`].
    pub fn clean(&mut self, args: &[String]) -> Result<serde_json::Value> {
        self.send(args)?;
        self.receive()
    }
}

impl Drop for CleanerServer {
    fn drop(&mut self) {
        // Closing its input ends the JVM's loop; a kill is the fallback.
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
