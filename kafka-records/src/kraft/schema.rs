//! The records of Kafka 4.4's KRaft metadata log (`__cluster_metadata`), described field by field for every
//! version ([`RECORD_TYPES`]: api key, `MetadataRecordType` name, schema), and the raft control records
//! (LeaderChange, SnapshotHeader, SnapshotFooter, KRaftVersion, KRaftVoters) that share its segments and
//! snapshots. [`metadata_record_json`] decodes a record value as
//! `kafka-dump-log.sh --cluster-metadata-decoder` prints it, and [`control_record_json`] a control record's
//! value as the tool prints it after the record's metadata.
//!
//! Framing (`AbstractApiMessageSerde`): a value is `frame version (uvarint, 1)`, `api key (uvarint)`,
//! `version (uvarint)`, then the message body at that version; every metadata schema is flexible in every
//! version. The tables restate, in this crate's terms, the field names, types, versions, tags and defaults of
//! the schema files shipped in Kafka 4.4.0's jars (`kafka-metadata`, `kafka-clients`); field names are the
//! schema's with the first letter in lower case, as Kafka's JSON prints them.
//!
//! Invariant: decoding reads only the value given and never fails other than with the message Kafka's own
//! reader would give for the same bytes.
//!
//! ```
//! // A NoOpRecord: frame 1, api key 20, version 0, no tagged fields.
//! assert_eq!(
//!     kafka_records::kraft::schema::metadata_record_json(&[1, 20, 0, 0]).unwrap(),
//!     r#"{"type":"NO_OP_RECORD","version":0,"data":{}}"#
//! );
//! ```

use crate::message_schema::{D, F, Json, Message, T, from, range, read, read_fields, to_json};
use crate::wire::{Reader, WireError};

// The struct shapes several records share, named once.

/// A node's listeners: name, host, port and security protocol.
const ENDPOINTS: T = T::Array(&T::Struct(&[
    F::new("name", T::Str, from(0)),
    F::new("host", T::Str, from(0)),
    F::new("port", T::Uint16, from(0)),
    F::new("securityProtocol", T::Int16, from(0)),
]));
/// The features a node supports, each with its range of versions.
const FEATURES: T = T::Array(&T::Struct(&[
    F::new("name", T::Str, from(0)),
    F::new("minSupportedVersion", T::Int16, from(0)),
    F::new("maxSupportedVersion", T::Int16, from(0)),
]));
/// Raft voters by id and directory id.
const VOTERS: T =
    T::Array(&T::Struct(&[F::new("voterId", T::Int32, from(0)), F::new("voterDirectoryId", T::Uuid, from(1))]));

/// The message a metadata record of `api_key` holds, with its `MetadataRecordType` name.
pub fn record_type(api_key: u16) -> Option<(&'static str, &'static Message)> {
    RECORD_TYPES.iter().find(|(k, _, _)| *k == api_key).map(|(_, name, m)| (*name, *m))
}

/// `AbstractApiMessageSerde.unsignedIntToShort`: an unsigned varint that must fit a `short`.
fn frame_short(r: &mut Reader<'_>, what: &str) -> Result<i16, String> {
    let value = r.unsigned_varint().map_err(|_| format!("Error while reading {what}"))? as i32;
    if value > i32::from(i16::MAX) {
        return Err(format!("Value for {what} was too large."));
    }
    Ok(value as i16)
}

/// A metadata record's value as `--cluster-metadata-decoder` prints it:
/// `{"type":"TOPIC_RECORD","version":0,"data":{...}}`.
///
/// # Errors
/// The message of the exception Kafka's `MetadataRecordSerde` throws (the tool prints it after
/// `Error at OFFSET, skipping. `).
pub fn metadata_record_json(value: &[u8]) -> Result<String, String> {
    let mut r = Reader::new(value);
    let frame = frame_short(&mut r, "frame version")?;
    if frame == 0 {
        return Err("Could not deserialize metadata record with frame version 0. Note that upgrades from the \
                    preview release of KRaft in 2.8 to newer versions are not supported."
            .to_owned());
    }
    if frame != 1 {
        return Err(format!(
            "Could not deserialize metadata record due to unknown frame version {frame}(only frame version 1 is \
             supported)"
        ));
    }
    let api_key = frame_short(&mut r, "type")?;
    let version = frame_short(&mut r, "version")?;
    let Some((name, message)) = u16::try_from(api_key).ok().and_then(record_type) else {
        return Err(format!(
            "org.apache.kafka.common.errors.UnsupportedVersionException: Unknown metadata id {api_key}"
        ));
    };
    let data =
        read(message, &mut r, version).map_err(|_| format!("Failed to deserialize record with type {api_key}"))?;
    if r.remaining() > 0 {
        return Err(format!("Found {} byte(s) of garbage after {api_key}", r.remaining()));
    }
    let json = Json::Object(vec![
        ("type", Json::Text(name.to_owned())),
        ("version", Json::Int(i64::from(version))),
        ("data", data),
    ]);
    Ok(json.to_string())
}

