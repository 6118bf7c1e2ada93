//! Sentences that point an operator at the next command: the flag a format needs, and what to run when a
//! buffer will take several passes.

use std::path::Path;

/// ` --format kafka` for a Kafka command line, nothing for the native format (its default).
pub fn format_flag(format: log_core::Format) -> &'static str {
    match format {
        log_core::Format::Native => "",
        log_core::Format::Kafka => " --format kafka",
    }
}

/// The note `compact` gives when its map filled and the pass took the external pass instead, or when `--map auto`
/// took it at once where the map would fill.
pub fn fell_back_note(stats: &cleaner::CleanStats, fell: &cleaner::FellBack) -> String {
    if fell.estimated {
        return format!(
            "note: the {} map would fill at about offset {} (about {} passes over the dirty section, each re-reading \
             the cleaned log): took the external pass at once, one pass to offset {}",
            fell.map, fell.refused_at, fell.passes, stats.end_offset
        );
    }
    format!(
        "note: the {} map filled at offset {} (about {} passes over the dirty section, each re-reading the cleaned \
         log): mapped it again with the external pass, one pass to offset {}",
        fell.map, fell.refused_at, fell.passes, stats.end_offset
    )
}

/// The warning `compact` and `run` give when a buffer will take several passes.
pub fn many_passes_warning(stats: &cleaner::CleanStats, passes: u64, dir: Option<(&Path, log_core::Format)>) -> String {
    let how = match dir {
        Some((d, f)) => format!("`logcompact advise --dir {}{}`", d.display(), format_flag(f)),
        None => "`logcompact advise`".to_owned(),
    };
    format!(
        "warning: the dedupe buffer held {} keys and mapped offsets {} of a dirty section reaching offset {}: about \
         {passes} passes to clean it, each re-reading the cleaned log; --map auto takes one (the external pass where \
         the map fills), and {how} tells the buffer one pass of the map needs",
        stats.offset_map.entries,
        log_core::human::offsets_until(stats.first_dirty_offset, stats.end_offset),
        stats.active_base
    )
}
