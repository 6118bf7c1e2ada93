//! The cleaner checkpoint: the first dirty offset, stored as a tiny text file replaced atomically.

use std::io;

use crate::error::{Error, Result};
use crate::names::{CHECKPOINT_FILE, CHECKPOINT_TMP_FILE};
use crate::storage::SegmentStore;

const HEADER: &str = "logcompact-checkpoint 1\n";

/// Reads the checkpoint; `Ok(None)` when no pass has committed yet.
pub(crate) fn read(store: &dyn SegmentStore) -> Result<Option<u64>> {
    let file = match store.open(CHECKPOINT_FILE) {
        Ok(f) => f,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(Error::io("open", CHECKPOINT_FILE)(e)),
    };
    let len = file.len();
    if len > 256 {
        return Err(Error::BadCheckpoint { name: CHECKPOINT_FILE.into(), reason: "file is too long" });
    }
    let mut buf = vec![0u8; len as usize];
    file.read_at(0, &mut buf).map_err(Error::io("read", CHECKPOINT_FILE))?;
    let bad = |reason| Error::BadCheckpoint { name: CHECKPOINT_FILE.into(), reason };
    let text = std::str::from_utf8(&buf).map_err(|_| bad("not UTF-8"))?;
    let rest = text.strip_prefix(HEADER).ok_or(bad("missing header line"))?;
    let line = rest.strip_suffix('\n').ok_or(bad("missing final newline"))?;
    if line.is_empty() || !line.bytes().all(|b| b.is_ascii_digit()) {
        return Err(bad("offset is not a decimal number"));
    }
    line.parse().map(Some).map_err(|_| bad("offset is out of range"))
}

/// Writes the checkpoint: temporary file, sync, rename over the old one, directory sync.
pub(crate) fn write(store: &dyn SegmentStore, offset: u64) -> Result<()> {
    match store.delete(CHECKPOINT_TMP_FILE) {
        Ok(()) => {}
        Err(e) if e.kind() == io::ErrorKind::NotFound => {}
        Err(e) => return Err(Error::io("delete", CHECKPOINT_TMP_FILE)(e)),
    }
    let file = store.create(CHECKPOINT_TMP_FILE).map_err(Error::io("create", CHECKPOINT_TMP_FILE))?;
    let text = format!("{HEADER}{offset}\n");
    file.append(text.as_bytes()).map_err(Error::io("append", CHECKPOINT_TMP_FILE))?;
    file.sync().map_err(Error::io("sync", CHECKPOINT_TMP_FILE))?;
    file.seal().map_err(Error::io("seal", CHECKPOINT_TMP_FILE))?;
    store.rename(CHECKPOINT_TMP_FILE, CHECKPOINT_FILE).map_err(Error::io("rename", CHECKPOINT_FILE))?;
    store.sync_dir().map_err(Error::io("sync directory", CHECKPOINT_FILE))
}
