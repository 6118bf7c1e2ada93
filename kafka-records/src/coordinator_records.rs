//! The records Kafka's coordinators keep in their internal topics, decoded as
//! `kafka-dump-log.sh --offsets-decoder`, `--transaction-log-decoder` and `--share-group-state-decoder` print
//! them (Kafka 4.4's `CoordinatorRecordMessageParser`): a key is its record type (two bytes, also the version
//! it is read at) and a message; a value is its version (two bytes) and a message, or null for a tombstone.
//!
//! Key: `{"type":"1","data":{...}}`, value: `{"version":"4","data":{...}}` (type and version as strings),
//! a tombstone `<DELETE>`. A record type the coordinator does not define prints
//! `Unknown record type T at offset O, skipping.` as its key and no payload, any other failure
//! `Error at offset O, skipping. MESSAGE`. `__consumer_offsets` group metadata of the `consumer` protocol
//! shows each member's subscription and assignment decoded; `__transaction_state` values show the
//! transaction's state by name. The schemas restate those of Kafka 4.4.0's coordinator jars.
//!
//! Invariant: decoding reads only the key and value given, and fails only with Kafka's messages.
//!
//! ```
//! use kafka_records::coordinator_records::{Coordinator, Decoded, decode};
//! // A `__transaction_state` tombstone: key type 0, transactional id "t".
//! let key = [0, 0, 0, 1, b't'];
//! assert_eq!(
//!     decode(Coordinator::Transactions, 7, Some(&key), None),
//!     Ok(Decoded {
//!         key: r#"{"type":"0","data":{"transactionalId":"t"}}"#.to_owned(),
//!         value: Some("<DELETE>".to_owned())
//!     })
//! );
//! ```

use crate::message_schema::{D, F, Json, Message, NONE, T, from, range, read_fields, to_json};
use crate::wire::Reader;

// The struct shapes several records share, named once (Kafka's schemas repeat them record by record).

/// Configs as key and value strings.
const KEY_VALUES: T = T::Array(&T::Struct(&[F::new("key", T::Str, from(0)), F::new("value", T::Str, from(0))]));
/// Tasks of a subtopology: its partitions.
const TASK_IDS: T = T::Array(&T::Struct(&[
    F::new("subtopologyId", T::Str, from(0)),
    F::new("partitions", T::Array(&T::Int32), from(0)),
]));
/// Partitions of a topic by id.
const TOPIC_PARTITIONS: T =
    T::Array(&T::Struct(&[F::new("topicId", T::Uuid, from(0)), F::new("partitions", T::Array(&T::Int32), from(0))]));
/// Partitions of a topic by id and name.
const NAMED_TOPIC_PARTITIONS: T = T::Array(&T::Struct(&[
    F::new("topicId", T::Uuid, from(0)),
    F::new("topicName", T::Str, from(0)),
    F::new("partitions", T::Array(&T::Int32), from(0)),
]));
/// Offset ranges of a share partition with their delivery state and count.
const DELIVERY_STATES: T = T::Array(&T::Struct(&[
    F::new("firstOffset", T::Int64, from(0)),
    F::new("lastOffset", T::Int64, from(0)),
    F::new("deliveryState", T::Int8, from(0)),
    F::new("deliveryCount", T::Int16, from(0)),
]));
/// Topics to create: name, partition count, replication factor and configs.
const TOPIC_INFOS: T = T::Array(&T::Struct(&[
    F::new("name", T::Str, from(0)),
    F::new("partitions", T::Int32, from(0)),
    F::new("replicationFactor", T::Int16, from(0)),
    F::new("topicConfigs", KEY_VALUES, from(0)),
]));
/// Partitions of a topic by id, each with its assignment epoch (a tagged field).
const TOPIC_PARTITIONS_WITH_EPOCHS: T = T::Array(&T::Struct(&[
    F::new("topicId", T::Uuid, from(0)),
    F::new("partitions", T::Array(&T::Int32), from(0)),
    F::new("assignmentEpochs", T::Array(&T::Int32), from(0)).nullable(from(0)).tagged(0, from(0)),
]));
/// Tasks of a subtopology, each partition with its assignment epoch (a tagged field).
const TASK_IDS_WITH_EPOCHS: T = T::Array(&T::Struct(&[
    F::new("subtopologyId", T::Str, from(0)),
    F::new("partitions", T::Array(&T::Int32), from(0)),
    F::new("assignmentEpochs", T::Array(&T::Int32), from(0)).nullable(from(0)).tagged(0, from(0)),
]));

// Messages that differ only in their names share a shape.

/// `shape` under the name `name`.
const fn named(name: &'static str, shape: Message) -> Message {
    Message { name, ..shape }
}

