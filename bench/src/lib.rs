//! `bench`: benchmarks of logcompact. Kept out of the workspace's default members so that `cargo test`
//! stays fast; run with `cargo run --release -p bench --bin storage-bench`.
//!
//! # Example
//! ```
//! assert_eq!(bench::gib(2.0), 2.0 * 1024.0 * 1024.0 * 1024.0);
//! ```
#![deny(missing_docs)]

/// Bytes in `n` GiB.
pub fn gib(n: f64) -> f64 {
    n * 1024.0 * 1024.0 * 1024.0
}
