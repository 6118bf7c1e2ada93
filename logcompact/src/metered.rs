//! A store whose files' reads are counted on a progress [`Meter`]: for commands whose reading happens inside
//! code that knows nothing of progress (a repair's plan), the bytes read are what a person watches.
//!
//! Invariant: everything but reading is the inner store's, unchanged; a file is only read through
//! [`Segment::read_at`] (no view), so that every byte read is counted once as it is read.

use std::fmt;
use std::io;
use std::sync::Arc;

use log_core::progress::Meter;
use log_core::{Segment, SegmentBytes, SegmentStore};

/// A store counting its files' reads on a [`Meter`].
pub struct MeteredStore {
    inner: Arc<dyn SegmentStore>,
    meter: Arc<Meter>,
}

impl MeteredStore {
    /// `inner`, its reads counted on `meter`.
    #[must_use]
    pub fn new(inner: Arc<dyn SegmentStore>, meter: Arc<Meter>) -> MeteredStore {
        MeteredStore { inner, meter }
    }

    fn wrap(&self, inner: Arc<dyn Segment>) -> Arc<dyn Segment> {
        Arc::new(MeteredSegment { inner, meter: Arc::clone(&self.meter) })
    }
}

impl fmt::Debug for MeteredStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MeteredStore").field("inner", &self.inner).finish_non_exhaustive()
    }
}

impl SegmentStore for MeteredStore {
    fn create(&self, name: &str) -> io::Result<Arc<dyn Segment>> {
        Ok(self.wrap(self.inner.create(name)?))
    }

    fn open(&self, name: &str) -> io::Result<Arc<dyn Segment>> {
        Ok(self.wrap(self.inner.open(name)?))
    }

    fn list(&self) -> io::Result<Vec<String>> {
        self.inner.list()
    }

    fn file_id(&self, name: &str) -> io::Result<u64> {
        self.inner.file_id(name)
    }

    fn is_read_only(&self) -> bool {
        self.inner.is_read_only()
    }

    fn rename(&self, from: &str, to: &str) -> io::Result<()> {
        self.inner.rename(from, to)
    }

    fn delete(&self, name: &str) -> io::Result<()> {
        self.inner.delete(name)
    }

    fn sync_dir(&self) -> io::Result<()> {
        self.inner.sync_dir()
    }
}

/// A file of a [`MeteredStore`].
#[derive(Debug)]
struct MeteredSegment {
    inner: Arc<dyn Segment>,
    meter: Arc<Meter>,
}

impl Segment for MeteredSegment {
    fn len(&self) -> u64 {
        self.inner.len()
    }

    fn append(&self, data: &[u8]) -> io::Result<u64> {
        self.inner.append(data)
    }

    fn read_at(&self, pos: u64, out: &mut [u8]) -> io::Result<()> {
        self.inner.read_at(pos, out)?;
        self.meter.add(out.len() as u64, 0);
        Ok(())
    }

    fn truncate(&self, len: u64) -> io::Result<()> {
        self.inner.truncate(len)
    }

    fn sync(&self) -> io::Result<()> {
        self.inner.sync()
    }

    fn seal(&self) -> io::Result<()> {
        self.inner.seal()
    }

    fn is_sealed(&self) -> bool {
        self.inner.is_sealed()
    }

    /// Never a view: a view's bytes would be read without being counted, so every read goes through
    /// [`Segment::read_at`] (readers fall back to reads on `Unsupported`).
    fn view(&self) -> io::Result<SegmentBytes> {
        Err(io::Error::new(io::ErrorKind::Unsupported, "a metered file is only read through reads"))
    }

    fn file_id(&self) -> u64 {
        self.inner.file_id()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_are_counted_and_views_refused() {
        let inner: Arc<dyn SegmentStore> = Arc::new(storage_mem::MemStore::new());
        let meter = Arc::new(Meter::running_total());
        let store = MeteredStore::new(inner, Arc::clone(&meter));
        let file = store.create("a").expect("create");
        file.append(b"0123456789").expect("append");
        let mut out = [0u8; 4];
        file.read_at(3, &mut out).expect("read");
        assert_eq!(&out, b"3456");
        assert_eq!(meter.read().bytes, 4);
        assert_eq!(file.view().map_err(|e| e.kind()).err(), Some(io::ErrorKind::Unsupported));
    }
}
