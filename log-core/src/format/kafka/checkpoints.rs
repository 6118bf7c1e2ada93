//! The checkpoint files of a broker's log directory (`cleaner-offset-checkpoint`, `log-start-offset-checkpoint`,
//! `replication-offset-checkpoint`, `recovery-point-offset-checkpoint`): one text format, a version line (`0`),
//! an entry count, then one `topic partition offset` line per entry. A broker replaces them atomically (a
//! temporary file, fsync, rename, directory fsync), and so does [`write()`].
//!
//! Reading is bounded ([`MAX_CHECKPOINT_BYTES`]) and strict as Kafka's reader is: a wrong version, a count that
//! does not match the lines, or a line that does not parse is an error naming the file and line.

use crate::error::{Error, Result};
use crate::storage::SegmentStore;

/// The cleaner's first dirty offset per partition.
pub const CLEANER_OFFSET_CHECKPOINT: &str = "cleaner-offset-checkpoint";
/// The log start offset per partition.
pub const LOG_START_OFFSET_CHECKPOINT: &str = "log-start-offset-checkpoint";
/// The high watermark per partition.
pub const REPLICATION_OFFSET_CHECKPOINT: &str = "replication-offset-checkpoint";
/// The recovery point per partition.
pub const RECOVERY_POINT_OFFSET_CHECKPOINT: &str = "recovery-point-offset-checkpoint";
/// The largest checkpoint file read: about a million partitions' lines.
pub const MAX_CHECKPOINT_BYTES: u64 = 64 << 20;

/// The entries of a checkpoint file, in file order.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CheckpointEntries {
    entries: Vec<(String, u32, i64)>,
}

impl CheckpointEntries {
    /// The offset of `topic`/`partition`, if listed.
    pub fn get(&self, topic: &str, partition: u32) -> Option<i64> {
        self.entries.iter().find(|(t, p, _)| t == topic && *p == partition).map(|&(_, _, o)| o)
    }

    /// Sets the offset of `topic`/`partition`, in place when listed, else as a new last line.
    pub fn set(&mut self, topic: &str, partition: u32, offset: i64) {
        match self.entries.iter_mut().find(|(t, p, _)| t == topic && *p == partition) {
            Some(e) => e.2 = offset,
            None => self.entries.push((topic.to_owned(), partition, offset)),
        }
    }

    /// Removes the entry of `topic`/`partition`; true when there was one.
    pub fn remove(&mut self, topic: &str, partition: u32) -> bool {
        let before = self.entries.len();
        self.entries.retain(|(t, p, _)| !(t == topic && *p == partition));
        self.entries.len() != before
    }

    /// Every entry: `(topic, partition, offset)`.
    pub fn iter(&self) -> impl Iterator<Item = (&str, u32, i64)> {
        self.entries.iter().map(|(t, p, o)| (t.as_str(), *p, *o))
    }

    /// Entries.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// True with no entry.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The file's text.
    pub fn to_text(&self) -> String {
        let mut text = format!("0\n{}\n", self.entries.len());
        for (t, p, o) in &self.entries {
            text.push_str(&format!("{t} {p} {o}\n"));
        }
        text
    }
}

