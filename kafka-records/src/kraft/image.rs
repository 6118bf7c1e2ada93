//! The part of a KRaft cluster's metadata that settles a topic's settings, replayed from its metadata log as a
//! broker replays it: topic ids and names (`TopicRecord`, `RemoveTopicRecord`) and the configs of every
//! resource (`ConfigRecord`: a value sets a key, a null value deletes it; removing a topic deletes every config
//! of its name). Records between a `BeginTransactionRecord` and its `EndTransactionRecord` apply only at the
//! end; an `AbortTransactionRecord`, or the log ending inside the transaction, drops them. A later record for a
//! key overrides an earlier one.
//!
//! A record's value is its frame (three unsigned varints: frame version 1, the record's api key, its version)
//! then its body in Kafka's flexible encoding (compact strings, raw 16-byte uuids, a tagged-field section at
//! the end of every struct). Only the records above are decoded; every other type is passed over by its
//! frame, as it needs nothing of its body.

use std::collections::BTreeMap;

/// `ConfigResource.Type` of a topic.
pub const TOPIC_RESOURCE: i8 = 2;
/// `ConfigResource.Type` of a broker (name `""`: the cluster-wide default; a node id in decimal: that node).
pub const BROKER_RESOURCE: i8 = 4;

const REGISTER_BROKER_RECORD: u64 = 0;
const TOPIC_RECORD: u64 = 2;
const PARTITION_RECORD: u64 = 3;
const PARTITION_CHANGE_RECORD: u64 = 5;
const BROKER_REGISTRATION_CHANGE_RECORD: u64 = 17;
const CONFIG_RECORD: u64 = 4;
const REMOVE_TOPIC_RECORD: u64 = 9;
const BEGIN_TRANSACTION_RECORD: u64 = 23;
const END_TRANSACTION_RECORD: u64 = 24;
const ABORT_TRANSACTION_RECORD: u64 = 25;

/// A record that could not be decoded.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("metadata record at offset {offset}: {what}")]
pub struct BadRecord {
    /// Its offset.
    pub offset: i64,
    /// What is wrong.
    pub what: &'static str,
}

/// A reader of Kafka's flexible encoding over one record's value.
struct Wire<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl<'a> Wire<'a> {
    fn uvarint(&mut self) -> Option<u64> {
        let mut v = 0u64;
        for shift in (0..64).step_by(7) {
            let b = *self.bytes.get(self.at)?;
            self.at += 1;
            v |= u64::from(b & 0x7f) << shift;
            if b & 0x80 == 0 {
                return Some(v);
            }
        }
        None
    }

    fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        let s = self.bytes.get(self.at..self.at.checked_add(n)?)?;
        self.at += n;
        Some(s)
    }

    fn int8(&mut self) -> Option<i8> {
        self.take(1).map(|b| b[0] as i8)
    }

    /// A compact string: `None` inside for a null one.
    fn string(&mut self) -> Option<Option<String>> {
        match self.uvarint()? {
            0 => Some(None),
            n => {
                let len = usize::try_from(n - 1).ok()?;
                Some(Some(String::from_utf8_lossy(self.take(len)?).into_owned()))
            }
        }
    }

    fn uuid(&mut self) -> Option<[u8; 16]> {
        self.take(16)?.try_into().ok()
    }
}

/// What one record changes.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Change {
    Topic {
        name: String,
        id: [u8; 16],
    },
    RemoveTopic {
        id: [u8; 16],
    },
    Config {
        resource_type: i8,
        resource: String,
        name: String,
        value: Option<String>,
    },
    /// A partition created (`PartitionRecord`, `whole`) or changed (`PartitionChangeRecord`: each field that is
    /// `None`, or a leader of -2, unchanged).
    Partition {
        topic_id: String,
        partition: i32,
        whole: bool,
        replicas: Option<Vec<i32>>,
        isr: Option<Vec<i32>>,
        leader: i32,
        leader_epoch: Option<i32>,
    },
    /// A broker's registration, or a change of it: its log directories' ids (`None`: unchanged).
    Broker {
        id: i32,
        log_dirs: Option<Vec<String>>,
    },
    Begin,
    End,
    Abort,
    Other,
}

