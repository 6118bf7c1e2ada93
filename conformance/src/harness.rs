//! The backends under test, behind one interface.

use std::sync::Arc;

use log_core::{CheckpointFile, Format, Log, LogConfig, SegmentStore};
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
    /// The segment format of the logs kept here.
    fn format(&self) -> Format {
        Format::Native
    }
    /// Where a log kept here keeps its cleaner checkpoint (a Kafka partition's log directory).
    fn checkpoint_file(&mut self) -> CheckpointFile {
        CheckpointFile::Own
    }
    /// Where a reader's view finds the checkpoint.
    fn reader_checkpoint_file(&self) -> CheckpointFile {
        CheckpointFile::Own
    }
    /// Opens the log kept here for writing, in its format.
    ///
    /// # Errors
    /// The log's.
    fn open_log(&mut self, config: LogConfig) -> log_core::Result<Log> {
        let store = self.open_store();
        match self.format() {
            Format::Native => Log::open(store, log_core::OpenOptions::new(config)),
            Format::Kafka => Log::open(store, log_core::OpenOptions::kafka(config, self.checkpoint_file())),
        }
    }
    /// Opens the log kept here for reading only, through [`Fixture::reader_store`].
    ///
    /// # Errors
    /// The log's.
    fn open_reader(&self, config: LogConfig) -> log_core::Result<Log> {
        let store = self.reader_store();
        match self.format() {
            Format::Native => Log::open(store, log_core::OpenOptions::new(config).read_only(true)),
            Format::Kafka => {
                Log::open(store, log_core::OpenOptions::kafka(config, self.reader_checkpoint_file()).read_only(true))
            }
        }
    }
}

/// Any backend holding Kafka partitions: the partition in one fixture of the backend, its log directory (the
/// broker's `cleaner-offset-checkpoint`) in another, crashed together.
#[derive(Debug, Clone, Copy)]
pub struct Kafka<H>(pub H);

struct KafkaFixture {
    partition: Box<dyn Fixture>,
    log_dir: Box<dyn Fixture>,
}

impl<H: Harness> Harness for Kafka<H> {
    fn name(&self) -> &'static str {
        match self.0.name() {
            "mem" => "kafka on mem",
            "file" => "kafka on file",
            "crash" => "kafka on crash",
            _ => "kafka",
        }
    }

    fn fixture(&self) -> Box<dyn Fixture> {
        Box::new(KafkaFixture { partition: self.0.fixture(), log_dir: self.0.fixture() })
    }
}

impl Fixture for KafkaFixture {
    fn open_store(&mut self) -> Arc<dyn SegmentStore> {
        self.partition.open_store()
    }

    fn reader_store(&self) -> Arc<dyn SegmentStore> {
        self.partition.reader_store()
    }

    fn crash(&mut self, seed: u64) -> bool {
        let crashed = self.partition.crash(seed);
        self.log_dir.crash(seed.rotate_left(17));
        crashed
    }

    fn format(&self) -> Format {
        Format::Kafka
    }

    fn checkpoint_file(&mut self) -> CheckpointFile {
        CheckpointFile::LogDir { dir: self.log_dir.open_store(), topic: "t".into(), partition: 0 }
    }

    fn reader_checkpoint_file(&self) -> CheckpointFile {
        CheckpointFile::LogDir { dir: self.log_dir.reader_store(), topic: "t".into(), partition: 0 }
    }
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