/// Parses a checkpoint file's text.
///
/// # Errors
/// A sentence naming the line that is wrong.
pub fn parse(text: &str) -> std::result::Result<CheckpointEntries, String> {
    let mut lines = text.lines();
    match lines.next().map(str::trim) {
        Some("0") => {}
        Some(other) => return Err(format!("line 1: version {other:?}, expected 0")),
        // Kafka creates each checkpoint file empty when a log directory is loaded and reads an empty one as no
        // entries (`CheckpointFile.CheckpointReadBuffer.read`): a running broker's log-start-offset-checkpoint
        // stays empty until its first scheduled write.
        None => return Ok(CheckpointEntries::default()),
    }
    let count = lines.next().ok_or("line 2: the entry count is missing")?;
    let count: usize =
        count.trim().parse().map_err(|_| format!("line 2: the entry count {count:?} is not a number"))?;
    let mut entries = Vec::with_capacity(count.min(1 << 16));
    for (i, line) in lines.enumerate() {
        if line.trim().is_empty() && i >= count {
            continue;
        }
        let fields: Vec<&str> = line.split_whitespace().collect();
        let [t, p, o] = fields[..] else { return Err(format!("line {}: expected `topic partition offset`", i + 3)) };
        let (Ok(p), Ok(o)) = (p.parse::<u32>(), o.parse::<i64>()) else {
            return Err(format!("line {}: partition and offset must be numbers", i + 3));
        };
        entries.push((t.to_owned(), p, o));
    }
    if entries.len() != count {
        return Err(format!("line 2 announces {count} entries, the file holds {}", entries.len()));
    }
    Ok(CheckpointEntries { entries })
}

/// Reads the checkpoint file `name` of the log directory `dir`; `Ok(None)` when it does not exist.
///
/// # Errors
/// [`Error::BadCheckpoint`] for a file larger than [`MAX_CHECKPOINT_BYTES`] or one that does not parse (the
/// reason names the line); [`Error::Io`].
pub fn read(dir: &dyn SegmentStore, name: &str) -> Result<Option<CheckpointEntries>> {
    let file = match dir.open(name) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(Error::io("open", name)(e)),
    };
    let len = file.len();
    if len > MAX_CHECKPOINT_BYTES {
        return Err(Error::BadCheckpoint { name: name.into(), reason: "file is larger than any checkpoint (64 MiB)" });
    }
    let mut buf = vec![0u8; len as usize];
    file.read_at(0, &mut buf).map_err(Error::io("read", name))?;
    let text =
        std::str::from_utf8(&buf).map_err(|_| Error::BadCheckpoint { name: name.into(), reason: "not UTF-8" })?;
    parse(text).map(Some).map_err(|reason| Error::BadCheckpointLine { name: name.into(), reason })
}

/// Replaces the checkpoint file `name` of `dir` with `entries` (through `name.tmp`, as a broker does).
///
/// # Errors
/// [`Error::Io`].
pub fn write(dir: &dyn SegmentStore, name: &str, entries: &CheckpointEntries) -> Result<()> {
    let tmp = format!("{name}.tmp");
    crate::checkpoint::write_atomically(dir, name, &tmp, entries.to_text().as_bytes())
}

/// `orders-3` → (`orders`, 3): a partition directory's name.
pub fn topic_partition(dir_name: &str) -> Option<(&str, u32)> {
    let (topic, p) = dir_name.rsplit_once('-')?;
    if topic.is_empty() || p.is_empty() || !p.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    Some((topic, p.parse().ok()?))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_keeps_other_lines_and_order() {
        let text = "0\n3\norders 0 100\norders 1 7\n__consumer_offsets 12 99\n";
        let mut e = parse(text).expect("parses");
        assert_eq!(e.get("orders", 1), Some(7));
        e.set("orders", 1, 8);
        e.set("payments", 0, 5);
        assert_eq!(e.to_text(), "0\n4\norders 0 100\norders 1 8\n__consumer_offsets 12 99\npayments 0 5\n");
    }

    #[test]
    fn kafkas_reader_rules_are_kept() {
        for bad in ["1\n0\n", "0\n2\na 0 1\n", "0\n1\na x 1\n", "0\n1\na 0\n", "0\nx\n"] {
            assert!(parse(bad).is_err(), "{bad:?}");
        }
        assert_eq!(parse("0\n0\n").expect("empty").len(), 0);
        assert_eq!(parse("").expect("an empty file, as Kafka creates one").len(), 0, "Kafka reads it as no entries");
        assert_eq!(topic_partition("com.acme.orders-12"), Some(("com.acme.orders", 12)));
        assert_eq!(topic_partition("orders-x"), None);
        assert_eq!(topic_partition("orders"), None);
    }
}