/// An offset commit's key: group, topic and partition.
const OFFSET_COMMIT_KEY_SHAPE: Message = Message {
    name: "",
    valid: range(0, 0),
    flexible: NONE,
    fields: &[
        F::new("group", T::Str, range(0, 0)),
        F::new("topic", T::Str, range(0, 0)),
        F::new("partition", T::Int32, range(0, 0)),
    ],
};

/// A key of a group's own record: its id.
const GROUP_KEY: Message =
    Message { name: "", valid: range(0, 0), flexible: NONE, fields: &[F::new("groupId", T::Str, range(0, 0))] };

/// A key of a group member's record: the group's id and the member's.
const GROUP_MEMBER_KEY: Message = Message {
    name: "",
    valid: range(0, 0),
    flexible: NONE,
    fields: &[F::new("groupId", T::Str, range(0, 0)), F::new("memberId", T::Str, range(0, 0))],
};

/// A group's target assignment epoch and its time.
const TARGET_ASSIGNMENT_METADATA_VALUE: Message = Message {
    name: "",
    valid: range(0, 0),
    flexible: from(0),
    fields: &[
        F::new("assignmentEpoch", T::Int32, from(0)),
        F::new("assignmentTimestamp", T::Int64, from(0)).tagged(0, from(0)),
    ],
};

/// A member's target assignment: partitions by topic id.
const TARGET_ASSIGNMENT_MEMBER_VALUE: Message = Message {
    name: "",
    valid: range(0, 0),
    flexible: from(0),
    fields: &[F::new("topicPartitions", TOPIC_PARTITIONS, from(0))],
};

/// A share partition's key: the group, topic id and partition.
const SHARE_PARTITION_KEY: Message = Message {
    name: "",
    valid: range(0, 0),
    flexible: NONE,
    fields: &[
        F::new("groupId", T::Str, range(0, 0)),
        F::new("topicId", T::Uuid, range(0, 0)),
        F::new("partition", T::Int32, range(0, 0)),
    ],
};

/// Which coordinator's records.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Coordinator {
    /// `__consumer_offsets` (`--offsets-decoder`).
    Groups,
    /// `__transaction_state` (`--transaction-log-decoder`).
    Transactions,
    /// `__share_group_state` (`--share-group-state-decoder`).
    ShareGroupState,
}

impl Coordinator {
    fn types(self) -> &'static [(i16, &'static Message, &'static Message)] {
        match self {
            Coordinator::Groups => GROUP_RECORDS,
            Coordinator::Transactions => TRANSACTION_RECORDS,
            Coordinator::ShareGroupState => SHARE_RECORDS,
        }
    }
}

/// What the tool prints for a record: its key and, unless it failed, its payload.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Decoded {
    /// After `key: `.
    pub key: String,
    /// After `payload: `.
    pub value: Option<String>,
}

/// Decodes the record at `offset` with key `key` and value `value`.
///
/// # Errors
/// A record without a key: Kafka's tool dies with this `RuntimeException` message.
pub fn decode(who: Coordinator, offset: i64, key: Option<&[u8]>, value: Option<&[u8]>) -> Result<Decoded, String> {
    let Some(key) = key else {
        return Err(format!(
            "Failed to decode message at offset {offset} using the specified decoder (message had a missing key)"
        ));
    };
    Ok(match parse(who, key, value) {
        Ok((key, value)) => Decoded { key, value: Some(value) },
        Err(Failure::UnknownType(t)) => {
            Decoded { key: format!("Unknown record type {t} at offset {offset}, skipping."), value: None }
        }
        Err(Failure::Other(message)) => {
            Decoded { key: format!("Error at offset {offset}, skipping. {message}"), value: None }
        }
    })
}

enum Failure {
    UnknownType(i16),
    Other(String),
}

fn parse(who: Coordinator, key: &[u8], value: Option<&[u8]>) -> Result<(String, String), Failure> {
    let mut k = Reader::new(key);
    let record_type = k.i16().map_err(|_| Failure::Other("Could not read version from key's buffer.".into()))?;
    let Some(&(_, key_schema, value_schema)) = who.types().iter().find(|(t, _, _)| *t == record_type) else {
        return Err(Failure::UnknownType(record_type));
    };
    let key_fields = read_fields(key_schema, &mut k, record_type).map_err(|e| {
        Failure::Other(format!("Could not read record with version {record_type} from key's buffer due to: {e}."))
    })?;
    let key_json = Json::Object(vec![
        ("type", Json::Text(record_type.to_string())),
        ("data", to_json(key_schema, &key_fields, 0)),
    ]);
    let Some(value) = value else { return Ok((key_json.to_string(), "<DELETE>".to_owned())) };
    let mut v = Reader::new(value);
    let version = v.i16().map_err(|_| Failure::Other("Could not read version from value's buffer.".into()))?;
    if !value_schema.has_version(version) {
        return Err(Failure::Other(format!("Found an unknown record version {version} for {record_type} type")));
    }
    let fields = read_fields(value_schema, &mut v, version).map_err(|e| {
        Failure::Other(format!("Could not read record with version {version} from value's buffer due to: {e}."))
    })?;
    let mut data = to_json(value_schema, &fields, version);
    match (who, record_type) {
        (Coordinator::Groups, 2) => decode_consumer_protocol(&mut data),
        (Coordinator::Transactions, 0) => name_transaction_state(&mut data),
        _ => {}
    }
    let value_json = Json::Object(vec![("version", Json::Text(version.to_string())), ("data", data)]);
    Ok((key_json.to_string(), value_json.to_string()))
}