/// The raft control records Kafka's tool prints in full, by their key's type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ControlRecord {
    /// Type 2: `LeaderChange: {...}`.
    LeaderChange,
    /// Type 3: `SnapshotHeader {...}`.
    SnapshotHeader,
    /// Type 4: `SnapshotFooter {...}`.
    SnapshotFooter,
    /// Type 5: `KRaftVersion {...}`.
    KRaftVersion,
    /// Type 6: `KRaftVoters {...}`.
    KRaftVoters,
}

impl ControlRecord {
    /// The record of control type `id`, if it is one of these.
    pub fn from_type(id: i16) -> Option<ControlRecord> {
        Some(match id {
            2 => ControlRecord::LeaderChange,
            3 => ControlRecord::SnapshotHeader,
            4 => ControlRecord::SnapshotFooter,
            5 => ControlRecord::KRaftVersion,
            6 => ControlRecord::KRaftVoters,
            _ => return None,
        })
    }

    /// What the tool prints before the JSON (after a space).
    pub fn label(self) -> &'static str {
        match self {
            ControlRecord::LeaderChange => "LeaderChange:",
            ControlRecord::SnapshotHeader => "SnapshotHeader",
            ControlRecord::SnapshotFooter => "SnapshotFooter",
            ControlRecord::KRaftVersion => "KRaftVersion",
            ControlRecord::KRaftVoters => "KRaftVoters",
        }
    }

    fn message(self) -> &'static Message {
        match self {
            ControlRecord::LeaderChange => &LEADER_CHANGE_MESSAGE,
            ControlRecord::SnapshotHeader => &SNAPSHOT_HEADER_RECORD,
            ControlRecord::SnapshotFooter => &SNAPSHOT_FOOTER_RECORD,
            ControlRecord::KRaftVersion => &KRAFT_VERSION_RECORD,
            ControlRecord::KRaftVoters => &VOTERS_RECORD,
        }
    }
}

/// A control record's value as the tool prints it: read at version 0 (`ControlRecordUtils`), written at the
/// version its own `version` field holds.
///
/// # Errors
/// What Kafka's reader throws on these bytes.
pub fn control_record_json(kind: ControlRecord, value: &[u8]) -> Result<String, WireError> {
    let message = kind.message();
    let mut fields = read_fields(message, &mut Reader::new(value), 0)?;
    let version = match fields.get_mut("version") {
        Some(Json::Int(v)) => *v as i16,
        _ => 0,
    };
    Ok(to_json(message, &fields, version).to_string())
}

pub(crate) const REGISTER_BROKER_RECORD: Message = Message {
    name: "RegisterBrokerRecord",
    valid: range(0, 4),
    flexible: from(0),
    fields: &[
        F::new("brokerId", T::Int32, from(0)),
        F::new("isMigratingZkBroker", T::Bool, from(2)).default(D::Bool(false)),
        F::new("incarnationId", T::Uuid, from(0)),
        F::new("brokerEpoch", T::Int64, from(0)),
        F::new("endPoints", ENDPOINTS, from(0)),
        F::new("features", FEATURES, from(0)),
        F::new("rack", T::Str, from(0)).nullable(from(0)),
        F::new("fenced", T::Bool, from(0)).default(D::Bool(true)),
        F::new("inControlledShutdown", T::Bool, from(1)).default(D::Bool(false)),
        F::new("logDirs", T::Array(&T::Uuid), from(3)).tagged(0, from(3)),
        F::new("cordonedLogDirs", T::Array(&T::Uuid), from(4)).nullable(from(4)).tagged(1, from(4)).default(D::Null),
    ],
};

