//! `kafka-records`: Kafka's own records, read as Kafka 4.4 reads them, for the tools around a stopped broker's
//! data. Nothing here cleans a log; it reads what the broker keeps beside its partitions and in its internal
//! topics:
//! - [`kraft`]: a KRaft node's metadata log and snapshots, replayed as the broker's start replays them, and each
//!   topic's settings resolved from them and `server.properties` as the broker resolves them; which metadata log
//!   belongs to a data directory, and which partition directories are stray;
//! - [`coordinator_records`] and [`consumer_offsets`]: the records of `__consumer_offsets`,
//!   `__transaction_state` and `__share_group_state`, decoded as `kafka-dump-log.sh`'s decoders print them;
//! - [`message_schema`]: Kafka's generated messages described as data, read at any version;
//! - [`dump_log`]: what `kafka-dump-log.sh --deep-iteration --print-data-log` prints, byte for byte;
//! - [`producer_snapshot`]: a partition's producer state snapshots;
//! - [`wire`]: the primitives of Kafka's wire format its records are written in;
//! - [`files`]: the broker's small text files, read bounded.
//!
//! Every file is read with plain, bounded reads: nothing is mapped, locked or written (a broker may be running).
//! The `logcompact` crate re-exports this one as `logcompact::kafka`.
//!
//! # Example
//! The topic settings a stopped broker holds for `orders`, from its own metadata log:
//! ```no_run
//! use kafka_records::kraft::{BrokerSettings, Location, locate};
//!
//! let data_dir = std::path::Path::new("/var/lib/kafka/data");
//! let Location::Found { dir: metadata, .. } = locate(data_dir, None)? else { return Ok(()) };
//! let node = kafka_records::kraft::meta_property(data_dir, "node.id");
//! let broker = BrokerSettings::load(&metadata, node, None)?;
//! for setting in broker.topic("orders").unwrap_or_default() {
//!     println!("{} = {} ({})", setting.name, setting.value, setting.source);
//! }
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
#![deny(missing_docs)]
#![warn(clippy::print_stderr, clippy::print_stdout)]

pub mod consumer_offsets;
pub mod coordinator_records;
pub mod dump_log;
pub mod files;
pub mod kraft;
pub mod message_schema;
pub mod producer_snapshot;
pub mod wire;
