//! Kafka's producer state snapshots, read for `dump` and `analyze`: the format is read in
//! [`log_core::kafka::producer_snapshot`].

use std::path::Path;

pub use log_core::kafka::producer_snapshot::{CorruptSnapshot, ProducerEntry, read_snapshot};

/// The entries of the newest valid producer snapshot in the partition directory `dir` (the highest offset in
/// its name), read without changing anything; `None` when there is none or none can be read.
pub fn newest(dir: &Path) -> Option<Vec<ProducerEntry>> {
    let mut snapshots: Vec<(u64, std::path::PathBuf)> = std::fs::read_dir(dir)
        .ok()?
        .filter_map(Result::ok)
        .filter_map(|e| {
            let name = e.file_name().into_string().ok()?;
            let offset = name.strip_suffix(".snapshot")?.parse().ok()?;
            Some((offset, e.path()))
        })
        .collect();
    snapshots.sort();
    // A broker keeps a few; the newest that reads is the one that knows the most. Each is bounded by the
    // broker's producer count (46 bytes a producer); a file far larger than any broker writes is passed over.
    snapshots.into_iter().rev().find_map(|(_, path)| {
        let len = std::fs::metadata(&path).ok()?.len();
        if len > 1 << 30 {
            return None;
        }
        read_snapshot(&std::fs::read(&path).ok()?).ok()
    })
}