pub(crate) const UNREGISTER_BROKER_RECORD: Message = Message {
    name: "UnregisterBrokerRecord",
    valid: range(0, 0),
    flexible: from(0),
    fields: &[F::new("brokerId", T::Int32, from(0)), F::new("brokerEpoch", T::Int64, from(0))],
};

pub(crate) const TOPIC_RECORD: Message = Message {
    name: "TopicRecord",
    valid: range(0, 0),
    flexible: from(0),
    fields: &[F::new("name", T::Str, from(0)), F::new("topicId", T::Uuid, from(0))],
};

pub(crate) const PARTITION_RECORD: Message = Message {
    name: "PartitionRecord",
    valid: range(0, 2),
    flexible: from(0),
    fields: &[
        F::new("partitionId", T::Int32, from(0)).default(D::Int(-1)),
        F::new("topicId", T::Uuid, from(0)),
        F::new("replicas", T::Array(&T::Int32), from(0)),
        F::new("isr", T::Array(&T::Int32), from(0)),
        F::new("removingReplicas", T::Array(&T::Int32), from(0)),
        F::new("addingReplicas", T::Array(&T::Int32), from(0)),
        F::new("leader", T::Int32, from(0)).default(D::Int(-1)),
        F::new("leaderRecoveryState", T::Int8, from(0)).tagged(0, from(0)),
        F::new("leaderEpoch", T::Int32, from(0)).default(D::Int(-1)),
        F::new("partitionEpoch", T::Int32, from(0)).default(D::Int(-1)),
        F::new("directories", T::Array(&T::Uuid), from(1)),
        F::new("eligibleLeaderReplicas", T::Array(&T::Int32), from(2))
            .nullable(from(2))
            .tagged(1, from(2))
            .default(D::Null),
        F::new("lastKnownElr", T::Array(&T::Int32), from(2)).nullable(from(2)).tagged(2, from(2)).default(D::Null),
    ],
};

pub(crate) const CONFIG_RECORD: Message = Message {
    name: "ConfigRecord",
    valid: range(0, 0),
    flexible: from(0),
    fields: &[
        F::new("resourceType", T::Int8, from(0)),
        F::new("resourceName", T::Str, from(0)),
        F::new("name", T::Str, from(0)),
        F::new("value", T::Str, from(0)).nullable(from(0)),
    ],
};

pub(crate) const PARTITION_CHANGE_RECORD: Message = Message {
    name: "PartitionChangeRecord",
    valid: range(0, 2),
    flexible: from(0),
    fields: &[
        F::new("partitionId", T::Int32, from(0)).default(D::Int(-1)),
        F::new("topicId", T::Uuid, from(0)),
        F::new("isr", T::Array(&T::Int32), from(0)).nullable(from(0)).tagged(0, from(0)).default(D::Null),
        F::new("leader", T::Int32, from(0)).tagged(1, from(0)).default(D::Int(-2)),
        F::new("replicas", T::Array(&T::Int32), from(0)).nullable(from(0)).tagged(2, from(0)).default(D::Null),
        F::new("removingReplicas", T::Array(&T::Int32), from(0)).nullable(from(0)).tagged(3, from(0)).default(D::Null),
        F::new("addingReplicas", T::Array(&T::Int32), from(0)).nullable(from(0)).tagged(4, from(0)).default(D::Null),
        F::new("leaderRecoveryState", T::Int8, from(0)).tagged(5, from(0)).default(D::Int(-1)),
        F::new("directories", T::Array(&T::Uuid), from(1)).nullable(from(1)).tagged(8, from(1)).default(D::Null),
        F::new("eligibleLeaderReplicas", T::Array(&T::Int32), from(2))
            .nullable(from(2))
            .tagged(6, from(2))
            .default(D::Null),
        F::new("lastKnownElr", T::Array(&T::Int32), from(2)).nullable(from(2)).tagged(7, from(2)).default(D::Null),
    ],
};

pub(crate) const FENCE_BROKER_RECORD: Message = Message {
    name: "FenceBrokerRecord",
    valid: range(0, 0),
    flexible: from(0),
    fields: &[F::new("id", T::Int32, from(0)), F::new("epoch", T::Int64, from(0))],
};

