//! A stopped KRaft broker's own account of its topics: its metadata log (`__cluster_metadata-0`), read as the
//! broker reads it at start, and each topic's settings resolved as the broker resolves them, so that a stopped
//! broker's partitions are cleaned with their topics' own settings without restating them by hand. The
//! metadata log itself is only read (`log_core::kafka::metadata_log`).
//!
//! ```no_run
//! use logcompact::kraft::{BrokerSettings, locate};
//! let data_dir = std::path::Path::new("/var/lib/kafka/data");
//! let metadata = locate(data_dir, None).expect("a metadata log");
//! let node = logcompact::kraft::meta_property(data_dir, "node.id");
//! let broker = BrokerSettings::load(&metadata, node, None)?;
//! for s in broker.topic("orders").unwrap_or_default() {
//!     println!("{} = {} ({})", s.name, s.value, s.source);
//! }
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

pub mod broker_settings;
pub mod image;
pub mod metadata_log;

pub use broker_settings::{BrokerSettings, BrokerSettingsError, Setting, locate, meta_property};