/// Group metadata of protocol type `consumer`: each member's subscription and assignment bytes replaced by
/// their JSON, read at the version in their first two bytes; bytes that do not read stay base64.
fn decode_consumer_protocol(data: &mut Json) {
    if data.get_mut("protocolType") != Some(&mut Json::Text("consumer".to_owned())) {
        return;
    }
    let Some(Json::Array(members)) = data.get_mut("members") else { return };
    for member in members {
        for (field, schema) in
            [("subscription", &CONSUMER_PROTOCOL_SUBSCRIPTION), ("assignment", &CONSUMER_PROTOCOL_ASSIGNMENT)]
        {
            let Some(slot) = member.get_mut(field) else { continue };
            let Json::Binary(bytes) = slot else { continue };
            let mut r = Reader::new(bytes);
            let Ok(version) = r.i16() else { continue };
            if let Ok(fields) = read_fields(schema, &mut r, version) {
                *slot = to_json(schema, &fields, version);
            }
        }
    }
}

/// `TransactionState.fromId(id).stateName()` in place of the status byte; an id without a state prints as
/// its number in a string.
fn name_transaction_state(data: &mut Json) {
    let Some(slot) = data.get_mut("transactionStatus") else { return };
    let Json::Int(id) = *slot else { return };
    let name = match id {
        0 => "Empty",
        1 => "Ongoing",
        2 => "PrepareCommit",
        3 => "PrepareAbort",
        4 => "CompleteCommit",
        5 => "CompleteAbort",
        6 => "Dead",
        7 => "PrepareEpochFence",
        _ => {
            *slot = Json::Text(id.to_string());
            return;
        }
    };
    *slot = Json::Text(name.to_owned());
}

pub(crate) const LEGACY_OFFSET_COMMIT_KEY: Message = named("LegacyOffsetCommitKey", OFFSET_COMMIT_KEY_SHAPE);

pub(crate) const LEGACY_OFFSET_COMMIT_VALUE: Message = Message {
    name: "LegacyOffsetCommitValue",
    valid: range(0, 0),
    flexible: NONE,
    fields: &[
        F::new("offset", T::Int64, range(0, 0)),
        F::new("metadata", T::Str, range(0, 0)),
        F::new("commitTimestamp", T::Int64, range(0, 0)),
    ],
};

pub(crate) const OFFSET_COMMIT_KEY: Message = named("OffsetCommitKey", OFFSET_COMMIT_KEY_SHAPE);

pub(crate) const OFFSET_COMMIT_VALUE: Message = Message {
    name: "OffsetCommitValue",
    valid: range(0, 4),
    flexible: from(4),
    fields: &[
        F::new("offset", T::Int64, from(0)),
        F::new("leaderEpoch", T::Int32, from(3)).default(D::Int(-1)),
        F::new("metadata", T::Str, from(0)),
        F::new("commitTimestamp", T::Int64, from(0)),
        F::new("expireTimestamp", T::Int64, range(1, 1)).default(D::Int(-1)),
        F::new("topicId", T::Uuid, from(4)).tagged(0, from(4)),
    ],
};

pub(crate) const GROUP_METADATA_KEY: Message = Message {
    name: "GroupMetadataKey",
    valid: range(0, 0),
    flexible: NONE,
    fields: &[F::new("group", T::Str, range(0, 0))],
};

pub(crate) const GROUP_METADATA_VALUE: Message = Message {
    name: "GroupMetadataValue",
    valid: range(0, 4),
    flexible: from(4),
    fields: &[
        F::new("protocolType", T::Str, from(0)),
        F::new("generation", T::Int32, from(0)),
        F::new("protocol", T::Str, from(0)).nullable(from(0)),
        F::new("leader", T::Str, from(0)).nullable(from(0)),
        F::new("currentStateTimestamp", T::Int64, from(2)).default(D::Int(-1)),
        F::new(
            "members",
            T::Array(&T::Struct(&[
                F::new("memberId", T::Str, from(0)),
                F::new("groupInstanceId", T::Str, from(3)).nullable(from(3)).default(D::Null),
                F::new("clientId", T::Str, from(0)),
                F::new("clientHost", T::Str, from(0)),
                F::new("rebalanceTimeout", T::Int32, from(1)).default(D::Int(-1)),
                F::new("sessionTimeout", T::Int32, from(0)),
                F::new("subscription", T::Bytes, from(0)),
                F::new("assignment", T::Bytes, from(0)),
            ])),
            from(0),
        ),
    ],
};

