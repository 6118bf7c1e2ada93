//! Appending to a native log through [`crate::Log`]: each record becomes one checksummed frame.

use super::codec::{self, EncodeFields};
use crate::error::{Error, Result};
use crate::record::AppendRecord;

/// Appends to `out` the frame holding `rec` at `offset`; returns its length.
///
/// # Errors
/// [`Error::RecordTooLarge`] past [`codec::MAX_RECORD_BYTES`], [`Error::NullHeaderValue`] for a header without
/// a value (a frame stores none); nothing is written then.
pub(crate) fn encode_one(offset: u64, rec: &AppendRecord<'_>, out: &mut Vec<u8>) -> Result<usize> {
    let fields =
        EncodeFields { offset, timestamp: rec.timestamp, key: rec.key, value: rec.value, delete_horizon: None };
    codec::encode_with_headers(&fields, rec.headers, out).map_err(|e| match e {
        codec::EncodeError::TooLarge(size) => {
            Error::RecordTooLarge { size: size.saturating_sub(codec::FRAME_HEADER_BYTES), max: codec::MAX_RECORD_BYTES }
        }
        codec::EncodeError::NullHeaderValue => Error::NullHeaderValue,
    })
}
