//! `conformance`: one test suite over the storage traits, run on every backend: storage-mem, storage-file
//! and the crash-simulating store. The model-based property test ([`model`]) and the scenarios
//! ([`scenarios`]) are written once against [`Harness`]; `tests/` instantiates them per backend with
//! [`conformance_tests!`], and `tests/crash_sweep.rs` crashes a cleaning pass and a run of appends at every
//! sync point in either format ([`crash_sweep`], instantiated per format with [`crash_sweep_tests!`]).
//!
//! # Example
//! ```
//! conformance::scenarios::seed_trace(&conformance::Mem, cleaner::MapKind::Compact);
//! ```
#![deny(missing_docs)]

pub mod crash_sweep;
pub mod fuzz_dir;
mod harness;
pub mod model;
pub mod scenarios;

pub use harness::{Crash, Files, Fixture, Harness, Kafka, Mem};

/// Expands to the whole suite as `#[test]` functions for one harness, with `$cases` cases per property. Every
/// test runs with every offset map ([`cleaner::MapKind::ALL`]) and the external pass (all but the partial
/// passes, which it never makes); the property tests also check that the maps leave the same log after
/// every step. `kafka` in front runs the format-neutral part on Kafka partitions
/// ([`Kafka`]); the rest (the lesson's trace, this format's index hints, a flipped byte's position) is the
/// native format's.
#[macro_export]
macro_rules! conformance_tests {
    (kafka $harness:expr, $cases:expr) => {
        $crate::conformance_tests!(@common $harness, $cases);
    };
    ($harness:expr, $cases:expr) => {
        $crate::conformance_tests!(@common $harness, $cases);

        #[test]
        fn seed_trace() {
            for map in cleaner::MapKind::WITH_EXTERNAL {
                $crate::scenarios::seed_trace(&$harness, map);
            }
        }

        #[test]
        fn index_hints_are_rebuilt() {
            $crate::scenarios::index_hints_are_rebuilt(&$harness);
        }

        #[test]
        fn flipped_byte_is_found() {
            for map in cleaner::MapKind::WITH_EXTERNAL {
                $crate::scenarios::flipped_byte_is_found(&$harness, map);
            }
        }
    };
    (@common $harness:expr, $cases:expr) => {
        use proptest::prelude::*;

        proptest! {
            #![proptest_config(ProptestConfig { cases: $cases, ..ProptestConfig::default() })]

            #[test]
            fn prop_log_and_cleaner_match_the_model(ops in proptest::collection::vec($crate::model::op(), 1..80)) {
                $crate::model::run_every_map(&$harness, &ops, 1 << 30);
            }

            #[test]
            fn prop_model_holds_with_size_based_rolls(
                ops in proptest::collection::vec($crate::model::op(), 1..80),
                seg in 40u64..200,
            ) {
                $crate::model::run_every_map(&$harness, &ops, seg);
            }
        }

        #[test]
        fn one_key_buffer_converges_on_a_long_log() {
            use $crate::model::Op;
            let mut ops = Vec::new();
            for i in 0..200u32 {
                ops.push(Op::Put((i % 5) as u8, i as u8));
                if i % 7 == 0 {
                    ops.push(Op::Del((i % 3) as u8));
                }
                if i % 13 == 0 {
                    ops.push(Op::Roll);
                }
            }
            ops.extend([Op::Roll, Op::Compact { purge: false, keys: 1 }, Op::Reopen]);
            ops.extend([Op::Compact { purge: true, keys: 1 }, Op::Crash(7), Op::Read(0)]);
            $crate::model::run_every_map(&$harness, &ops, 1 << 30);
        }

        #[test]
        fn partial_passes_continue_after_restart() {
            for map in cleaner::MapKind::ALL {
                $crate::scenarios::partial_passes_continue_after_restart(&$harness, map);
            }
        }

        #[test]
        fn torn_tail_is_cut() {
            $crate::scenarios::torn_tail_is_cut(&$harness);
        }

        #[test]
        fn read_only_opens_beside_running_passes() {
            for map in cleaner::MapKind::WITH_EXTERNAL {
                $crate::scenarios::read_only_opens_beside_running_passes(&$harness, map);
            }
        }
    };
}
