//! The `bench` crate's tests in one binary (one link instead of 4): each module was a
//! test file of its own. Run one with `cargo test -p bench --test suite MODULE::`.

mod backlog;
mod floors;
mod help;
mod kafka_bench_dir;
mod kafka_pass_start;
