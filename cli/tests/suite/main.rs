//! The `cli` crate's tests in one binary (one link instead of 30): each module was a
//! test file of its own. Run one with `cargo test -p cli --test suite MODULE::`.

#[path = "../common/mod.rs"]
mod common;
#[path = "../differential/mod.rs"]
mod differential;

mod analyze_dir;
mod analyze_settings;
mod broker;
mod broker_metadata;
mod check_kafka_indexes;
mod clean;
mod clean_kafka;
mod dir;
mod disk_full;
mod dump_kafka;
mod dump_log_style;
mod dump_log_vectors;
mod exit_codes;
mod external;
mod flags;
mod kafka;
mod kafka_transactions;
mod kill;
mod memory;
mod metadata_log;
mod metrics;
mod mistakes;
mod now_ms;
mod progress;
mod real_kafka;
mod reliability;
mod repair_kafka;
mod replicas;
mod run;
mod status_compact;
mod summaries;
