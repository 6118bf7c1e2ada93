//! The records of Kafka's `__consumer_offsets`, decoded (`dump --offsets-decoder`): a key of version 0 or 1 is
//! a committed offset's (group, topic, partition), of version 2 a group's metadata; a value holds the committed
//! offset (versions 0 to 4: offset, leader epoch from 3, metadata, commit and expire timestamps, the topic id
//! Kafka 4.4 writes in version 4) or the group's state (versions 0 to 4: protocol type, generation, protocol,
//! leader, state timestamp from 2, and its member count). A null value is a tombstone: the offset or the group
//! was deleted. Other record types (the new consumer protocol's records) are named, not guessed at; the
//! kafka-dump-log style decodes every type (`crate::coordinator_records`).
//!
//! ```
//! use kafka_records::consumer_offsets::{OffsetsKey, decode_key};
//! // Version 1: group "g", topic "t", partition 3.
//! let key = [0, 1, 0, 1, b'g', 0, 1, b't', 0, 0, 0, 3];
//! assert_eq!(
//!     decode_key(&key),
//!     OffsetsKey::OffsetCommit { group: "g".into(), topic: "t".into(), partition: 3 }
//! );
//! ```
#![expect(clippy::big_endian_bytes, reason = "Kafka's records are big-endian")]

use serde::Serialize;

use crate::coordinator_records::{GROUP_METADATA_VALUE, OFFSET_COMMIT_VALUE};
use crate::message_schema::{Json, read_fields};
use crate::wire::Reader;

/// A `__consumer_offsets` key.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum OffsetsKey {
    /// The committed offset of a group for a partition (key versions 0 and 1).
    OffsetCommit {
        /// The consumer group.
        group: String,
        /// The topic.
        topic: String,
        /// The partition.
        partition: i32,
    },
    /// A group's metadata (key version 2).
    GroupMetadata {
        /// The consumer group.
        group: String,
    },
    /// A key of another version, or one that does not parse.
    Unknown {
        /// Its version, when it has two bytes for one.
        version: Option<i16>,
    },
}

/// A `__consumer_offsets` value.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum OffsetsValue {
    /// A committed offset.
    OffsetCommit {
        /// The value's version.
        version: i16,
        /// The offset.
        offset: i64,
        /// The leader epoch (version 3; -1 unknown).
        leader_epoch: Option<i32>,
        /// The client's metadata string.
        metadata: String,
        /// When it was committed (ms).
        commit_timestamp: i64,
        /// When it expires (version 1 only).
        expire_timestamp: Option<i64>,
        /// The topic's id (version 4, when written), as Kafka prints a UUID.
        #[serde(skip_serializing_if = "Option::is_none")]
        topic_id: Option<String>,
    },
    /// A group's state.
    GroupMetadata {
        /// The value's version.
        version: i16,
        /// `consumer`, or another protocol type.
        protocol_type: String,
        /// The generation.
        generation: i32,
        /// The assignor.
        protocol: Option<String>,
        /// The leader member.
        leader: Option<String>,
        /// When the group entered its state (version 2 and later).
        current_state_timestamp: Option<i64>,
        /// Its members.
        members: i32,
    },
    /// The key's offset or group was deleted.
    Tombstone,
    /// A value of another version, or one that does not parse.
    Unknown {
        /// Its version, when it has two bytes for one.
        version: Option<i16>,
    },
}

/// Reads big-endian fields in turn; `None` past the end.
struct Fields<'a>(&'a [u8]);

impl<'a> Fields<'a> {
    fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        if self.0.len() < n {
            return None;
        }
        let (head, rest) = self.0.split_at(n);
        self.0 = rest;
        Some(head)
    }
    fn i16(&mut self) -> Option<i16> {
        self.take(2).map(|b| i16::from_be_bytes([b[0], b[1]]))
    }
    fn i32(&mut self) -> Option<i32> {
        self.take(4).map(|b| i32::from_be_bytes([b[0], b[1], b[2], b[3]]))
    }
    fn i64(&mut self) -> Option<i64> {
        let b = self.take(8)?;
        let mut a = [0u8; 8];
        a.copy_from_slice(b);
        Some(i64::from_be_bytes(a))
    }
    /// A string (int16 length, -1 for null).
    fn string(&mut self) -> Option<Option<String>> {
        let len = self.i16()?;
        if len < 0 {
            return Some(None);
        }
        self.take(len as usize).map(|b| Some(String::from_utf8_lossy(b).into_owned()))
    }
}

