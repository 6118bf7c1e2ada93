//! The `cleaner` crate's tests in one binary (one link instead of 7): each module was a
//! test file of its own. Run one with `cargo test -p cleaner --test suite MODULE::`.

mod concurrent_readers;
mod external_span;
mod external_threads;
mod kafka_model;
mod kafka_rules;
mod manager;
mod offset_order;
mod one_pass;
mod pass_settings;
mod written;
