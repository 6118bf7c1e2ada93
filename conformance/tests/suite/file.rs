//! The conformance suite on storage-file, in temporary directories.
conformance::conformance_tests!(conformance::Files, 48);
