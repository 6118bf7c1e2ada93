//! Kafka's KRaft metadata log: the wire primitives of its records ([`wire`]) and the schema of every record
//! type Kafka 4.4 writes there, with the raft control records ([`schema`]).

pub mod schema;
pub mod wire;
