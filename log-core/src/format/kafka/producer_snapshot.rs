//! Kafka's producer state snapshots (`<offset>.snapshot` in a partition directory): what a broker knows of each
//! producer at that offset, among it the coordinator epoch of its last transaction marker and the first offset
//! of its open transaction. A broker loads the newest on start and replays the batches after it
//! ([`crate::protocol::kafka::producer_state`]); `dump` prints them, and `analyze` takes a hanging transaction's coordinator
//! epoch from one.
//!
//! Layout (big-endian): version i16 (1), CRC-32C u32 over everything after it, entry count i32, then 46-byte
//! entries: producer id i64, epoch i16, last sequence i32, last offset i64, offset delta i32, timestamp i64,
//! coordinator epoch i32, current transaction's first offset i64.
//!
//! ```
//! let mut bytes = vec![0, 1, 0, 0, 0, 0, 0, 0, 0, 0];
//! let crc = crc32c::crc32c(&bytes[6..]);
//! bytes[2..6].copy_from_slice(&crc.to_be_bytes());
//! assert!(log_core::kafka::producer_snapshot::read_snapshot(&bytes).expect("valid").is_empty());
//! ```

/// A producer snapshot entry.
pub const SNAPSHOT_ENTRY: usize = 46;
/// Where a producer snapshot's entries (and its checksummed bytes) begin.
const SNAPSHOT_ENTRIES_AT: usize = 6;

/// One entry of a producer snapshot.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct ProducerEntry {
    /// The producer.
    pub producer_id: i64,
    /// Its epoch.
    pub producer_epoch: i16,
    /// The sequence of its last batch's last record.
    pub last_sequence: i32,
    /// The last offset of its last batch (-1: none).
    pub last_offset: i64,
    /// Last offset minus first offset of that batch.
    pub offset_delta: i32,
    /// That batch's max timestamp.
    pub timestamp: i64,
    /// The coordinator epoch of its last transaction marker.
    pub coordinator_epoch: i32,
    /// The first offset of its open transaction (-1: none).
    pub current_txn_first_offset: i64,
}

/// Why a producer snapshot cannot be read: Kafka's `CorruptSnapshotException` message.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct CorruptSnapshot(pub String);

/// The entries of a producer snapshot (`<offset>.snapshot`: version 1, CRC-32C, entries of 46 bytes), or the
/// message Kafka's `ProducerStateManager.readSnapshot` gives for one it cannot read.
///
/// # Errors
/// [`CorruptSnapshot`] with Kafka's message.
pub fn read_snapshot(bytes: &[u8]) -> Result<Vec<ProducerEntry>, CorruptSnapshot> {
    let schema = |what: &str| CorruptSnapshot(format!("Snapshot failed schema validation: {what}"));
    if bytes.len() < 2 {
        return Err(schema("null"));
    }
    let version = i16::from_be_bytes([bytes[0], bytes[1]]);
    if version != 1 {
        return Err(schema(&format!("Snapshot contained an unknown file version {version}")));
    }
    if bytes.len() < SNAPSHOT_ENTRIES_AT + 4 {
        return Err(schema("null"));
    }
    let stored = u32::from_be_bytes([bytes[2], bytes[3], bytes[4], bytes[5]]);
    let count = i32::from_be_bytes([bytes[6], bytes[7], bytes[8], bytes[9]]);
    let entries = &bytes[SNAPSHOT_ENTRIES_AT + 4..];
    if count < 0 {
        return Err(schema("non-nullable field producerEntries was serialized as null"));
    }
    let count = count as usize;
    if count > entries.len() {
        return Err(schema(&format!(
            "Tried to allocate a collection of size {count}, but there are only {} bytes remaining.",
            entries.len()
        )));
    }
    if count * SNAPSHOT_ENTRY > entries.len() {
        return Err(schema("null"));
    }
    let computed = crc32c::crc32c(&bytes[SNAPSHOT_ENTRIES_AT..]);
    if computed != stored {
        return Err(CorruptSnapshot(format!(
            "Snapshot is corrupt (CRC is no longer valid). Stored crc: {stored}. Computed crc: {computed}"
        )));
    }
    Ok(entries
        .chunks_exact(SNAPSHOT_ENTRY)
        .take(count)
        .map(|e| {
            let long = |at: usize| {
                let mut a = [0u8; 8];
                a.copy_from_slice(&e[at..at + 8]);
                i64::from_be_bytes(a)
            };
            let int = |at: usize| i32::from_be_bytes([e[at], e[at + 1], e[at + 2], e[at + 3]]);
            ProducerEntry {
                producer_id: long(0),
                producer_epoch: i16::from_be_bytes([e[8], e[9]]),
                last_sequence: int(10),
                last_offset: long(14),
                offset_delta: int(22),
                timestamp: long(26),
                coordinator_epoch: int(34),
                current_txn_first_offset: long(38),
            }
        })
        .collect())
}

/// The bytes of a producer snapshot holding `entries` (version 1, CRC-32C), as a broker writes one.
pub fn encode_snapshot(entries: &[ProducerEntry]) -> Vec<u8> {
    let mut out = Vec::with_capacity(SNAPSHOT_ENTRIES_AT + 4 + entries.len() * SNAPSHOT_ENTRY);
    out.extend_from_slice(&1i16.to_be_bytes());
    out.extend_from_slice(&[0; 4]);
    let count = i32::try_from(entries.len()).unwrap_or(i32::MAX);
    out.extend_from_slice(&count.to_be_bytes());
    for e in entries.iter().take(count as usize) {
        out.extend_from_slice(&e.producer_id.to_be_bytes());
        out.extend_from_slice(&e.producer_epoch.to_be_bytes());
        out.extend_from_slice(&e.last_sequence.to_be_bytes());
        out.extend_from_slice(&e.last_offset.to_be_bytes());
        out.extend_from_slice(&e.offset_delta.to_be_bytes());
        out.extend_from_slice(&e.timestamp.to_be_bytes());
        out.extend_from_slice(&e.coordinator_epoch.to_be_bytes());
        out.extend_from_slice(&e.current_txn_first_offset.to_be_bytes());
    }
    let crc = crc32c::crc32c(&out[SNAPSHOT_ENTRIES_AT..]);
    out[2..SNAPSHOT_ENTRIES_AT].copy_from_slice(&crc.to_be_bytes());
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_encoded_snapshot_reads_back() {
        let e = ProducerEntry {
            producer_id: 9,
            producer_epoch: 3,
            last_sequence: 11,
            last_offset: 40,
            offset_delta: 2,
            timestamp: 1_700_000_000_000,
            coordinator_epoch: 5,
            current_txn_first_offset: -1,
        };
        let bytes = encode_snapshot(&[e, ProducerEntry { producer_id: 10, ..e }]);
        assert_eq!(bytes.len(), 10 + 2 * SNAPSHOT_ENTRY);
        assert_eq!(read_snapshot(&bytes), Ok(vec![e, ProducerEntry { producer_id: 10, ..e }]));
        let mut bad = bytes.clone();
        bad[20] ^= 1;
        assert!(read_snapshot(&bad).is_err_and(|e| e.0.contains("CRC")));
    }
}
