//! The conformance suite on storage-mem.
conformance::conformance_tests!(conformance::Mem, 300);
