//! The report's backlog rows (the full matrix only): a partition Kafka's cleaner fell behind on, 4 GiB of 16M
//! keys in 256 MiB segments, cleaned until clean in the default 128 MiB buffer by Kafka 4.4's own cleaner and
//! by each of our maps, the external pass and `auto` on one thread, beside the disk's floor (the partition read
//! once, what is kept written once): [`crate::head_to_head`]'s table, which `vs-kafka --backlog` prints for
//! both shapes and both thread counts.

use crate::args::MapChoice;
use crate::head_to_head::{Contender, Setup, Table};

use super::{Config, Progress, ReportError};

/// The clock both cleaners are given: after every record's timestamp.
const NOW_MS: i64 = 4_000_000_000_000;

/// The backlog's segment size: 256 MiB, or an eighth of a smaller partition (several segments, as a backlog
/// has).
fn segment_bytes(config: &Config) -> u64 {
    (config.backlog_bytes / 8).clamp(64 << 10, 256 << 20)
}

/// The backlog's tables (none when `config.backlog_bytes` is 0, or Kafka's cleaner does not run: the report
/// says why in [`super::Report::kafka_cleaner`]).
///
/// # Errors
/// [`ReportError::Failed`] when a cleaner fails, or ours keeps other records than Kafka's.
pub fn run(config: &Config, progress: &mut impl FnMut(Progress<'_>)) -> Result<Vec<Table>, ReportError> {
    let failed = |e: String| ReportError::Failed(format!("the backlog: {e}"));
    if config.backlog_bytes == 0 {
        return Ok(Vec::new());
    }
    let (Some(kafka), _) = super::kafka::reference(config)? else { return Ok(Vec::new()) };
    let Some(exe) = &config.child_exe else { return Ok(Vec::new()) };
    let scratch = tempfile::tempdir().map_err(|e| failed(e.to_string()))?;
    let source = scratch.path().join("source").join("backlog-0");
    let store = storage_file::FileStore::open(&source).map_err(|e| failed(e.to_string()))?;
    let keys = crate::Keys::new(usize::try_from(config.backlog_keys).map_err(|e| failed(e.to_string()))?, 16, 1);
    let codec = log_core::kafka::Compression::None;
    crate::kafka::write_partition(&store, &keys, u64::MAX, config.backlog_bytes, codec, segment_bytes(config), 1)
        .map_err(failed)?;
    drop((store, keys));
    let _ = std::fs::remove_file(source.join("logcompact.lock"));
    let contenders: Vec<Contender> = ["skimpy", "compact", "external", "auto"]
        .into_iter()
        .map(|name| crate::args::map_choice(name).map(|map: MapChoice| Contender { map, threads: 1 }))
        .collect::<Result<_, _>>()
        .map_err(failed)?;
    let setup = Setup {
        kafka,
        exe,
        root: scratch.path(),
        settings: crate::vs_kafka::Settings {
            buffer_bytes: config.backlog_buffer_bytes,
            segment_bytes: segment_bytes(config),
            load_factor: config.load_factor,
            now_ms: NOW_MS,
            threads: 1,
        },
        rounds: 1,
        contenders: &contenders,
    };
    let table = crate::head_to_head::clean_each(&setup, "plain", &source, "backlog-0", |_| {}).map_err(failed)?;
    if let Some(row) = table.ours.iter().find(|r| r.same_records != Some(true)) {
        return Err(ReportError::Mismatch(format!(
            "the backlog: {} kept other records than Kafka's cleaner",
            row.run.cleaner
        )));
    }
    progress(Progress::Backlog(&table));
    Ok(vec![table])
}