pub(crate) const UNFENCE_BROKER_RECORD: Message = Message {
    name: "UnfenceBrokerRecord",
    valid: range(0, 0),
    flexible: from(0),
    fields: &[F::new("id", T::Int32, from(0)), F::new("epoch", T::Int64, from(0))],
};

pub(crate) const REMOVE_TOPIC_RECORD: Message = Message {
    name: "RemoveTopicRecord",
    valid: range(0, 0),
    flexible: from(0),
    fields: &[F::new("topicId", T::Uuid, from(0))],
};

pub(crate) const DELEGATION_TOKEN_RECORD: Message = Message {
    name: "DelegationTokenRecord",
    valid: range(0, 0),
    flexible: from(0),
    fields: &[
        F::new("owner", T::Str, from(0)),
        F::new("requester", T::Str, from(0)),
        F::new("renewers", T::Array(&T::Str), from(0)),
        F::new("issueTimestamp", T::Int64, from(0)),
        F::new("maxTimestamp", T::Int64, from(0)),
        F::new("expirationTimestamp", T::Int64, from(0)),
        F::new("tokenId", T::Str, from(0)),
    ],
};

pub(crate) const USER_SCRAM_CREDENTIAL_RECORD: Message = Message {
    name: "UserScramCredentialRecord",
    valid: range(0, 0),
    flexible: from(0),
    fields: &[
        F::new("name", T::Str, from(0)),
        F::new("mechanism", T::Int8, from(0)),
        F::new("salt", T::Bytes, from(0)),
        F::new("storedKey", T::Bytes, from(0)),
        F::new("serverKey", T::Bytes, from(0)),
        F::new("iterations", T::Int32, from(0)),
    ],
};

pub(crate) const FEATURE_LEVEL_RECORD: Message = Message {
    name: "FeatureLevelRecord",
    valid: range(0, 0),
    flexible: from(0),
    fields: &[F::new("name", T::Str, from(0)), F::new("featureLevel", T::Int16, from(0))],
};

pub(crate) const CLIENT_QUOTA_RECORD: Message = Message {
    name: "ClientQuotaRecord",
    valid: range(0, 0),
    flexible: from(0),
    fields: &[
        F::new(
            "entity",
            T::Array(&T::Struct(&[
                F::new("entityType", T::Str, from(0)),
                F::new("entityName", T::Str, from(0)).nullable(from(0)),
            ])),
            from(0),
        ),
        F::new("key", T::Str, from(0)),
        F::new("value", T::Float64, from(0)),
        F::new("remove", T::Bool, from(0)),
    ],
};

pub(crate) const PRODUCER_IDS_RECORD: Message = Message {
    name: "ProducerIdsRecord",
    valid: range(0, 0),
    flexible: from(0),
    fields: &[
        F::new("brokerId", T::Int32, from(0)),
        F::new("brokerEpoch", T::Int64, from(0)).default(D::Int(-1)),
        F::new("nextProducerId", T::Int64, from(0)),
    ],
};

pub(crate) const BROKER_REGISTRATION_CHANGE_RECORD: Message = Message {
    name: "BrokerRegistrationChangeRecord",
    valid: range(0, 3),
    flexible: from(0),
    fields: &[
        F::new("brokerId", T::Int32, from(0)),
        F::new("brokerEpoch", T::Int64, from(0)),
        F::new("fenced", T::Int8, from(0)).tagged(0, from(0)),
        F::new("inControlledShutdown", T::Int8, from(1)).tagged(1, from(1)),
        F::new("logDirs", T::Array(&T::Uuid), from(2)).tagged(2, from(2)),
        F::new("cordonedLogDirs", T::Array(&T::Uuid), from(3)).nullable(from(3)).tagged(3, from(3)).default(D::Null),
    ],
};

pub(crate) const ACCESS_CONTROL_ENTRY_RECORD: Message = Message {
    name: "AccessControlEntryRecord",
    valid: range(0, 0),
    flexible: from(0),
    fields: &[
        F::new("id", T::Uuid, from(0)),
        F::new("resourceType", T::Int8, from(0)),
        F::new("resourceName", T::Str, from(0)),
        F::new("patternType", T::Int8, from(0)),
        F::new("principal", T::Str, from(0)),
        F::new("host", T::Str, from(0)),
        F::new("operation", T::Int8, from(0)),
        F::new("permissionType", T::Int8, from(0)),
    ],
};

