//! The `log-core` crate's tests in one binary (one link instead of 11): each module was a
//! test file of its own. Run one with `cargo test -p log-core --test suite MODULE::`.

mod cleaning;
mod format_seam;
mod index_use;
mod kafka_codecs;
mod kafka_hostile;
mod kafka_reader;
mod layout;
mod log_behaviour;
mod open_options;
mod recovery;
mod repair;
