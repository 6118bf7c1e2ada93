//! The KRaft metadata log: `__cluster_metadata-0`, where a KRaft cluster keeps its topics, their settings, its
//! ACLs and its brokers. It is owned by the broker's raft layer, which compacts it with snapshots
//! (`<20-digit offset>-<10-digit epoch>.checkpoint`), never by a log cleaner: its records have no keys, so a
//! cleaning pass would drop them and the controller would then fail to start ("Error loading metadata log
//! record"). Nothing of this project ever writes into such a directory; reading it is fine.
//!
//! It is recognised by what it is, not only by its name: a directory whose name is the metadata topic's
//! partition, or one holding the raft layer's `quorum-state` file or a raft snapshot, wherever it lies (a broker's
//! first log directory, or its own `metadata.log.dir`).
//!
//! ```
//! use log_core::kafka::metadata_log::{MetadataLogSign, sign_of};
//! assert_eq!(sign_of("__cluster_metadata-0", ["00000000000000000000.log"]), Some(MetadataLogSign::TopicName));
//! assert_eq!(
//!     sign_of("copy", ["00000000000000000000.log", "quorum-state"]),
//!     Some(MetadataLogSign::QuorumState)
//! );
//! assert_eq!(sign_of("orders-0", ["00000000000000000000.log", "leader-epoch-checkpoint"]), None);
//! ```

use std::fmt;

use super::checkpoints::topic_partition;

/// The KRaft metadata log's topic.
pub const METADATA_TOPIC: &str = "__cluster_metadata";

/// The raft layer's election state, kept in the metadata log's directory.
pub const QUORUM_STATE_FILE: &str = "quorum-state";

/// What shows a directory to be a KRaft metadata log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MetadataLogSign {
    /// Its name is the metadata topic's partition (`__cluster_metadata-0`).
    TopicName,
    /// It holds the raft layer's `quorum-state`.
    QuorumState,
    /// It holds a raft snapshot (`<20-digit offset>-<10-digit epoch>.checkpoint`, or that name with `.part`
    /// or `.deleted` after it).
    Snapshot {
        /// The snapshot's file name.
        file: String,
    },
}

impl fmt::Display for MetadataLogSign {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            MetadataLogSign::TopicName => write!(f, "it is the {METADATA_TOPIC} topic's partition"),
            MetadataLogSign::QuorumState => write!(f, "it holds the raft layer's {QUORUM_STATE_FILE}"),
            MetadataLogSign::Snapshot { file } => write!(f, "it holds the raft snapshot {file}"),
        }
    }
}

/// True when `topic` is the KRaft metadata log's topic.
pub fn is_metadata_topic(topic: &str) -> bool {
    topic == METADATA_TOPIC
}

/// True when `file_name` is a raft snapshot of the metadata log: `<20 digits>-<10 digits>.checkpoint`, as the
/// raft layer names them, finished, partial (`.part`) or waiting to be deleted (`.deleted`). A partition's
/// `leader-epoch-checkpoint` and a log directory's `*-offset-checkpoint` files are not.
pub fn is_raft_snapshot(file_name: &str) -> bool {
    let stem = [".checkpoint", ".checkpoint.part", ".checkpoint.deleted"]
        .iter()
        .find_map(|suffix| file_name.strip_suffix(suffix));
    let Some((offset, epoch)) = stem.and_then(|s| s.split_once('-')) else {
        return false;
    };
    let digits = |s: &str, n: usize| s.len() == n && s.bytes().all(|b| b.is_ascii_digit());
    digits(offset, 20) && digits(epoch, 10)
}

/// What shows the directory named `dir_name` (its last component, links resolved), holding the files
/// `file_names`, to be a KRaft metadata log; `None` when nothing does.
pub fn sign_of<'a>(dir_name: &str, file_names: impl IntoIterator<Item = &'a str>) -> Option<MetadataLogSign> {
    if topic_partition(dir_name).is_some_and(|(topic, _)| is_metadata_topic(topic)) {
        return Some(MetadataLogSign::TopicName);
    }
    let mut snapshot = None;
    for name in file_names {
        if name == QUORUM_STATE_FILE {
            return Some(MetadataLogSign::QuorumState);
        }
        if snapshot.is_none() && is_raft_snapshot(name) {
            snapshot = Some(MetadataLogSign::Snapshot { file: name.to_owned() });
        }
    }
    snapshot
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn snapshots_are_told_from_checkpoint_files() {
        assert!(is_raft_snapshot("00000000000000001234-0000000003.checkpoint"));
        assert!(is_raft_snapshot("00000000000000001234-0000000003.checkpoint.part"));
        assert!(is_raft_snapshot("00000000000000001234-0000000003.checkpoint.deleted"));
        for not in [
            "leader-epoch-checkpoint",
            "cleaner-offset-checkpoint",
            "recovery-point-offset-checkpoint",
            "0000000000000001234-0000000003.checkpoint",
            "00000000000000001234-000000003.checkpoint",
            "00000000000000001234-0000000003.checkpointx",
            "0000000000000000123x-0000000003.checkpoint",
            "00000000000000001234.snapshot",
        ] {
            assert!(!is_raft_snapshot(not), "{not}");
        }
    }

    #[test]
    fn signs_in_order_name_quorum_state_snapshot() {
        assert_eq!(sign_of("__cluster_metadata-0", ["quorum-state"]), Some(MetadataLogSign::TopicName));
        assert_eq!(sign_of("__cluster_metadata", ["x"]), None, "not a partition directory's name, no files");
        assert_eq!(
            sign_of("m", ["00000000000000000099-0000000001.checkpoint", "quorum-state"]),
            Some(MetadataLogSign::QuorumState)
        );
        assert_eq!(
            sign_of("m", ["00000000000000000099-0000000001.checkpoint"]),
            Some(MetadataLogSign::Snapshot { file: "00000000000000000099-0000000001.checkpoint".into() })
        );
        assert_eq!(sign_of("__cluster_metadata_x-0", ["00000000000000000000.log"]), None);
    }
}