fn decode(offset: i64, value: &[u8]) -> Result<Change, BadRecord> {
    let bad = |what| BadRecord { offset, what };
    let mut w = Wire { bytes: value, at: 0 };
    let frame = w.uvarint().ok_or(bad("no frame version"))?;
    if frame != 1 {
        return Err(bad("frame version other than 1"));
    }
    let api_key = w.uvarint().ok_or(bad("no api key"))?;
    let _version = w.uvarint().ok_or(bad("no record version"))?;
    let cut = || bad("cut off");
    Ok(match api_key {
        TOPIC_RECORD => {
            let name = w.string().ok_or_else(cut)?.ok_or(bad("a topic without a name"))?;
            Change::Topic { name, id: w.uuid().ok_or_else(cut)? }
        }
        REMOVE_TOPIC_RECORD => Change::RemoveTopic { id: w.uuid().ok_or_else(cut)? },
        CONFIG_RECORD => {
            let resource_type = w.int8().ok_or_else(cut)?;
            let resource = w.string().ok_or_else(cut)?.ok_or(bad("a config of no resource"))?;
            let name = w.string().ok_or_else(cut)?.ok_or(bad("a config without a name"))?;
            Change::Config { resource_type, resource, name, value: w.string().ok_or_else(cut)? }
        }
        REGISTER_BROKER_RECORD | BROKER_REGISTRATION_CHANGE_RECORD => {
            let message = if api_key == REGISTER_BROKER_RECORD {
                &super::schema::REGISTER_BROKER_RECORD
            } else {
                &super::schema::BROKER_REGISTRATION_CHANGE_RECORD
            };
            // A registration of a version this reader does not know says nothing of directories; the topics'
            // settings do not depend on it.
            let version = i16::try_from(_version).unwrap_or(i16::MAX);
            let Ok(mut fields) =
                crate::message_schema::read_fields(message, &mut crate::wire::Reader::new(&value[w.at..]), version)
            else {
                return Ok(Change::Other);
            };
            let Some(crate::message_schema::Json::Int(id)) = fields.get_mut("brokerId") else {
                return Ok(Change::Other);
            };
            let id = i32::try_from(*id).unwrap_or(-1);
            let dirs: Vec<String> = match fields.get_mut("logDirs") {
                Some(crate::message_schema::Json::Array(a)) => a
                    .iter()
                    .filter_map(|d| match d {
                        crate::message_schema::Json::Text(t) => Some(t.clone()),
                        _ => None,
                    })
                    .collect(),
                _ => Vec::new(),
            };
            // A change record without directories leaves them as they were.
            let log_dirs = (api_key == REGISTER_BROKER_RECORD || !dirs.is_empty()).then_some(dirs);
            Change::Broker { id, log_dirs }
        }
        PARTITION_RECORD | PARTITION_CHANGE_RECORD => {
            let whole = api_key == PARTITION_RECORD;
            let message =
                if whole { &super::schema::PARTITION_RECORD } else { &super::schema::PARTITION_CHANGE_RECORD };
            let version = i16::try_from(_version).unwrap_or(i16::MAX);
            let mut fields =
                crate::message_schema::read_fields(message, &mut crate::wire::Reader::new(&value[w.at..]), version)
                    .map_err(|_| bad("a partition record that does not decode"))?;
            let int = |f: &mut crate::message_schema::Json, name: &str| match f.get_mut(name) {
                Some(crate::message_schema::Json::Int(i)) => i32::try_from(*i).ok(),
                _ => None,
            };
            let ints = |f: &mut crate::message_schema::Json, name: &str| match f.get_mut(name) {
                Some(crate::message_schema::Json::Array(a)) => Some(
                    a.iter()
                        .filter_map(|v| match v {
                            crate::message_schema::Json::Int(i) => i32::try_from(*i).ok(),
                            _ => None,
                        })
                        .collect(),
                ),
                _ => None,
            };
            let topic_id = match fields.get_mut("topicId") {
                Some(crate::message_schema::Json::Text(t)) => t.clone(),
                _ => return Err(bad("a partition record without a topic id")),
            };
            Change::Partition {
                topic_id,
                partition: int(&mut fields, "partitionId").unwrap_or(-1),
                whole,
                replicas: ints(&mut fields, "replicas"),
                isr: ints(&mut fields, "isr"),
                leader: int(&mut fields, "leader").unwrap_or(-2),
                leader_epoch: if whole { int(&mut fields, "leaderEpoch") } else { None },
            }
        }
        BEGIN_TRANSACTION_RECORD => Change::Begin,
        END_TRANSACTION_RECORD => Change::End,
        ABORT_TRANSACTION_RECORD => Change::Abort,
        _ => Change::Other,
    })
}