pub(crate) const CONSUMER_GROUP_METADATA_KEY: Message = named("ConsumerGroupMetadataKey", GROUP_KEY);

pub(crate) const CONSUMER_GROUP_METADATA_VALUE: Message = Message {
    name: "ConsumerGroupMetadataValue",
    valid: range(0, 0),
    flexible: from(0),
    fields: &[F::new("epoch", T::Int32, from(0)), F::new("metadataHash", T::Int64, from(0)).tagged(0, from(0))],
};

pub(crate) const CONSUMER_GROUP_PARTITION_METADATA_KEY: Message = named("ConsumerGroupPartitionMetadataKey", GROUP_KEY);

pub(crate) const CONSUMER_GROUP_PARTITION_METADATA_VALUE: Message = Message {
    name: "ConsumerGroupPartitionMetadataValue",
    valid: range(0, 0),
    flexible: from(0),
    fields: &[F::new(
        "topics",
        T::Array(&T::Struct(&[
            F::new("topicId", T::Uuid, from(0)),
            F::new("topicName", T::Str, from(0)),
            F::new("numPartitions", T::Int32, from(0)),
            F::new(
                "partitionMetadata",
                T::Array(&T::Struct(&[
                    F::new("partition", T::Int32, from(0)),
                    F::new("racks", T::Array(&T::Str), from(0)),
                ])),
                from(0),
            ),
        ])),
        from(0),
    )],
};

pub(crate) const CONSUMER_GROUP_MEMBER_METADATA_KEY: Message =
    named("ConsumerGroupMemberMetadataKey", GROUP_MEMBER_KEY);

pub(crate) const CONSUMER_GROUP_MEMBER_METADATA_VALUE: Message = Message {
    name: "ConsumerGroupMemberMetadataValue",
    valid: range(0, 0),
    flexible: from(0),
    fields: &[
        F::new("instanceId", T::Str, from(0)).nullable(from(0)),
        F::new("rackId", T::Str, from(0)).nullable(from(0)),
        F::new("clientId", T::Str, from(0)),
        F::new("clientHost", T::Str, from(0)),
        F::new("subscribedTopicNames", T::Array(&T::Str), from(0)),
        F::new("subscribedTopicRegex", T::Str, from(0)).nullable(from(0)),
        F::new("rebalanceTimeoutMs", T::Int32, from(0)).default(D::Int(-1)),
        F::new("serverAssignor", T::Str, from(0)).nullable(from(0)),
        F::new(
            "classicMemberMetadata",
            T::Struct(&[
                F::new("sessionTimeoutMs", T::Int32, from(0)),
                F::new(
                    "supportedProtocols",
                    T::Array(&T::Struct(&[F::new("name", T::Str, from(0)), F::new("metadata", T::Bytes, from(0))])),
                    from(0),
                ),
            ]),
            from(0),
        )
        .nullable(from(0))
        .tagged(0, from(0)),
    ],
};

pub(crate) const CONSUMER_GROUP_TARGET_ASSIGNMENT_METADATA_KEY: Message =
    named("ConsumerGroupTargetAssignmentMetadataKey", GROUP_KEY);

pub(crate) const CONSUMER_GROUP_TARGET_ASSIGNMENT_METADATA_VALUE: Message =
    named("ConsumerGroupTargetAssignmentMetadataValue", TARGET_ASSIGNMENT_METADATA_VALUE);

pub(crate) const CONSUMER_GROUP_TARGET_ASSIGNMENT_MEMBER_KEY: Message =
    named("ConsumerGroupTargetAssignmentMemberKey", GROUP_MEMBER_KEY);

pub(crate) const CONSUMER_GROUP_TARGET_ASSIGNMENT_MEMBER_VALUE: Message =
    named("ConsumerGroupTargetAssignmentMemberValue", TARGET_ASSIGNMENT_MEMBER_VALUE);

pub(crate) const CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT_KEY: Message =
    named("ConsumerGroupCurrentMemberAssignmentKey", GROUP_MEMBER_KEY);

pub(crate) const CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT_VALUE: Message = Message {
    name: "ConsumerGroupCurrentMemberAssignmentValue",
    valid: range(0, 0),
    flexible: from(0),
    fields: &[
        F::new("memberEpoch", T::Int32, from(0)),
        F::new("previousMemberEpoch", T::Int32, from(0)),
        F::new("state", T::Int8, from(0)),
        F::new("assignedPartitions", TOPIC_PARTITIONS_WITH_EPOCHS, from(0)),
        F::new("partitionsPendingRevocation", TOPIC_PARTITIONS_WITH_EPOCHS, from(0)),
    ],
};

