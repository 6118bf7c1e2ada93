//! The conformance suite on the crash-simulating store (operations include crashes with torn tails).
conformance::conformance_tests!(conformance::Crash, 200);