/// Decodes a `__consumer_offsets` key.
pub fn decode_key(key: &[u8]) -> OffsetsKey {
    let mut f = Fields(key);
    let Some(version) = f.i16() else { return OffsetsKey::Unknown { version: None } };
    let decoded = match version {
        0 | 1 => {
            (|| Some(OffsetsKey::OffsetCommit { group: f.string()??, topic: f.string()??, partition: f.i32()? }))()
        }
        2 => f.string().flatten().map(|group| OffsetsKey::GroupMetadata { group }),
        _ => None,
    };
    decoded.unwrap_or(OffsetsKey::Unknown { version: Some(version) })
}

/// Decodes the value of a record whose key is `key`.
pub fn decode_value(key: &OffsetsKey, value: Option<&[u8]>) -> OffsetsValue {
    let Some(value) = value else { return OffsetsValue::Tombstone };
    let mut f = Fields(value);
    let Some(version) = f.i16() else { return OffsetsValue::Unknown { version: None } };
    let decoded = match (key, version) {
        (OffsetsKey::OffsetCommit { .. }, 0..=3) => (|| {
            let offset = f.i64()?;
            let leader_epoch = if version == 3 { Some(f.i32()?) } else { None };
            let metadata = f.string()?.unwrap_or_default();
            let commit_timestamp = f.i64()?;
            let expire_timestamp = if version == 1 { Some(f.i64()?) } else { None };
            Some(OffsetsValue::OffsetCommit {
                version,
                offset,
                leader_epoch,
                metadata,
                commit_timestamp,
                expire_timestamp,
                topic_id: None,
            })
        })(),
        (OffsetsKey::OffsetCommit { .. }, 4) => flexible_offset_commit(value),
        (OffsetsKey::GroupMetadata { .. }, 4) => flexible_group_metadata(value),
        (OffsetsKey::GroupMetadata { .. }, 0..=3) => (|| {
            let protocol_type = f.string()?.unwrap_or_default();
            let generation = f.i32()?;
            let protocol = f.string()?;
            let leader = f.string()?;
            let current_state_timestamp = if version >= 2 { Some(f.i64()?) } else { None };
            let members = f.i32()?;
            Some(OffsetsValue::GroupMetadata {
                version,
                protocol_type,
                generation,
                protocol,
                leader,
                current_state_timestamp,
                members,
            })
        })(),
        _ => None,
    };
    decoded.unwrap_or(OffsetsValue::Unknown { version: Some(version) })
}

/// Reads a value of a flexible version through its schema: its fields, or `None` when it does not read.
fn flexible_fields(schema: &crate::message_schema::Message, value: &[u8]) -> Option<Vec<(&'static str, Json)>> {
    let mut r = Reader::new(value);
    let version = r.i16().ok()?;
    match read_fields(schema, &mut r, version).ok()? {
        Json::Object(fields) => Some(fields),
        _ => None,
    }
}