pub(crate) const SHARE_GROUP_MEMBER_METADATA_KEY: Message = named("ShareGroupMemberMetadataKey", GROUP_MEMBER_KEY);

pub(crate) const SHARE_GROUP_MEMBER_METADATA_VALUE: Message = Message {
    name: "ShareGroupMemberMetadataValue",
    valid: range(0, 0),
    flexible: from(0),
    fields: &[
        F::new("rackId", T::Str, from(0)).nullable(from(0)),
        F::new("clientId", T::Str, from(0)),
        F::new("clientHost", T::Str, from(0)),
        F::new("subscribedTopicNames", T::Array(&T::Str), from(0)),
    ],
};

pub(crate) const SHARE_GROUP_METADATA_KEY: Message = named("ShareGroupMetadataKey", GROUP_KEY);

pub(crate) const SHARE_GROUP_METADATA_VALUE: Message = Message {
    name: "ShareGroupMetadataValue",
    valid: range(0, 0),
    flexible: from(0),
    fields: &[F::new("epoch", T::Int32, from(0)), F::new("metadataHash", T::Int64, from(0))],
};

pub(crate) const SHARE_GROUP_TARGET_ASSIGNMENT_METADATA_KEY: Message =
    named("ShareGroupTargetAssignmentMetadataKey", GROUP_KEY);

pub(crate) const SHARE_GROUP_TARGET_ASSIGNMENT_METADATA_VALUE: Message =
    named("ShareGroupTargetAssignmentMetadataValue", TARGET_ASSIGNMENT_METADATA_VALUE);

pub(crate) const SHARE_GROUP_TARGET_ASSIGNMENT_MEMBER_KEY: Message =
    named("ShareGroupTargetAssignmentMemberKey", GROUP_MEMBER_KEY);

pub(crate) const SHARE_GROUP_TARGET_ASSIGNMENT_MEMBER_VALUE: Message =
    named("ShareGroupTargetAssignmentMemberValue", TARGET_ASSIGNMENT_MEMBER_VALUE);

pub(crate) const SHARE_GROUP_CURRENT_MEMBER_ASSIGNMENT_KEY: Message =
    named("ShareGroupCurrentMemberAssignmentKey", GROUP_MEMBER_KEY);

pub(crate) const SHARE_GROUP_CURRENT_MEMBER_ASSIGNMENT_VALUE: Message = Message {
    name: "ShareGroupCurrentMemberAssignmentValue",
    valid: range(0, 0),
    flexible: from(0),
    fields: &[
        F::new("memberEpoch", T::Int32, from(0)),
        F::new("previousMemberEpoch", T::Int32, from(0)),
        F::new("state", T::Int8, from(0)),
        F::new("assignedPartitions", TOPIC_PARTITIONS, from(0)),
    ],
};

pub(crate) const SHARE_GROUP_STATE_PARTITION_METADATA_KEY: Message =
    named("ShareGroupStatePartitionMetadataKey", GROUP_KEY);

pub(crate) const SHARE_GROUP_STATE_PARTITION_METADATA_VALUE: Message = Message {
    name: "ShareGroupStatePartitionMetadataValue",
    valid: range(0, 0),
    flexible: from(0),
    fields: &[
        F::new("initializingTopics", NAMED_TOPIC_PARTITIONS, from(0)),
        F::new("initializedTopics", NAMED_TOPIC_PARTITIONS, from(0)),
        F::new(
            "deletingTopics",
            T::Array(&T::Struct(&[F::new("topicId", T::Uuid, from(0)), F::new("topicName", T::Str, from(0))])),
            from(0),
        ),
    ],
};

pub(crate) const CONSUMER_GROUP_REGULAR_EXPRESSION_KEY: Message = Message {
    name: "ConsumerGroupRegularExpressionKey",
    valid: range(0, 0),
    flexible: NONE,
    fields: &[F::new("groupId", T::Str, range(0, 0)), F::new("regularExpression", T::Str, range(0, 0))],
};

pub(crate) const CONSUMER_GROUP_REGULAR_EXPRESSION_VALUE: Message = Message {
    name: "ConsumerGroupRegularExpressionValue",
    valid: range(0, 0),
    flexible: from(0),
    fields: &[
        F::new("topics", T::Array(&T::Str), from(0)),
        F::new("version", T::Int64, from(0)),
        F::new("timestamp", T::Int64, from(0)),
    ],
};

pub(crate) const STREAMS_GROUP_METADATA_KEY: Message = named("StreamsGroupMetadataKey", GROUP_KEY);

