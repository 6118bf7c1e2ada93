//! A fault-injecting [`SegmentStore`] wrapper: fails one chosen operation with an I/O error and lets every
//! other through, for tests of how the log handles a failed write, sync, rename, delete, list or create.
//!
//! Unlike a crash ([`crate::crash`]), the process goes on after the failure and the store keeps working, so
//! a test can see what the log does next: it must report the error, refuse writes until it is reopened (an
//! `fsync` that failed is never retried; the durable state is unknown), and a reopen must give a valid log.
//!
//! Operations are counted per [`Op`] kind across the store and its files, in call order. [`FaultStore::fail`]
//! arms the failure of the `n`th operation (0-based) of a kind; [`FaultStore::counts`] after a dry run tells
//! how many there were to sweep over.

use std::fmt;
use std::io;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use log_core::{Segment, SegmentBytes, SegmentStore};

/// A kind of operation that can be made to fail.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Op {
    /// [`Segment::append`].
    Write,
    /// [`Segment::sync`] and [`SegmentStore::sync_dir`].
    Sync,
    /// [`SegmentStore::rename`].
    Rename,
    /// [`SegmentStore::delete`].
    Delete,
    /// [`SegmentStore::list`].
    List,
    /// [`SegmentStore::create`].
    Create,
    /// [`Segment::truncate`].
    Truncate,
}

impl Op {
    /// Every kind.
    pub const ALL: [Op; 7] = [Op::Write, Op::Sync, Op::Rename, Op::Delete, Op::List, Op::Create, Op::Truncate];

    fn index(self) -> usize {
        match self {
            Op::Write => 0,
            Op::Sync => 1,
            Op::Rename => 2,
            Op::Delete => 3,
            Op::List => 4,
            Op::Create => 5,
            Op::Truncate => 6,
        }
    }
}

/// The payload of an injected error.
#[derive(Debug)]
struct InjectedFault(Op, u64);

impl fmt::Display for InjectedFault {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "injected failure of {:?} number {}", self.0, self.1)
    }
}

impl std::error::Error for InjectedFault {}

/// True if `err` is an error injected by a [`FaultStore`].
pub fn is_injected(err: &io::Error) -> bool {
    err.get_ref().is_some_and(|inner| inner.is::<InjectedFault>())
}

#[derive(Debug, Default)]
struct Counters {
    counts: [AtomicU64; 7],
    armed: Mutex<Option<(Op, u64)>>,
    fired: AtomicU64,
}

impl Counters {
    /// Counts one operation of kind `op`; `Err` if it is the armed one.
    fn tick(&self, op: Op) -> io::Result<()> {
        let n = self.counts[op.index()].fetch_add(1, Ordering::SeqCst);
        let mut armed = self.armed.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if *armed == Some((op, n)) {
            *armed = None;
            self.fired.fetch_add(1, Ordering::SeqCst);
            return Err(io::Error::other(InjectedFault(op, n)));
        }
        Ok(())
    }
}

/// A store that passes everything to `inner` but the one operation armed to fail.
#[derive(Debug, Clone)]
pub struct FaultStore {
    inner: Arc<dyn SegmentStore>,
    counters: Arc<Counters>,
}

impl FaultStore {
    /// Wraps `inner`; nothing is armed.
    pub fn new(inner: Arc<dyn SegmentStore>) -> Self {
        FaultStore { inner, counters: Arc::new(Counters::default()) }
    }

    /// Arms the failure of operation number `n` (counting from 0 since the store was made) of kind `op`;
    /// replaces an earlier armed one. It fails once, with an [`io::Error`] of kind
    /// [`io::ErrorKind::Other`] (see [`is_injected`]); the operation is not carried out.
    pub fn fail(&self, op: Op, n: u64) {
        *self.counters.armed.lock().unwrap_or_else(std::sync::PoisonError::into_inner) = Some((op, n));
    }

