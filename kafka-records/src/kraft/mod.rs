//! A stopped KRaft broker's own account of its topics: its metadata log (`__cluster_metadata-0`), read as the
//! broker reads it at start, and each topic's settings resolved as the broker resolves them, so that a stopped
//! broker's partitions are cleaned with their topics' own settings without restating them by hand. The
//! metadata log itself is only read (`log_core::kafka::metadata_log`). [`schema`] holds the schema of every record type Kafka 4.4 writes there, with the raft
//! control records, for decoding them as `DumpLogSegments --cluster-metadata-decoder` prints them.
//!
//! ```no_run
//! use kafka_records::kraft::{BrokerSettings, Location, locate};
//! let data_dir = std::path::Path::new("/var/lib/kafka/data");
//! let Location::Found { dir: metadata, .. } = locate(data_dir, None)? else { return Ok(()) };
//! let node = kafka_records::kraft::meta_property(data_dir, "node.id");
//! let broker = BrokerSettings::load(&metadata, node, None)?;
//! for s in broker.topic("orders").unwrap_or_default() {
//!     println!("{} = {} ({})", s.name, s.value, s.source);
//! }
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

pub mod broker_settings;
pub mod image;
pub mod metadata_log;
pub mod schema;

pub use broker_settings::{
    BrokerSettings, BrokerSettingsError, LocateError, Location, Setting, Stray, locate, meta_property,
    partition_topic_id,
};