pub(crate) const REMOVE_ACCESS_CONTROL_ENTRY_RECORD: Message = Message {
    name: "RemoveAccessControlEntryRecord",
    valid: range(0, 0),
    flexible: from(0),
    fields: &[F::new("id", T::Uuid, from(0))],
};

pub(crate) const NO_OP_RECORD: Message =
    Message { name: "NoOpRecord", valid: range(0, 0), flexible: from(0), fields: &[] };

pub(crate) const ZK_MIGRATION_STATE_RECORD: Message = Message {
    name: "ZkMigrationStateRecord",
    valid: range(0, 0),
    flexible: from(0),
    fields: &[F::new("zkMigrationState", T::Int8, from(0))],
};

pub(crate) const REMOVE_USER_SCRAM_CREDENTIAL_RECORD: Message = Message {
    name: "RemoveUserScramCredentialRecord",
    valid: range(0, 0),
    flexible: from(0),
    fields: &[F::new("name", T::Str, from(0)), F::new("mechanism", T::Int8, from(0))],
};

pub(crate) const BEGIN_TRANSACTION_RECORD: Message = Message {
    name: "BeginTransactionRecord",
    valid: range(0, 0),
    flexible: from(0),
    fields: &[F::new("name", T::Str, from(0)).nullable(from(0)).tagged(0, from(0)).default(D::Null)],
};

pub(crate) const END_TRANSACTION_RECORD: Message =
    Message { name: "EndTransactionRecord", valid: range(0, 0), flexible: from(0), fields: &[] };

pub(crate) const ABORT_TRANSACTION_RECORD: Message = Message {
    name: "AbortTransactionRecord",
    valid: range(0, 0),
    flexible: from(0),
    fields: &[F::new("reason", T::Str, from(0)).nullable(from(0)).tagged(0, from(0)).default(D::Null)],
};

pub(crate) const REMOVE_DELEGATION_TOKEN_RECORD: Message = Message {
    name: "RemoveDelegationTokenRecord",
    valid: range(0, 0),
    flexible: from(0),
    fields: &[F::new("tokenId", T::Str, from(0))],
};

pub(crate) const REGISTER_CONTROLLER_RECORD: Message = Message {
    name: "RegisterControllerRecord",
    valid: range(0, 0),
    flexible: from(0),
    fields: &[
        F::new("controllerId", T::Int32, from(0)),
        F::new("incarnationId", T::Uuid, from(0)),
        F::new("zkMigrationReady", T::Bool, from(0)),
        F::new("endPoints", ENDPOINTS, from(0)),
        F::new("features", FEATURES, from(0)),
    ],
};

pub(crate) const CLEAR_ELR_RECORD: Message = Message {
    name: "ClearElrRecord",
    valid: range(0, 0),
    flexible: from(0),
    fields: &[F::new("topicName", T::Str, from(0))],
};

pub(crate) const UNREGISTER_CONTROLLER_RECORD: Message = Message {
    name: "UnregisterControllerRecord",
    valid: range(0, 0),
    flexible: from(0),
    fields: &[F::new("controllerId", T::Int32, from(0))],
};