/// A partition's replicas and leader as the metadata says.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct PartitionState {
    /// Its replicas' node ids, the preferred leader first.
    pub replicas: Vec<i32>,
    /// The in-sync replicas.
    pub isr: Vec<i32>,
    /// The leader's node id (-1: none).
    pub leader: i32,
    /// The leader epoch: each change of leader adds one.
    pub leader_epoch: i32,
}

/// Topics and configs as a broker's start leaves them.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct MetadataImage {
    /// Topic names by id.
    pub topics: BTreeMap<[u8; 16], String>,
    /// Configs by (resource type, resource name), each `name -> value`.
    pub configs: BTreeMap<(i8, String), BTreeMap<String, String>>,
    /// Each registered broker's log directories (their `directory.id`s), by node id.
    pub brokers: BTreeMap<i32, Vec<String>>,
    /// Each partition's replicas and leader, by (topic id as Kafka prints it, partition).
    pub partitions: BTreeMap<(String, i32), PartitionState>,
    /// Records replayed.
    pub records: u64,
    /// The newest record's timestamp.
    pub last_timestamp: Option<i64>,
    /// Changes of a transaction not ended yet.
    pending: Option<Vec<Change>>,
}

impl MetadataImage {
    /// Applies the record at `offset` with `value`.
    ///
    /// # Errors
    /// [`BadRecord`] for a record that does not decode (the image is unchanged).
    pub fn apply(&mut self, offset: i64, value: &[u8]) -> Result<(), BadRecord> {
        let change = decode(offset, value)?;
        self.records += 1;
        match (change, &mut self.pending) {
            (Change::Begin, _) => self.pending = Some(Vec::new()),
            (Change::End, pending) => {
                for c in pending.take().unwrap_or_default() {
                    self.change(c);
                }
            }
            (Change::Abort, pending) => *pending = None,
            (c, Some(pending)) => pending.push(c),
            (c, None) => self.change(c),
        }
        Ok(())
    }

    fn change(&mut self, c: Change) {
        match c {
            Change::Topic { name, id } => {
                self.topics.insert(id, name);
            }
            Change::RemoveTopic { id } => {
                if let Some(name) = self.topics.remove(&id) {
                    self.configs.remove(&(TOPIC_RESOURCE, name));
                }
                let printed = crate::wire::uuid_string(&id);
                self.partitions.retain(|(t, _), _| *t != printed);
            }
            Change::Partition { topic_id, partition, whole, replicas, isr, leader, leader_epoch } => {
                let p = self.partitions.entry((topic_id, partition)).or_default();
                if whole {
                    *p = PartitionState::default();
                }
                if let Some(r) = replicas {
                    p.replicas = r;
                }
                if let Some(i) = isr {
                    p.isr = i;
                }
                if leader != -2 {
                    p.leader = leader;
                    p.leader_epoch = match leader_epoch {
                        Some(e) => e,
                        None => p.leader_epoch.saturating_add(1),
                    };
                }
            }
            Change::Config { resource_type, resource, name, value: Some(value) } => {
                self.configs.entry((resource_type, resource)).or_default().insert(name, value);
            }
            Change::Config { resource_type, resource, name, value: None } => {
                if let Some(c) = self.configs.get_mut(&(resource_type, resource)) {
                    c.remove(&name);
                }
            }
            Change::Broker { id, log_dirs } => {
                if let Some(dirs) = log_dirs {
                    self.brokers.insert(id, dirs);
                }
            }
            Change::Begin | Change::End | Change::Abort | Change::Other => {}
        }
    }

    /// The topic configs of `topic` (what `kafka-configs --describe --entity-type topics` lists as its own).
    pub fn topic_configs(&self, topic: &str) -> Option<&BTreeMap<String, String>> {
        self.configs.get(&(TOPIC_RESOURCE, topic.to_owned()))
    }

