//! Which log a free cleaner thread takes next: a small trait, with Kafka's rule and a fairer one.

use log_core::DirtySection;

use crate::settings::LogSettings;

/// A log a thread could clean now: not being cleaned, compacted by its policy, not waiting out a failure.
#[derive(Debug, Clone, Copy)]
pub struct Candidate<'a> {
    /// The log's name.
    pub name: &'a str,
    /// Its dirty section now (records younger than its minimum lag left out).
    pub dirty: DirtySection,
    /// Its settings.
    pub settings: &'a LogSettings,
    /// How far past `max.compaction.lag.ms` its oldest dirty record is (0 when it is not).
    pub compaction_delay_ms: i64,
    /// When a pass last finished on it, if one has.
    pub last_clean_ms: Option<i64>,
}

impl Candidate<'_> {
    /// Kafka's test: something to clean, and either a dirty ratio at or above `min.cleanable.dirty.ratio`
    /// or an oldest dirty record past `max.compaction.lag.ms`.
    pub fn is_cleanable(&self) -> bool {
        self.dirty.is_cleanable()
            && (self.dirty.dirty_ratio() >= self.settings.min_cleanable_dirty_ratio || self.compaction_delay_ms > 0)
    }
}

/// Chooses the next log to clean among candidates.
pub trait SchedulingPolicy: Send + Sync + std::fmt::Debug {
    /// The index in `candidates` of the log to clean next, or `None` when none should be cleaned now.
    fn choose(&self, candidates: &[Candidate<'_>], now_ms: i64) -> Option<usize>;

    /// A short name for status output.
    fn name(&self) -> &'static str;
}

/// Kafka's rule: among cleanable logs, one past its maximum lag first (the longest overdue), else the
/// dirtiest (highest dirty ratio).
#[derive(Debug, Clone, Copy, Default)]
pub struct DirtiestFirst;

impl SchedulingPolicy for DirtiestFirst {
    fn choose(&self, candidates: &[Candidate<'_>], _now_ms: i64) -> Option<usize> {
        let cleanable = candidates.iter().enumerate().filter(|(_, c)| c.is_cleanable());
        cleanable
            .max_by(|(_, a), (_, b)| {
                (a.compaction_delay_ms > 0)
                    .cmp(&(b.compaction_delay_ms > 0))
                    .then(a.compaction_delay_ms.cmp(&b.compaction_delay_ms))
                    .then(a.dirty.dirty_ratio().total_cmp(&b.dirty.dirty_ratio()))
            })
            .map(|(i, _)| i)
    }

    fn name(&self) -> &'static str {
        "dirtiest-first"
    }
}

/// A rule that cannot starve a log: among cleanable logs, the one whose oldest dirty record is oldest
/// (ties: the one cleaned longest ago), so a slow or rarely dirty log is not passed over forever by logs
/// that are always dirtier.
#[derive(Debug, Clone, Copy, Default)]
pub struct OldestDirtyFirst;

impl SchedulingPolicy for OldestDirtyFirst {
    fn choose(&self, candidates: &[Candidate<'_>], _now_ms: i64) -> Option<usize> {
        candidates
            .iter()
            .enumerate()
            .filter(|(_, c)| c.is_cleanable())
            .min_by_key(|(_, c)| {
                (c.dirty.oldest_dirty_timestamp.unwrap_or(i64::MAX), c.last_clean_ms.unwrap_or(i64::MIN))
            })
            .map(|(i, _)| i)
    }

    fn name(&self) -> &'static str {
        "oldest-dirty-first"
    }
}

/// The policies by name (`dirtiest-first`, Kafka's, and `oldest-dirty-first`).
pub fn policy_by_name(name: &str) -> Option<Box<dyn SchedulingPolicy>> {
    match name {
        "dirtiest-first" => Some(Box::new(DirtiestFirst)),
        "oldest-dirty-first" => Some(Box::new(OldestDirtyFirst)),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn candidate<'a>(
        name: &'a str,
        settings: &'a LogSettings,
        clean: u64,
        dirty: u64,
        delay: i64,
        oldest: i64,
    ) -> Candidate<'a> {
        let section = DirtySection {
            first_dirty_offset: 0,
            first_uncleanable_offset: u64::from(dirty > 0) * 100,
            clean_bytes: clean,
            dirty_bytes: dirty,
            oldest_dirty_timestamp: Some(oldest),
            ..DirtySection::default()
        };
        Candidate { name, dirty: section, settings, compaction_delay_ms: delay, last_clean_ms: None }
    }

    #[test]
    fn kafka_takes_an_overdue_log_first_then_the_dirtiest_above_its_ratio() {
        let s = LogSettings::default();
        let logs = [
            candidate("a", &s, 100, 60, 0, 5),  // ratio 0.375: below 0.5
            candidate("b", &s, 100, 300, 0, 9), // ratio 0.75
            candidate("c", &s, 100, 900, 0, 7), // ratio 0.9: the dirtiest
        ];
        assert_eq!(DirtiestFirst.choose(&logs, 0), Some(2));
        let mut overdue = logs;
        overdue[0].compaction_delay_ms = 1; // below its ratio, but past its maximum lag
        assert_eq!(DirtiestFirst.choose(&overdue, 0), Some(0));
        assert_eq!(OldestDirtyFirst.choose(&logs, 0), Some(2), "a is not cleanable; c's dirt is the oldest");
        let nothing = [candidate("d", &s, 100, 0, 0, 1), candidate("e", &s, 100, 10, 0, 1)];
        assert_eq!(DirtiestFirst.choose(&nothing, 0), None);
        assert_eq!(OldestDirtyFirst.choose(&nothing, 0), None);
    }
}