pub(crate) const STREAMS_GROUP_METADATA_VALUE: Message = Message {
    name: "StreamsGroupMetadataValue",
    valid: range(0, 0),
    flexible: from(0),
    fields: &[
        F::new("epoch", T::Int32, from(0)),
        F::new("metadataHash", T::Int64, from(0)),
        F::new("validatedTopologyEpoch", T::Int32, from(0)).tagged(0, from(0)).default(D::Int(-1)),
        F::new("lastAssignmentConfigs", KEY_VALUES, from(0)).nullable(from(0)).tagged(1, from(0)),
        F::new("storedDescriptionTopologyEpoch", T::Int32, from(0)).tagged(2, from(0)).default(D::Int(-1)),
        F::new("failedDescriptionTopologyEpoch", T::Int32, from(0)).tagged(3, from(0)).default(D::Int(-1)),
    ],
};

pub(crate) const STREAMS_GROUP_MEMBER_METADATA_KEY: Message = named("StreamsGroupMemberMetadataKey", GROUP_MEMBER_KEY);

pub(crate) const STREAMS_GROUP_MEMBER_METADATA_VALUE: Message = Message {
    name: "StreamsGroupMemberMetadataValue",
    valid: range(0, 0),
    flexible: from(0),
    fields: &[
        F::new("instanceId", T::Str, from(0)).nullable(from(0)),
        F::new("rackId", T::Str, from(0)).nullable(from(0)),
        F::new("clientId", T::Str, from(0)),
        F::new("clientHost", T::Str, from(0)),
        F::new("rebalanceTimeoutMs", T::Int32, from(0)).default(D::Int(-1)),
        F::new("topologyEpoch", T::Int32, from(0)),
        F::new("processId", T::Str, from(0)),
        F::new(
            "userEndpoint",
            T::Struct(&[F::new("host", T::Str, from(0)), F::new("port", T::Uint16, from(0))]),
            from(0),
        )
        .nullable(from(0))
        .default(D::Null),
        F::new("clientTags", KEY_VALUES, from(0)),
    ],
};

pub(crate) const STREAMS_GROUP_TARGET_ASSIGNMENT_METADATA_KEY: Message =
    named("StreamsGroupTargetAssignmentMetadataKey", GROUP_KEY);

pub(crate) const STREAMS_GROUP_TARGET_ASSIGNMENT_METADATA_VALUE: Message =
    named("StreamsGroupTargetAssignmentMetadataValue", TARGET_ASSIGNMENT_METADATA_VALUE);

pub(crate) const STREAMS_GROUP_TARGET_ASSIGNMENT_MEMBER_KEY: Message =
    named("StreamsGroupTargetAssignmentMemberKey", GROUP_MEMBER_KEY);

pub(crate) const STREAMS_GROUP_TARGET_ASSIGNMENT_MEMBER_VALUE: Message = Message {
    name: "StreamsGroupTargetAssignmentMemberValue",
    valid: range(0, 0),
    flexible: from(0),
    fields: &[
        F::new("activeTasks", TASK_IDS, from(0)),
        F::new("standbyTasks", TASK_IDS, from(0)),
        F::new("warmupTasks", TASK_IDS, from(0)),
    ],
};

pub(crate) const STREAMS_GROUP_CURRENT_MEMBER_ASSIGNMENT_KEY: Message =
    named("StreamsGroupCurrentMemberAssignmentKey", GROUP_MEMBER_KEY);

pub(crate) const STREAMS_GROUP_CURRENT_MEMBER_ASSIGNMENT_VALUE: Message = Message {
    name: "StreamsGroupCurrentMemberAssignmentValue",
    valid: range(0, 0),
    flexible: from(0),
    fields: &[
        F::new("memberEpoch", T::Int32, from(0)),
        F::new("previousMemberEpoch", T::Int32, from(0)),
        F::new("state", T::Int8, from(0)),
        F::new("activeTasks", TASK_IDS_WITH_EPOCHS, from(0)),
        F::new("standbyTasks", TASK_IDS_WITH_EPOCHS, from(0)),
        F::new("warmupTasks", TASK_IDS_WITH_EPOCHS, from(0)),
        F::new("activeTasksPendingRevocation", TASK_IDS_WITH_EPOCHS, from(0)),
        F::new("standbyTasksPendingRevocation", TASK_IDS_WITH_EPOCHS, from(0)),
        F::new("warmupTasksPendingRevocation", TASK_IDS_WITH_EPOCHS, from(0)),
    ],
};

pub(crate) const STREAMS_GROUP_TOPOLOGY_KEY: Message = named("StreamsGroupTopologyKey", GROUP_KEY);

