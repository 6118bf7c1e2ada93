//! What every benchmark does to a prepared log before a run: copy its files into a fresh store, so that each
//! run cleans the same bytes.

use log_core::SegmentStore;

/// Copies every file of `from` into `to` (a fresh store), each synced, then the store's directory.
///
/// # Errors
/// The store's error, as text, naming the file.
pub fn copy_store(from: &dyn SegmentStore, to: &dyn SegmentStore) -> Result<(), String> {
    for n in from.list().map_err(|e| format!("listing the prepared log: {e}"))? {
        let failed = |e: std::io::Error| format!("copying {n}: {e}");
        let f = from.open(&n).map_err(failed)?;
        let mut bytes = vec![0u8; usize::try_from(f.len()).map_err(|e| format!("{n}: {e}"))?];
        f.read_at(0, &mut bytes).map_err(failed)?;
        let g = to.create(&n).map_err(failed)?;
        g.append(&bytes).map_err(failed)?;
        g.sync().map_err(failed)?;
    }
    to.sync_dir().map_err(|e| format!("syncing the copy's directory: {e}"))
}