fn field<'a>(fields: &'a [(&'static str, Json)], name: &str) -> Option<&'a Json> {
    fields.iter().find(|(n, _)| *n == name).map(|(_, v)| v)
}

fn int(fields: &[(&'static str, Json)], name: &str) -> Option<i64> {
    match field(fields, name)? {
        Json::Int(i) => Some(*i),
        _ => None,
    }
}

fn text(fields: &[(&'static str, Json)], name: &str) -> Option<Option<String>> {
    match field(fields, name)? {
        Json::Text(t) => Some(Some(t.clone())),
        Json::Null => Some(None),
        _ => None,
    }
}

/// An offset commit of version 4 (flexible, with the topic id tagged).
fn flexible_offset_commit(value: &[u8]) -> Option<OffsetsValue> {
    let f = flexible_fields(&OFFSET_COMMIT_VALUE, value)?;
    let topic_id = text(&f, "topicId")?.filter(|id| id != "AAAAAAAAAAAAAAAAAAAAAA");
    Some(OffsetsValue::OffsetCommit {
        version: 4,
        offset: int(&f, "offset")?,
        leader_epoch: Some(int(&f, "leaderEpoch")? as i32),
        metadata: text(&f, "metadata")?.unwrap_or_default(),
        commit_timestamp: int(&f, "commitTimestamp")?,
        expire_timestamp: None,
        topic_id,
    })
}

/// A group's metadata of version 4 (flexible).
fn flexible_group_metadata(value: &[u8]) -> Option<OffsetsValue> {
    let f = flexible_fields(&GROUP_METADATA_VALUE, value)?;
    let members = match field(&f, "members")? {
        Json::Array(m) => m.len() as i32,
        _ => return None,
    };
    Some(OffsetsValue::GroupMetadata {
        version: 4,
        protocol_type: text(&f, "protocolType")?.unwrap_or_default(),
        generation: int(&f, "generation")? as i32,
        protocol: text(&f, "protocol")?,
        leader: text(&f, "leader")?,
        current_state_timestamp: Some(int(&f, "currentStateTimestamp")?),
        members,
    })
}

/// One line for people: `offset_commit group=g topic=t partition=3: offset=42 ...`.
pub fn describe(key: &OffsetsKey, value: &OffsetsValue) -> String {
    let k = match key {
        OffsetsKey::OffsetCommit { group, topic, partition } => {
            format!("offset_commit group={group} topic={topic} partition={partition}")
        }
        OffsetsKey::GroupMetadata { group } => format!("group_metadata group={group}"),
        OffsetsKey::Unknown { version } => format!("{} (not decoded)", described_version("key", *version)),
    };
    let v = match value {
        OffsetsValue::OffsetCommit {
            offset,
            leader_epoch,
            metadata,
            commit_timestamp,
            expire_timestamp,
            topic_id,
            ..
        } => {
            let epoch = leader_epoch.map_or_else(String::new, |e| format!(" leader_epoch={e}"));
            let expire = expire_timestamp.map_or_else(String::new, |e| format!(" expire_timestamp={e}"));
            let id = topic_id.as_ref().map_or_else(String::new, |t| format!(" topic_id={t}"));
            format!("offset={offset}{epoch} metadata={metadata:?} commit_timestamp={commit_timestamp}{expire}{id}")
        }
        OffsetsValue::GroupMetadata { protocol_type, generation, protocol, leader, members, .. } => format!(
            "protocol_type={protocol_type} generation={generation} protocol={} leader={} members={members}",
            protocol.as_deref().unwrap_or("-"),
            leader.as_deref().unwrap_or("-")
        ),
        OffsetsValue::Tombstone => "TOMBSTONE (deleted)".to_owned(),
        OffsetsValue::Unknown { version } => format!("{} (not decoded)", described_version("value", *version)),
    };
    format!("{k}: {v}")
}

/// `key version 3`, or `key shorter than a version` when there are not two bytes for one.
fn described_version(what: &str, version: Option<i16>) -> String {
    match version {
        Some(v) => format!("{what} version {v}"),
        None => format!("{what} shorter than a version"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_of_other_versions_are_named_in_words() {
        let key = decode_key(&[0x8c, 0xcc, 1]);
        let line = describe(&key, &decode_value(&key, Some(&[7])));
        assert_eq!(line, "key version -29492 (not decoded): value shorter than a version (not decoded)");
    }

    fn string(s: &str, out: &mut Vec<u8>) {
        out.extend_from_slice(&(s.len() as i16).to_be_bytes());
        out.extend_from_slice(s.as_bytes());
    }

    #[test]
    fn offset_commits_and_group_metadata_decode_and_the_rest_is_named() {
        let mut key = 1i16.to_be_bytes().to_vec();
        string("payments", &mut key);
        string("orders", &mut key);
        key.extend_from_slice(&7i32.to_be_bytes());
        let k = decode_key(&key);
        assert_eq!(k, OffsetsKey::OffsetCommit { group: "payments".into(), topic: "orders".into(), partition: 7 });
        let mut value = 3i16.to_be_bytes().to_vec();
        value.extend_from_slice(&1234i64.to_be_bytes());
        value.extend_from_slice(&5i32.to_be_bytes());
        string("", &mut value);
        value.extend_from_slice(&1_700_000_000_000i64.to_be_bytes());
        assert_eq!(
            decode_value(&k, Some(&value)),
            OffsetsValue::OffsetCommit {
                version: 3,
                offset: 1234,
                leader_epoch: Some(5),
                metadata: String::new(),
                commit_timestamp: 1_700_000_000_000,
                expire_timestamp: None,
                topic_id: None,
            }
        );
        // Version 4 (Kafka 4.4): flexible, the topic id tagged.
        let mut v4 = 4i16.to_be_bytes().to_vec();
        v4.extend_from_slice(&187i64.to_be_bytes());
        v4.extend_from_slice(&(-1i32).to_be_bytes());
        v4.push(1); // "" as a compact string
        v4.extend_from_slice(&1_796_310_857_190i64.to_be_bytes());
        v4.extend_from_slice(&[1, 0, 16]);
        v4.extend_from_slice(&[
            0x7a, 0x65, 0xa5, 0x61, 0x20, 0x3b, 0x4a, 0x48, 0xbf, 0x4b, 0x8e, 0x44, 0x84, 0x1b, 0x4e, 0x71,
        ]);
        let line = describe(&k, &decode_value(&k, Some(&v4)));
        assert!(line.ends_with("offset=187 leader_epoch=-1 metadata=\"\" commit_timestamp=1796310857190 topic_id=emWlYSA7Ski_S45EhBtOcQ"), "{line}");
        assert_eq!(decode_value(&k, None), OffsetsValue::Tombstone);
        assert_eq!(decode_value(&k, Some(&value[..9])), OffsetsValue::Unknown { version: Some(3) }, "cut short");

        let mut gkey = 2i16.to_be_bytes().to_vec();
        string("payments", &mut gkey);
        let g = decode_key(&gkey);
        let mut gvalue = 2i16.to_be_bytes().to_vec();
        string("consumer", &mut gvalue);
        gvalue.extend_from_slice(&9i32.to_be_bytes());
        string("range", &mut gvalue);
        string("m-1", &mut gvalue);
        gvalue.extend_from_slice(&1i64.to_be_bytes());
        gvalue.extend_from_slice(&2i32.to_be_bytes());
        let decoded = decode_value(&g, Some(&gvalue));
        assert!(describe(&g, &decoded).contains("group=payments: protocol_type=consumer generation=9"), "{decoded:?}");
        assert_eq!(decode_key(&[0, 9, 1]), OffsetsKey::Unknown { version: Some(9) });
        assert_eq!(decode_key(&[0]), OffsetsKey::Unknown { version: None });
    }
}

/// What `analyze` reports of one consumer group in a `__consumer_offsets` partition: its keys as a full
/// compaction would leave them (the latest record of each key), split into live ones and tombstones.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct GroupCounts {
    /// The group.
    pub group: String,
    /// Records of the group in the partition (all of them, before compaction).
    pub records: u64,
    /// Committed offsets whose latest record holds an offset: they stay through compaction.
    pub live_offsets: u64,
    /// Committed offsets whose latest record is a tombstone (deleted): they go one pass and
    /// `delete.retention.ms` after a pass first keeps them.
    pub tombstoned_offsets: u64,
    /// 1 when the group's metadata record is live (the group exists), else 0.
    pub live_metadata: u64,
    /// 1 when the group's latest metadata record is a tombstone (the group was deleted), else 0.
    pub tombstoned_metadata: u64,
}

/// The groups of a `__consumer_offsets` partition, most live keys first.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct GroupSummary {
    /// Every group seen.
    pub groups: Vec<GroupCounts>,
    /// Records whose key is of another kind (the new consumer protocol's, or undecodable).
    pub other_records: u64,
    /// True when the partition held more distinct keys than [`MAX_GROUP_KEYS`]: the counts then cover the keys
    /// first seen up to that limit.
    pub truncated: bool,
}

/// The most distinct keys [`group_summary`] follows (about 40 bytes each), so that its memory stays bounded
/// whatever the partition holds.
pub const MAX_GROUP_KEYS: usize = 4_000_000;

/// Counts each group's live keys and tombstones in a `__consumer_offsets` partition: one read of every batch
/// (aborted transactional offset commits and markers left out), the latest record of each key kept as a 16-byte
/// hash, its group and whether it is a tombstone.
///
/// # Errors
/// Damage to a batch (file and byte named).
pub fn group_summary(log: &log_core::Log) -> log_core::Result<GroupSummary> {
    let snapshot = log.snapshot();
    let txns = snapshot.transactions()?;
    let mut groups: Vec<GroupCounts> = Vec::new();
    let mut group_index: std::collections::HashMap<String, u32> = std::collections::HashMap::new();
    // Key hash -> (group index, is a metadata key, latest is a tombstone).
    let mut latest: std::collections::HashMap<u128, (u32, bool, bool)> = std::collections::HashMap::new();
    let mut summary = GroupSummary::default();
    let mut scratch = Vec::new();
    let active = log_core::SegmentScan::new(
        log.format(),
        snapshot.active_name(),
        snapshot.active_source(),
        0,
        snapshot.active_len(),
        true,
    );
    let scans = snapshot
        .closed()
        .iter()
        .map(|s| (s.name().to_owned(), s.scan()))
        .chain([(snapshot.active_name().to_owned(), active)]);
    for (name, mut scan) in scans {
        while let Some(window) = scan.next_window()? {
            for item in window.batches() {
                let placed = item?;
                let b = placed.batch;
                if b.is_control()
                    || (b.is_transactional() && txns.is_aborted(b.producer_id().unwrap_or(-1), b.base_offset))
                {
                    continue;
                }
                let corrupt =
                    |kind| log_core::Error::Corrupt { segment: name.clone(), position: placed.position, kind };
                for rec in b.records(&mut scratch).map_err(corrupt)? {
                    let rec = rec.map_err(corrupt)?;
                    let Some(key) = rec.key else { continue };
                    let (group, metadata) = match decode_key(key) {
                        OffsetsKey::OffsetCommit { group, .. } => (group, false),
                        OffsetsKey::GroupMetadata { group } => (group, true),
                        OffsetsKey::Unknown { .. } => {
                            summary.other_records += 1;
                            continue;
                        }
                    };
                    let index = match group_index.get(&group) {
                        Some(&i) => i,
                        None => {
                            let i = groups.len() as u32;
                            groups.push(GroupCounts { group: group.clone(), ..GroupCounts::default() });
                            group_index.insert(group, i);
                            i
                        }
                    };
                    groups[index as usize].records += 1;
                    let hash = xxhash_rust::xxh3::xxh3_128(key);
                    let tombstone = rec.value.is_none();
                    let full = latest.len() >= MAX_GROUP_KEYS;
                    match latest.get_mut(&hash) {
                        Some(entry) => entry.2 = tombstone,
                        None if !full => {
                            latest.insert(hash, (index, metadata, tombstone));
                        }
                        None => summary.truncated = true,
                    }
                }
            }
        }
    }
    for &(index, metadata, tombstone) in latest.values() {
        let g = &mut groups[index as usize];
        match (metadata, tombstone) {
            (false, false) => g.live_offsets += 1,
            (false, true) => g.tombstoned_offsets += 1,
            (true, false) => g.live_metadata += 1,
            (true, true) => g.tombstoned_metadata += 1,
        }
    }
    groups.sort_by(|a, b| {
        (b.live_offsets + b.live_metadata).cmp(&(a.live_offsets + a.live_metadata)).then(a.group.cmp(&b.group))
    });
    summary.groups = groups;
    Ok(summary)
}
