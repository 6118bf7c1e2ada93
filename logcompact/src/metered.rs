//! A store whose files' reads are counted on a progress [`Meter`]: for commands whose reading happens inside
//! code that knows nothing of progress (a repair's plan), the bytes read are what a person watches.
//!
//! Invariant: everything but reading is the inner store's, unchanged ([`HookedStore`]); a file is only read
//! through [`log_core::Segment::read_at`] (no view), so that every byte read is counted once as it is read.

use std::sync::Arc;

use log_core::SegmentStore;
use log_core::hooked::{HookedStore, StoreHooks};
use log_core::progress::Meter;

/// A store counting its files' reads on a [`Meter`].
pub type MeteredStore = HookedStore<ReadMeter>;

/// The hook of a [`MeteredStore`]: each read's bytes counted on its meter.
#[derive(Debug)]
pub struct ReadMeter(Arc<Meter>);

impl StoreHooks for ReadMeter {
    fn after_read(&self, bytes: u64) {
        self.0.add(bytes, 0);
    }

    /// Never a view: a view's bytes would be read without being counted.
    fn allows_views(&self) -> bool {
        false
    }
}

/// `inner`, its reads counted on `meter`.
#[must_use]
pub fn metered(inner: Arc<dyn SegmentStore>, meter: Arc<Meter>) -> MeteredStore {
    HookedStore::new(inner, Arc::new(ReadMeter(meter)))
}

#[cfg(test)]
mod tests {
    use std::io;

    use log_core::SegmentStore as _;

    use super::*;

    #[test]
    fn reads_are_counted_and_views_refused() {
        let inner: Arc<dyn SegmentStore> = Arc::new(storage_mem::MemStore::new());
        let meter = Arc::new(Meter::running_total());
        let store = metered(inner, Arc::clone(&meter));
        let file = store.create("a").expect("create");
        file.append(b"0123456789").expect("append");
        let mut out = [0u8; 4];
        file.read_at(3, &mut out).expect("read");
        assert_eq!(&out, b"3456");
        assert_eq!(meter.read().bytes, 4);
        assert_eq!(file.view().map_err(|e| e.kind()).err(), Some(io::ErrorKind::Unsupported));
    }
}