/// Every metadata record type of Kafka 4.4: api key, `MetadataRecordType` name, schema.
pub(crate) const RECORD_TYPES: &[(u16, &str, &Message)] = &[
    (0, "REGISTER_BROKER_RECORD", &REGISTER_BROKER_RECORD),
    (1, "UNREGISTER_BROKER_RECORD", &UNREGISTER_BROKER_RECORD),
    (2, "TOPIC_RECORD", &TOPIC_RECORD),
    (3, "PARTITION_RECORD", &PARTITION_RECORD),
    (4, "CONFIG_RECORD", &CONFIG_RECORD),
    (5, "PARTITION_CHANGE_RECORD", &PARTITION_CHANGE_RECORD),
    (7, "FENCE_BROKER_RECORD", &FENCE_BROKER_RECORD),
    (8, "UNFENCE_BROKER_RECORD", &UNFENCE_BROKER_RECORD),
    (9, "REMOVE_TOPIC_RECORD", &REMOVE_TOPIC_RECORD),
    (10, "DELEGATION_TOKEN_RECORD", &DELEGATION_TOKEN_RECORD),
    (11, "USER_SCRAM_CREDENTIAL_RECORD", &USER_SCRAM_CREDENTIAL_RECORD),
    (12, "FEATURE_LEVEL_RECORD", &FEATURE_LEVEL_RECORD),
    (14, "CLIENT_QUOTA_RECORD", &CLIENT_QUOTA_RECORD),
    (15, "PRODUCER_IDS_RECORD", &PRODUCER_IDS_RECORD),
    (17, "BROKER_REGISTRATION_CHANGE_RECORD", &BROKER_REGISTRATION_CHANGE_RECORD),
    (18, "ACCESS_CONTROL_ENTRY_RECORD", &ACCESS_CONTROL_ENTRY_RECORD),
    (19, "REMOVE_ACCESS_CONTROL_ENTRY_RECORD", &REMOVE_ACCESS_CONTROL_ENTRY_RECORD),
    (20, "NO_OP_RECORD", &NO_OP_RECORD),
    (21, "ZK_MIGRATION_STATE_RECORD", &ZK_MIGRATION_STATE_RECORD),
    (22, "REMOVE_USER_SCRAM_CREDENTIAL_RECORD", &REMOVE_USER_SCRAM_CREDENTIAL_RECORD),
    (23, "BEGIN_TRANSACTION_RECORD", &BEGIN_TRANSACTION_RECORD),
    (24, "END_TRANSACTION_RECORD", &END_TRANSACTION_RECORD),
    (25, "ABORT_TRANSACTION_RECORD", &ABORT_TRANSACTION_RECORD),
    (26, "REMOVE_DELEGATION_TOKEN_RECORD", &REMOVE_DELEGATION_TOKEN_RECORD),
    (27, "REGISTER_CONTROLLER_RECORD", &REGISTER_CONTROLLER_RECORD),
    (28, "CLEAR_ELR_RECORD", &CLEAR_ELR_RECORD),
    (29, "UNREGISTER_CONTROLLER_RECORD", &UNREGISTER_CONTROLLER_RECORD),
];

pub(crate) const LEADER_CHANGE_MESSAGE: Message = Message {
    name: "LeaderChangeMessage",
    valid: range(0, 1),
    flexible: from(0),
    fields: &[
        F::new("version", T::Int16, from(0)),
        F::new("leaderId", T::Int32, from(0)),
        F::new("voters", VOTERS, from(0)),
        F::new("grantingVoters", VOTERS, from(0)),
    ],
};

pub(crate) const SNAPSHOT_HEADER_RECORD: Message = Message {
    name: "SnapshotHeaderRecord",
    valid: range(0, 0),
    flexible: from(0),
    fields: &[F::new("version", T::Int16, from(0)), F::new("lastContainedLogTimestamp", T::Int64, from(0))],
};

pub(crate) const SNAPSHOT_FOOTER_RECORD: Message = Message {
    name: "SnapshotFooterRecord",
    valid: range(0, 0),
    flexible: from(0),
    fields: &[F::new("version", T::Int16, from(0))],
};

pub(crate) const KRAFT_VERSION_RECORD: Message = Message {
    name: "KRaftVersionRecord",
    valid: range(0, 0),
    flexible: from(0),
    fields: &[F::new("version", T::Int16, from(0)), F::new("kRaftVersion", T::Int16, from(0))],
};

pub(crate) const VOTERS_RECORD: Message = Message {
    name: "VotersRecord",
    valid: range(0, 0),
    flexible: from(0),
    fields: &[
        F::new("version", T::Int16, from(0)),
        F::new(
            "voters",
            T::Array(&T::Struct(&[
                F::new("voterId", T::Int32, from(0)),
                F::new("voterDirectoryId", T::Uuid, from(0)),
                F::new(
                    "endpoints",
                    T::Array(&T::Struct(&[
                        F::new("name", T::Str, from(0)),
                        F::new("host", T::Str, from(0)),
                        F::new("port", T::Uint16, from(0)),
                    ])),
                    from(0),
                ),
                F::new(
                    "kRaftVersionFeature",
                    T::Struct(&[
                        F::new("minSupportedVersion", T::Int16, from(0)),
                        F::new("maxSupportedVersion", T::Int16, from(0)),
                    ]),
                    from(0),
                ),
            ])),
            from(0),
        ),
    ],
};
