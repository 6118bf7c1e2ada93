//! What the benchmark binaries' command lines share: clap value parsers for sizes, counts, maps and codecs,
//! and [`parse_or_exit`], which answers `--help` and bad flags the same way in every binary.

use cleaner::map::MapKind;
use log_core::kafka::Compression;

/// A size with a binary unit (`4096`, `64KiB`, `1.5GiB`).
///
/// # Errors
/// Why the text is not a size.
pub fn bytes(text: &str) -> Result<u64, String> {
    logcompact::parse_bytes(text).map_err(|e| e.to_string())
}

/// A count with a decimal unit (`250k`, `2M`).
///
/// # Errors
/// Why the text is not a count.
pub fn count(text: &str) -> Result<u64, String> {
    logcompact::parse_count(text).map_err(|e| e.to_string())
}

/// A map by its name (`skimpy`, `fullkey`, `compact`, `external`).
///
/// # Errors
/// The names there are.
pub fn map(text: &str) -> Result<MapKind, String> {
    MapKind::from_name(text.trim()).ok_or(format!("unknown map {text} (skimpy, fullkey, compact or external)"))
}

/// How a compaction maps its keys: a map (or the external pass), or `auto` (Kafka's map while one pass of it
/// holds the dirty section, else the external pass: `CleanerConfig::one_pass`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MapChoice {
    /// The map pass 1 starts with.
    pub kind: MapKind,
    /// `auto`: a full map falls back to the external pass.
    pub one_pass: bool,
}

impl From<MapKind> for MapChoice {
    fn from(kind: MapKind) -> MapChoice {
        MapChoice { kind, one_pass: false }
    }
}

impl MapChoice {
    /// The name on the command line and in the benchmark's lines.
    pub fn name(self) -> &'static str {
        if self.one_pass { "auto" } else { self.kind.name() }
    }
}

/// A map by its name, or `auto` ([`MapChoice`]).
///
/// # Errors
/// The names there are.
pub fn map_choice(text: &str) -> Result<MapChoice, String> {
    if text.trim() == "auto" {
        return Ok(MapChoice { kind: MapKind::Skimpy, one_pass: true });
    }
    map(text)
        .map(|kind| MapChoice { kind, one_pass: false })
        .map_err(|_| format!("unknown map {text} (skimpy, fullkey, compact, external or auto)"))
}

/// A codec by Kafka's name (`none`, `gzip`, `snappy`, `lz4`, `zstd`).
///
/// # Errors
/// The names there are.
pub fn codec(text: &str) -> Result<Compression, String> {
    Compression::ALL
        .into_iter()
        .find(|c| c.name() == text.trim())
        .ok_or(format!("unknown codec {text} (none, gzip, snappy, lz4 or zstd)"))
}

/// The arguments of this process, parsed as `A`: on `--help` the help and exit 0, on a bad flag the error and
/// exit 2.
pub fn parse_or_exit<A: clap::Parser>() -> A {
    A::try_parse().unwrap_or_else(|e| {
        let code = if e.use_stderr() { 2 } else { 0 };
        let _ = e.print();
        std::process::exit(code)
    })
}
