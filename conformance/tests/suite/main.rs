//! The `conformance` crate's tests in one binary (one link instead of 14): each module was a
//! test file of its own. Run one with `cargo test -p conformance --test suite MODULE::`.

mod advise;
mod collisions;
mod crash;
mod crash_sweep;
mod fault_sweep;
mod file;
mod fuzzed_inputs;
mod kafka_crash;
mod kafka_file;
mod kafka_mem;
mod layering;
mod mem;
mod seed_trace;
mod stress;
