//! Appending to a Kafka partition through [`crate::Log`]: each record becomes a batch of one, uncompressed,
//! with no producer (`producerId` -1), `CreateTime`, leader epoch 0, as a plain producer's single send would
//! be stored.

use super::codec::build::{RecordToWrite, new_header, write_batch};
use super::codec::compression::Compression;
use super::codec::varint::write_varint;
use crate::codec::MAX_RECORD_BYTES;
use crate::error::{Error, Result};
use crate::record::AppendRecord;

/// Appends to `out` the batch holding `rec` at `offset`; returns its length.
///
/// # Errors
/// [`Error::RecordTooLarge`] past [`MAX_RECORD_BYTES`] (nothing is written then).
pub(crate) fn encode_one(offset: u64, rec: &AppendRecord<'_>, out: &mut Vec<u8>) -> Result<usize> {
    let mut headers = Vec::new();
    let mut size = rec.key.map_or(0, <[u8]>::len) + rec.value.map_or(0, <[u8]>::len);
    for h in rec.headers {
        size = size.saturating_add(h.name.len()).saturating_add(h.value.as_ref().map_or(0, Vec::len));
    }
    if size > MAX_RECORD_BYTES {
        return Err(Error::RecordTooLarge { size, max: MAX_RECORD_BYTES });
    }
    for h in rec.headers {
        write_varint(&mut headers, h.name.len() as i32);
        headers.extend_from_slice(h.name.as_bytes());
        match &h.value {
            None => write_varint(&mut headers, -1),
            Some(v) => {
                write_varint(&mut headers, v.len() as i32);
                headers.extend_from_slice(v);
            }
        }
    }
    let record = RecordToWrite {
        offset: offset as i64,
        timestamp: rec.timestamp,
        key: rec.key,
        value: rec.value,
        header_count: rec.headers.len(),
        header_bytes: &headers,
    };
    let start = out.len();
    let template = new_header(offset as i64, 0);
    write_batch(&template, Compression::None, None, &[record], out, &mut Vec::new())
        .map_err(|_| Error::RecordTooLarge { size, max: MAX_RECORD_BYTES })?;
    Ok(out.len() - start)
}
