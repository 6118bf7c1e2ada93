//! The digest of what a log holds, the one every benchmark compares results by: xxh3-128 of every record's
//! offset, key and value (or tombstone) in order, each length-prefixed so that no two logs share one by where
//! their bytes split.

use log_core::Log;

/// The digest of `log`'s records (32 hex digits) and how many there are.
///
/// # Errors
/// A damaged log, as text.
pub fn records(log: &Log) -> Result<(String, u64), String> {
    let mut h = xxhash_rust::xxh3::Xxh3::new();
    let mut n = 0;
    for r in log.snapshot().reader(0) {
        let r = r.map_err(|e| e.to_string())?;
        n += 1;
        h.update(&r.offset.to_le_bytes());
        let key = r.key.unwrap_or_default();
        h.update(&(key.len() as u64).to_le_bytes());
        h.update(&key);
        match r.value {
            Some(v) => {
                h.update(&(v.len() as u64).to_le_bytes());
                h.update(&v);
            }
            None => h.update(&u64::MAX.to_le_bytes()),
        }
    }
    Ok((format!("{:032x}", h.digest128()), n))
}