    /// The dynamic broker configs of `resource` (`""` the cluster default, else a node id).
    pub fn broker_configs(&self, resource: &str) -> Option<&BTreeMap<String, String>> {
        self.configs.get(&(BROKER_RESOURCE, resource.to_owned()))
    }

    /// Notes the timestamp of a record replayed.
    pub fn saw_timestamp(&mut self, timestamp: i64) {
        self.last_timestamp = Some(self.last_timestamp.map_or(timestamp, |t| t.max(timestamp)));
    }

    /// True when the broker `node` registered a log directory of id `directory_id`.
    pub fn registers(&self, node: i32, directory_id: &str) -> bool {
        self.brokers.get(&node).is_some_and(|dirs| dirs.iter().any(|d| d == directory_id))
    }

    /// The id of the topic named `topic`, if it exists.
    pub fn topic_id(&self, topic: &str) -> Option<[u8; 16]> {
        self.topics.iter().find(|(_, t)| *t == topic).map(|(id, _)| *id)
    }

    /// The replicas and leader of partition `partition` of `topic`, if the metadata has it.
    pub fn partition(&self, topic: &str, partition: i32) -> Option<&PartitionState> {
        let id = crate::wire::uuid_string(&self.topic_id(topic)?);
        self.partitions.get(&(id, partition))
    }

    /// True when `topic` exists.
    pub fn has_topic(&self, topic: &str) -> bool {
        self.topics.values().any(|t| t == topic)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn string(s: Option<&str>) -> Vec<u8> {
        match s {
            None => vec![0],
            Some(s) => {
                let mut v = vec![u8::try_from(s.len() + 1).expect("short")];
                v.extend_from_slice(s.as_bytes());
                v
            }
        }
    }

    fn config(resource_type: i8, resource: &str, name: &str, value: Option<&str>) -> Vec<u8> {
        let mut v = vec![1, 4, 0, resource_type as u8];
        v.extend(string(Some(resource)));
        v.extend(string(Some(name)));
        v.extend(string(value));
        v.push(0);
        v
    }

    fn topic(name: &str, id: u8) -> Vec<u8> {
        let mut v = vec![1, 2, 0];
        v.extend(string(Some(name)));
        v.extend([id; 16]);
        v.push(0);
        v
    }

    #[test]
    fn configs_set_delete_and_go_with_their_topic() {
        let mut image = MetadataImage::default();
        for (i, r) in [
            topic("orders", 1),
            config(2, "orders", "cleanup.policy", Some("compact")),
            config(2, "orders", "delete.retention.ms", Some("5")),
            config(2, "orders", "delete.retention.ms", None),
            config(4, "", "log.cleaner.delete.retention.ms", Some("7")),
        ]
        .iter()
        .enumerate()
        {
            image.apply(i as i64, r).expect("decodes");
        }
        assert_eq!(image.topic_configs("orders").map(|c| c.len()), Some(1));
        assert_eq!(
            image.broker_configs("").and_then(|c| c.get("log.cleaner.delete.retention.ms")).map(String::as_str),
            Some("7")
        );
        let mut remove = vec![1, 9, 0];
        remove.extend([1; 16]);
        remove.push(0);
        image.apply(9, &remove).expect("decodes");
        assert!(image.topic_configs("orders").is_none() && !image.has_topic("orders"));
    }

    #[test]
    fn a_transaction_applies_at_its_end_and_not_after_an_abort() {
        let mut image = MetadataImage::default();
        image.apply(0, &[1, 23, 0, 0]).expect("begin");
        image.apply(1, &topic("a", 1)).expect("topic");
        assert!(!image.has_topic("a"), "not before the end");
        image.apply(2, &[1, 24, 0, 0]).expect("end");
        assert!(image.has_topic("a"));
        image.apply(3, &[1, 23, 0, 0]).expect("begin");
        image.apply(4, &topic("b", 2)).expect("topic");
        image.apply(5, &[1, 25, 0, 0]).expect("abort");
        assert!(!image.has_topic("b"));
        assert!(image.apply(6, &[0, 2, 0]).is_err(), "frame version 0 is refused");
        assert!(image.apply(7, &[1, 2, 0, 9]).is_err(), "a cut record is an error");
    }
}