pub(crate) const STREAMS_GROUP_TOPOLOGY_VALUE: Message = Message {
    name: "StreamsGroupTopologyValue",
    valid: range(0, 0),
    flexible: from(0),
    fields: &[
        F::new("epoch", T::Int32, from(0)),
        F::new(
            "subtopologies",
            T::Array(&T::Struct(&[
                F::new("subtopologyId", T::Str, from(0)),
                F::new("sourceTopics", T::Array(&T::Str), from(0)),
                F::new("sourceTopicRegex", T::Array(&T::Str), from(0)),
                F::new("stateChangelogTopics", TOPIC_INFOS, from(0)),
                F::new("repartitionSinkTopics", T::Array(&T::Str), from(0)),
                F::new("repartitionSourceTopics", TOPIC_INFOS, from(0)),
                F::new(
                    "copartitionGroups",
                    T::Array(&T::Struct(&[
                        F::new("sourceTopics", T::Array(&T::Int16), from(0)),
                        F::new("sourceTopicRegex", T::Array(&T::Int16), from(0)),
                        F::new("repartitionSourceTopics", T::Array(&T::Int16), from(0)),
                    ])),
                    from(0),
                ),
            ])),
            from(0),
        ),
    ],
};

/// The record types of `__consumer_offsets` (the group coordinator): type id (the key's version), key and value schemas.
pub(crate) const GROUP_RECORDS: &[(i16, &Message, &Message)] = &[
    (0, &LEGACY_OFFSET_COMMIT_KEY, &LEGACY_OFFSET_COMMIT_VALUE),
    (1, &OFFSET_COMMIT_KEY, &OFFSET_COMMIT_VALUE),
    (2, &GROUP_METADATA_KEY, &GROUP_METADATA_VALUE),
    (3, &CONSUMER_GROUP_METADATA_KEY, &CONSUMER_GROUP_METADATA_VALUE),
    (4, &CONSUMER_GROUP_PARTITION_METADATA_KEY, &CONSUMER_GROUP_PARTITION_METADATA_VALUE),
    (5, &CONSUMER_GROUP_MEMBER_METADATA_KEY, &CONSUMER_GROUP_MEMBER_METADATA_VALUE),
    (6, &CONSUMER_GROUP_TARGET_ASSIGNMENT_METADATA_KEY, &CONSUMER_GROUP_TARGET_ASSIGNMENT_METADATA_VALUE),
    (7, &CONSUMER_GROUP_TARGET_ASSIGNMENT_MEMBER_KEY, &CONSUMER_GROUP_TARGET_ASSIGNMENT_MEMBER_VALUE),
    (8, &CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT_KEY, &CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT_VALUE),
    (10, &SHARE_GROUP_MEMBER_METADATA_KEY, &SHARE_GROUP_MEMBER_METADATA_VALUE),
    (11, &SHARE_GROUP_METADATA_KEY, &SHARE_GROUP_METADATA_VALUE),
    (12, &SHARE_GROUP_TARGET_ASSIGNMENT_METADATA_KEY, &SHARE_GROUP_TARGET_ASSIGNMENT_METADATA_VALUE),
    (13, &SHARE_GROUP_TARGET_ASSIGNMENT_MEMBER_KEY, &SHARE_GROUP_TARGET_ASSIGNMENT_MEMBER_VALUE),
    (14, &SHARE_GROUP_CURRENT_MEMBER_ASSIGNMENT_KEY, &SHARE_GROUP_CURRENT_MEMBER_ASSIGNMENT_VALUE),
    (15, &SHARE_GROUP_STATE_PARTITION_METADATA_KEY, &SHARE_GROUP_STATE_PARTITION_METADATA_VALUE),
    (16, &CONSUMER_GROUP_REGULAR_EXPRESSION_KEY, &CONSUMER_GROUP_REGULAR_EXPRESSION_VALUE),
    (17, &STREAMS_GROUP_METADATA_KEY, &STREAMS_GROUP_METADATA_VALUE),
    (19, &STREAMS_GROUP_MEMBER_METADATA_KEY, &STREAMS_GROUP_MEMBER_METADATA_VALUE),
    (20, &STREAMS_GROUP_TARGET_ASSIGNMENT_METADATA_KEY, &STREAMS_GROUP_TARGET_ASSIGNMENT_METADATA_VALUE),
    (21, &STREAMS_GROUP_TARGET_ASSIGNMENT_MEMBER_KEY, &STREAMS_GROUP_TARGET_ASSIGNMENT_MEMBER_VALUE),
    (22, &STREAMS_GROUP_CURRENT_MEMBER_ASSIGNMENT_KEY, &STREAMS_GROUP_CURRENT_MEMBER_ASSIGNMENT_VALUE),
    (23, &STREAMS_GROUP_TOPOLOGY_KEY, &STREAMS_GROUP_TOPOLOGY_VALUE),
];

pub(crate) const TRANSACTION_LOG_KEY: Message = Message {
    name: "TransactionLogKey",
    valid: range(0, 0),
    flexible: NONE,
    fields: &[F::new("transactionalId", T::Str, range(0, 0))],
};

