//! The records of Kafka's `__consumer_offsets`, decoded (`dump --offsets-decoder`): a key of version 0 or 1 is
//! a committed offset's (group, topic, partition), of version 2 a group's metadata; a value holds the committed
//! offset (versions 0 to 3: offset, leader epoch from 3, metadata, commit and expire timestamps) or the
//! group's state (versions 0 to 3: protocol type, generation, protocol, leader, state timestamp from 2, and
//! its member count). A null value is a tombstone: the offset or the group was deleted. Other versions (the
//! flexible ones, and the new consumer protocol's records) are named, not guessed at.
//!
//! ```
//! use logcompact::consumer_offsets::{OffsetsKey, decode_key};
//! // Version 1: group "g", topic "t", partition 3.
//! let key = [0, 1, 0, 1, b'g', 0, 1, b't', 0, 0, 0, 3];
//! assert_eq!(
//!     decode_key(&key),
//!     OffsetsKey::OffsetCommit { group: "g".into(), topic: "t".into(), partition: 3 }
//! );
//! ```
#![expect(clippy::big_endian_bytes, reason = "Kafka's records are big-endian")]

use serde::Serialize;

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
            })
        })(),
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

/// One line for people: `offset_commit group=g topic=t partition=3: offset=42 ...`.
pub fn describe(key: &OffsetsKey, value: &OffsetsValue) -> String {
    let k = match key {
        OffsetsKey::OffsetCommit { group, topic, partition } => {
            format!("offset_commit group={group} topic={topic} partition={partition}")
        }
        OffsetsKey::GroupMetadata { group } => format!("group_metadata group={group}"),
        OffsetsKey::Unknown { version } => format!("key version {version:?} (not decoded)"),
    };
    let v = match value {
        OffsetsValue::OffsetCommit { offset, leader_epoch, metadata, commit_timestamp, expire_timestamp, .. } => {
            let epoch = leader_epoch.map_or_else(String::new, |e| format!(" leader_epoch={e}"));
            let expire = expire_timestamp.map_or_else(String::new, |e| format!(" expire_timestamp={e}"));
            format!("offset={offset}{epoch} metadata={metadata:?} commit_timestamp={commit_timestamp}{expire}")
        }
        OffsetsValue::GroupMetadata { protocol_type, generation, protocol, leader, members, .. } => format!(
            "protocol_type={protocol_type} generation={generation} protocol={} leader={} members={members}",
            protocol.as_deref().unwrap_or("-"),
            leader.as_deref().unwrap_or("-")
        ),
        OffsetsValue::Tombstone => "TOMBSTONE (deleted)".to_owned(),
        OffsetsValue::Unknown { version } => format!("value version {version:?} (not decoded)"),
    };
    format!("{k}: {v}")
}

#[cfg(test)]
mod tests {
    use super::*;

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
                expire_timestamp: None
            }
        );
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