    /// Operations of kind `op` so far.
    pub fn count(&self, op: Op) -> u64 {
        self.counters.counts[op.index()].load(Ordering::SeqCst)
    }

    /// Failures injected so far.
    pub fn fired(&self) -> u64 {
        self.counters.fired.load(Ordering::SeqCst)
    }

    /// The wrapped store.
    pub fn inner(&self) -> &Arc<dyn SegmentStore> {
        &self.inner
    }

    fn wrap(&self, seg: Arc<dyn Segment>) -> Arc<dyn Segment> {
        Arc::new(FaultSegment { inner: seg, counters: Arc::clone(&self.counters) })
    }
}

impl SegmentStore for FaultStore {
    fn create(&self, name: &str) -> io::Result<Arc<dyn Segment>> {
        self.counters.tick(Op::Create)?;
        Ok(self.wrap(self.inner.create(name)?))
    }

    fn open(&self, name: &str) -> io::Result<Arc<dyn Segment>> {
        Ok(self.wrap(self.inner.open(name)?))
    }

    fn list(&self) -> io::Result<Vec<String>> {
        self.counters.tick(Op::List)?;
        self.inner.list()
    }

    fn file_id(&self, name: &str) -> io::Result<u64> {
        self.inner.file_id(name)
    }

    fn is_read_only(&self) -> bool {
        self.inner.is_read_only()
    }

    fn rename(&self, from: &str, to: &str) -> io::Result<()> {
        self.counters.tick(Op::Rename)?;
        self.inner.rename(from, to)
    }

    fn delete(&self, name: &str) -> io::Result<()> {
        self.counters.tick(Op::Delete)?;
        self.inner.delete(name)
    }

    fn sync_dir(&self) -> io::Result<()> {
        self.counters.tick(Op::Sync)?;
        self.inner.sync_dir()
    }
}

/// A file of a [`FaultStore`].
#[derive(Debug)]
pub struct FaultSegment {
    inner: Arc<dyn Segment>,
    counters: Arc<Counters>,
}

impl Segment for FaultSegment {
    fn len(&self) -> u64 {
        self.inner.len()
    }

    fn append(&self, data: &[u8]) -> io::Result<u64> {
        self.counters.tick(Op::Write)?;
        self.inner.append(data)
    }

    fn read_at(&self, pos: u64, out: &mut [u8]) -> io::Result<()> {
        self.inner.read_at(pos, out)
    }

    fn truncate(&self, len: u64) -> io::Result<()> {
        self.counters.tick(Op::Truncate)?;
        self.inner.truncate(len)
    }

    fn sync(&self) -> io::Result<()> {
        self.counters.tick(Op::Sync)?;
        self.inner.sync()
    }

    fn seal(&self) -> io::Result<()> {
        self.inner.seal()
    }

    fn is_sealed(&self) -> bool {
        self.inner.is_sealed()
    }

    fn view(&self) -> io::Result<SegmentBytes> {
        self.inner.view()
    }

    fn file_id(&self) -> u64 {
        self.inner.file_id()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::MemStore;

    #[test]
    fn fails_exactly_the_armed_operation_once() {
        let store = FaultStore::new(Arc::new(MemStore::new()));
        let a = store.create("a").expect("create");
        store.fail(Op::Write, 1);
        a.append(b"0").expect("write 0");
        let err = a.append(b"1").expect_err("write 1 fails");
        assert!(is_injected(&err));
        a.append(b"2").expect("write 2");
        assert_eq!((store.count(Op::Write), store.fired()), (3, 1));
        let mut out = [0u8; 2];
        a.read_at(0, &mut out).expect("read");
        assert_eq!(&out, b"02", "the failed write was not carried out");
        store.fail(Op::Rename, 0);
        assert!(store.rename("a", "b").is_err());
        assert!(store.open("a").is_ok(), "the failed rename changed nothing");
        store.rename("a", "b").expect("a later rename works");
    }
}