pub(crate) const TRANSACTION_LOG_VALUE: Message = Message {
    name: "TransactionLogValue",
    valid: range(0, 1),
    flexible: from(1),
    fields: &[
        F::new("producerId", T::Int64, from(0)),
        F::new("previousProducerId", T::Int64, from(1)).tagged(0, from(1)).default(D::Int(-1)),
        F::new("nextProducerId", T::Int64, from(1)).tagged(1, from(1)).default(D::Int(-1)),
        F::new("producerEpoch", T::Int16, from(0)),
        F::new("nextProducerEpoch", T::Int16, from(1)).tagged(3, from(1)).default(D::Int(-1)),
        F::new("transactionTimeoutMs", T::Int32, from(0)),
        F::new("transactionStatus", T::Int8, from(0)),
        F::new(
            "transactionPartitions",
            T::Array(&T::Struct(&[
                F::new("topic", T::Str, from(0)),
                F::new("partitionIds", T::Array(&T::Int32), from(0)),
            ])),
            from(0),
        )
        .nullable(from(0)),
        F::new("transactionLastUpdateTimestampMs", T::Int64, from(0)),
        F::new("transactionStartTimestampMs", T::Int64, from(0)),
        F::new("clientTransactionVersion", T::Int16, from(1)).tagged(2, from(1)),
    ],
};

/// The record types of `__transaction_state` (the transaction coordinator): type id (the key's version), key and value schemas.
pub(crate) const TRANSACTION_RECORDS: &[(i16, &Message, &Message)] =
    &[(0, &TRANSACTION_LOG_KEY, &TRANSACTION_LOG_VALUE)];

pub(crate) const SHARE_SNAPSHOT_KEY: Message = named("ShareSnapshotKey", SHARE_PARTITION_KEY);

pub(crate) const SHARE_SNAPSHOT_VALUE: Message = Message {
    name: "ShareSnapshotValue",
    valid: range(0, 0),
    flexible: from(0),
    fields: &[
        F::new("snapshotEpoch", T::Int32, from(0)),
        F::new("stateEpoch", T::Int32, from(0)),
        F::new("leaderEpoch", T::Int32, from(0)),
        F::new("startOffset", T::Int64, from(0)),
        F::new("deliveryCompleteCount", T::Int32, from(0)).tagged(0, from(0)).default(D::Int(-1)),
        F::new("createTimestamp", T::Int64, from(0)),
        F::new("writeTimestamp", T::Int64, from(0)),
        F::new("stateBatches", DELIVERY_STATES, from(0)),
    ],
};

pub(crate) const SHARE_UPDATE_KEY: Message = named("ShareUpdateKey", SHARE_PARTITION_KEY);

pub(crate) const SHARE_UPDATE_VALUE: Message = Message {
    name: "ShareUpdateValue",
    valid: range(0, 0),
    flexible: from(0),
    fields: &[
        F::new("snapshotEpoch", T::Int32, from(0)),
        F::new("leaderEpoch", T::Int32, from(0)),
        F::new("startOffset", T::Int64, from(0)),
        F::new("deliveryCompleteCount", T::Int32, from(0)).tagged(0, from(0)).default(D::Int(-1)),
        F::new("stateBatches", DELIVERY_STATES, from(0)),
    ],
};

/// The record types of `__share_group_state` (the share coordinator): type id (the key's version), key and value schemas.
pub(crate) const SHARE_RECORDS: &[(i16, &Message, &Message)] =
    &[(0, &SHARE_SNAPSHOT_KEY, &SHARE_SNAPSHOT_VALUE), (1, &SHARE_UPDATE_KEY, &SHARE_UPDATE_VALUE)];

pub(crate) const CONSUMER_PROTOCOL_SUBSCRIPTION: Message = Message {
    name: "ConsumerProtocolSubscription",
    valid: range(0, 3),
    flexible: NONE,
    fields: &[
        F::new("topics", T::Array(&T::Str), from(0)),
        F::new("userData", T::Bytes, from(0)).nullable(from(0)).default(D::Null),
        F::new(
            "ownedPartitions",
            T::Array(&T::Struct(&[
                F::new("topic", T::Str, from(1)),
                F::new("partitions", T::Array(&T::Int32), from(1)),
            ])),
            from(1),
        ),
        F::new("generationId", T::Int32, from(2)).default(D::Int(-1)),
        F::new("rackId", T::Str, from(3)).nullable(from(3)).default(D::Null),
    ],
};

pub(crate) const CONSUMER_PROTOCOL_ASSIGNMENT: Message = Message {
    name: "ConsumerProtocolAssignment",
    valid: range(0, 3),
    flexible: NONE,
    fields: &[
        F::new(
            "assignedPartitions",
            T::Array(&T::Struct(&[
                F::new("topic", T::Str, from(0)),
                F::new("partitions", T::Array(&T::Int32), from(0)),
            ])),
            from(0),
        ),
        F::new("userData", T::Bytes, from(0)).nullable(from(0)).default(D::Null),
    ],
};
