//! A cluster of KRaft nodes on loopback for the replica tests: node 1 is broker and controller in one JVM and
//! the only voter, the others are brokers only, so that any of them can stop (even all but node 1) while the
//! cluster goes on: a partition replicated on every broker, one broker stopped while the others' cleaners
//! remove what it has not fetched, another cleaned offline by us, then restarted.
//!
//! Each node is a [`Node`] in `<dir>/node-<id>`; the step program `logcompact.interop.Replicas` creates
//! topics, produces with `acks=all`, runs transactions and moves leadership ([`Cluster::step`]).

use std::path::{Path, PathBuf};

use crate::node::{Member, cluster_id, free_port_pairs};
use crate::{Kafka, Node, NodeSpec, Result, succeeded};

/// A record a consumer read: its offset, key and value (as text).
pub type Consumed = (i64, Option<String>, Option<String>);

/// The nodes of the cluster.
#[derive(Debug)]
pub struct Cluster {
    kafka: &'static Kafka,
    /// The cluster's directory.
    pub dir: PathBuf,
    /// The nodes, by `node.id` - 1.
    pub nodes: Vec<Node>,
}

impl Cluster {
    /// Formats `count` nodes in `dir` (each in `node-<id>`, ids from 1; node 1 the controller), with `spec`'s log
    /// directories and extra `server.properties` lines.
    ///
    /// # Errors
    /// When a node cannot be formatted.
    pub fn format(kafka: &'static Kafka, dir: &Path, count: usize, spec: &NodeSpec) -> Result<Cluster> {
        let ports = free_port_pairs(count)?;
        let voters = format!("1@127.0.0.1:{}", ports.first().map_or(0, |p| p.1));
        let id = cluster_id();
        let mut nodes = Vec::with_capacity(count);
        for (i, p) in ports.into_iter().enumerate() {
            let member = Member { id: i as u32 + 1, ports: p, voters: Some(voters.clone()), cluster_id: id.clone() };
            nodes.push(Node::format_member(kafka, &dir.join(format!("node-{}", i + 1)), spec, member)?);
        }
        Ok(Cluster { kafka, dir: dir.to_path_buf(), nodes })
    }

    /// Starts every node and waits until each says it started (the brokers need the controller).
    ///
    /// # Errors
    /// As [`Node::start`].
    pub fn start(&mut self) -> Result<()> {
        for n in &mut self.nodes {
            n.launch()?;
        }
        for n in &mut self.nodes {
            n.await_start()?;
        }
        Ok(())
    }

    /// The node of `id`.
    ///
    /// # Panics
    /// When the cluster has no such node (a test's mistake).
    pub fn node(&mut self, id: u32) -> &mut Node {
        let i = (id as usize).checked_sub(1).filter(|&i| i < self.nodes.len()).expect("a node of the cluster");
        &mut self.nodes[i]
    }

    /// Every node's listener, as a client's `bootstrap.servers` (clients pass over a stopped one).
    pub fn bootstrap(&self) -> String {
        self.nodes.iter().map(Node::bootstrap).collect::<Vec<_>>().join(",")
    }

    /// Runs a step of `logcompact.interop.Replicas` (`create`, `produce`, `txn`, `lead`, `describe`,
    /// `wait-isr`) against the cluster, and returns its standard output.
    ///
    /// # Errors
    /// [`crate::Error::Command`] when the step fails.
    pub fn step(&self, step: &str, args: &[&str]) -> Result<String> {
        let boot = self.bootstrap();
        let mut all = vec![step, "--bootstrap", boot.as_str()];
        all.extend_from_slice(args);
        let out =
            succeeded(&format!("Replicas {}", all.join(" ")), self.kafka.run("logcompact.interop.Replicas", &all)?)?;
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    }

    /// As [`Cluster::step`], on a thread of its own (a step that waits for the test, say): join it for the
    /// output.
    pub fn step_in_background(&self, step: &str, args: &[&str]) -> std::thread::JoinHandle<Result<String>> {
        let kafka = self.kafka;
        let mut all: Vec<String> = vec![step.to_owned(), "--bootstrap".into(), self.bootstrap()];
        all.extend(args.iter().map(|a| (*a).to_owned()));
        std::thread::spawn(move || {
            let refs: Vec<&str> = all.iter().map(String::as_str).collect();
            let out =
                succeeded(&format!("Replicas {}", all.join(" ")), kafka.run("logcompact.interop.Replicas", &refs)?)?;
            Ok(String::from_utf8_lossy(&out.stdout).into_owned())
        })
    }

    /// Reads partition 0 of `topic` from the cluster's current leader under `isolation`
    /// (`read_committed` or `read_uncommitted`): `(key, value)` per record, in offset order, with the offset.
    ///
    /// # Errors
    /// When the consumer fails.
    pub fn consume(&self, topic: &str, isolation: &str) -> Result<Vec<Consumed>> {
        let boot = self.bootstrap();
        let out = succeeded(
            &format!("Consume {topic}"),
            self.kafka.run(
                "logcompact.interop.Consume",
                &["--bootstrap", &boot, "--topic", topic, "--partition", "0", "--isolation", isolation],
            )?,
        )?;
        let text = String::from_utf8_lossy(&out.stdout);
        let mut records = Vec::new();
        for line in text.lines() {
            let Ok(v) = serde_json::from_str::<serde_json::Value>(line) else { continue };
            let decode =
                |field: &str| v[field].as_str().map(|b| String::from_utf8_lossy(&base64_decode(b)).into_owned());
            records.push((v["offset"].as_i64().unwrap_or(-1), decode("key"), decode("value")));
        }
        Ok(records)
    }
}

/// Standard base64 (as `Json.b64` writes it) decoded; bytes that are no base64 are passed over.
fn base64_decode(s: &str) -> Vec<u8> {
    let mut out = Vec::with_capacity(s.len() * 3 / 4);
    let (mut acc, mut bits) = (0u32, 0u32);
    for c in s.bytes() {
        let v = match c {
            b'A'..=b'Z' => c - b'A',
            b'a'..=b'z' => c - b'a' + 26,
            b'0'..=b'9' => c - b'0' + 52,
            b'+' | b'-' => 62,
            b'/' | b'_' => 63,
            _ => continue,
        };
        acc = (acc << 6) | u32::from(v);
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push((acc >> bits) as u8);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    #[test]
    fn base64_round_trips_what_java_writes() {
        assert_eq!(super::base64_decode("azAwMDAwMQ=="), b"k000001");
        assert_eq!(super::base64_decode(""), b"");
    }
}
