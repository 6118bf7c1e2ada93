//! Kafka's partition protocols above its bytes: the directory a broker leaves (`recovery`, as its
//! `LogLoader` reads it), the cleaner's output files and swap (`output`, `commit`), the producer state and
//! transaction index a `read_committed` reader needs ([`producer_state`], [`txn_index`]), `check` and `repair`.
#![expect(clippy::big_endian_bytes, reason = "Kafka's format is big-endian")]

pub(crate) mod check;
pub(crate) mod commit;
pub(crate) mod output;
pub mod producer_state;
pub(crate) mod recovery;
pub(crate) mod repair;
pub mod txn_index;

pub use recovery::KafkaLayout;
