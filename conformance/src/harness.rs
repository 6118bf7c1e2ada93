//! The backends under test, behind one interface.

use std::sync::Arc;

use log_core::SegmentStore;
use storage_mem::MemStore;
use storage_mem::crash::CrashStore;

/// A way to make stores of one backend.
pub trait Harness {
    /// Backend name, for messages.
    fn name(&self) -> &'static str;
    /// A new, empty place to keep a log.
    fn fixture(&self) -> Box<dyn Fixture>;
}

/// One log's storage across restarts.
pub trait Fixture {
    /// The store to open the log on. Called again after the previous log was dropped, it gives the same data
    /// as after a clean shutdown and restart.
    fn open_store(&mut self) -> Arc<dyn SegmentStore>;
    /// A store for a reader beside the writer: for files, a read-only store on the same directory (no lock,
    /// as another process would open it); for the in-memory backends, the same store.
    fn reader_store(&self) -> Arc<dyn SegmentStore>;
    /// Simulates a crash: afterwards [`Fixture::open_store`] gives only what was durable (with a torn tail
    /// chosen by `seed`). Returns `false` for backends that cannot simulate one (the next open is then a
    /// clean restart).
    fn crash(&mut self, seed: u64) -> bool;
}

/// storage-mem.
#[derive(Debug, Clone, Copy)]
pub struct Mem;

struct MemFixture(Arc<MemStore>);

impl Harness for Mem {
    fn name(&self) -> &'static str {
        "mem"
    }

    fn fixture(&self) -> Box<dyn Fixture> {
        Box::new(MemFixture(Arc::new(MemStore::new())))
    }
}

impl Fixture for MemFixture {
    fn open_store(&mut self) -> Arc<dyn SegmentStore> {
        Arc::clone(&self.0) as Arc<dyn SegmentStore>
    }

    fn reader_store(&self) -> Arc<dyn SegmentStore> {
        Arc::clone(&self.0) as Arc<dyn SegmentStore>
    }

    fn crash(&mut self, _seed: u64) -> bool {
        false
    }
}

/// storage-file in a temporary directory.
#[derive(Debug, Clone, Copy)]
pub struct Files;

struct FileFixture(tempfile::TempDir);

impl Harness for Files {
    fn name(&self) -> &'static str {
        "file"
    }

    fn fixture(&self) -> Box<dyn Fixture> {
        Box::new(FileFixture(tempfile::tempdir().expect("temporary directory")))
    }
}

impl Fixture for FileFixture {
    fn open_store(&mut self) -> Arc<dyn SegmentStore> {
        Arc::new(storage_file::FileStore::open(self.0.path().join("log")).expect("open the directory"))
    }

    fn reader_store(&self) -> Arc<dyn SegmentStore> {
        Arc::new(storage_file::FileStore::open_read_only(self.0.path().join("log")).expect("open read-only"))
    }

    fn crash(&mut self, _seed: u64) -> bool {
        false
    }
}

/// The crash-simulating store over storage-mem.
#[derive(Debug, Clone, Copy)]
pub struct Crash;

struct CrashFixture(Arc<CrashStore>);

impl Harness for Crash {
    fn name(&self) -> &'static str {
        "crash"
    }

    fn fixture(&self) -> Box<dyn Fixture> {
        Box::new(CrashFixture(Arc::new(CrashStore::new())))
    }
}

impl Fixture for CrashFixture {
    fn open_store(&mut self) -> Arc<dyn SegmentStore> {
        Arc::clone(&self.0) as Arc<dyn SegmentStore>
    }

    fn reader_store(&self) -> Arc<dyn SegmentStore> {
        Arc::clone(&self.0) as Arc<dyn SegmentStore>
    }

    fn crash(&mut self, seed: u64) -> bool {
        self.0 = Arc::new(self.0.crash_image(Some(seed)));
        true
    }
}
