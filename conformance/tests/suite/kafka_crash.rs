//! The conformance suite on Kafka partitions in the crash-simulating store (operations include crashes with
//! torn tails).
conformance::conformance_tests!(kafka conformance::Kafka(conformance::Crash), 200);
