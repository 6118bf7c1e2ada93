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

use log_core::SegmentStore;
use log_core::hooked::{HookedStore, StoreHooks, StoreOp};

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

/// The hook of a [`FaultStore`]: counts operations by kind and fails the armed one.
#[derive(Debug, Default)]
pub struct Faults {
    counts: [AtomicU64; 7],
    armed: Mutex<Option<(Op, u64)>>,
    fired: AtomicU64,
}

impl Faults {
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

    /// Arms the failure of operation number `n` (counting from 0 since the store was made) of kind `op`;
    /// replaces an earlier armed one. It fails once, with an [`io::Error`] of kind
    /// [`io::ErrorKind::Other`] (see [`is_injected`]); the operation is not carried out.
    pub fn fail(&self, op: Op, n: u64) {
        *self.armed.lock().unwrap_or_else(std::sync::PoisonError::into_inner) = Some((op, n));
    }

    /// Operations of kind `op` so far.
    pub fn count(&self, op: Op) -> u64 {
        self.counts[op.index()].load(Ordering::SeqCst)
    }

    /// Failures injected so far.
    pub fn fired(&self) -> u64 {
        self.fired.load(Ordering::SeqCst)
    }
}

impl StoreHooks for Faults {
    fn before(&self, op: StoreOp<'_>) -> io::Result<()> {
        let kind = match op {
            StoreOp::Create(_) => Op::Create,
            StoreOp::List => Op::List,
            StoreOp::Rename { .. } => Op::Rename,
            StoreOp::Delete(_) => Op::Delete,
            StoreOp::SyncDir | StoreOp::Sync => Op::Sync,
            StoreOp::Append(_) => Op::Write,
            StoreOp::Truncate(_) => Op::Truncate,
            StoreOp::Open(_) | StoreOp::Read(_) | StoreOp::Seal => return Ok(()),
        };
        self.tick(kind)
    }
}

/// A store that passes everything to the store it wraps but the one operation armed to fail
/// ([`FaultStore::hooks`] arms it and counts).
pub type FaultStore = HookedStore<Faults>;

/// `inner`, with nothing armed to fail.
pub fn fault_store(inner: Arc<dyn SegmentStore>) -> FaultStore {
    HookedStore::new(inner, Arc::new(Faults::default()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::MemStore;

    #[test]
    fn fails_exactly_the_armed_operation_once() {
        let store = fault_store(Arc::new(MemStore::new()));
        let a = store.create("a").expect("create");
        store.hooks().fail(Op::Write, 1);
        a.append(b"0").expect("write 0");
        let err = a.append(b"1").expect_err("write 1 fails");
        assert!(is_injected(&err));
        a.append(b"2").expect("write 2");
        assert_eq!((store.hooks().count(Op::Write), store.hooks().fired()), (3, 1));
        let mut out = [0u8; 2];
        a.read_at(0, &mut out).expect("read");
        assert_eq!(&out, b"02", "the failed write was not carried out");
        store.hooks().fail(Op::Rename, 0);
        assert!(store.rename("a", "b").is_err());
        assert!(store.open("a").is_ok(), "the failed rename changed nothing");
        store.rename("a", "b").expect("a later rename works");
    }
}
