//! `logcompact run`: executes a script of the seed's command language against a log.

use std::io::{BufRead, Write};
use std::sync::Arc;

use cleaner::{Cleaner, CleanerConfig, PassOptions, SystemClock};
use log_core::Log;

use crate::failure::Failure;
use crate::format;
use crate::script::{Command, parse_line};

/// Runs every line of `input` against `log`, printing what `DUMP` and `READ` print to `out` and, when
/// `stats` is set, one JSON line of statistics per pass to `err`.
///
/// # Errors
/// [`Failure::Script`] for a bad line (naming its number); [`Failure::Runtime`] when the log or the cleaner
/// fails.
pub fn run_script(
    input: impl BufRead,
    log: &Log,
    cleaner_config: &CleanerConfig,
    pass_options: PassOptions,
    stats: bool,
    out: &mut impl Write,
    err: &mut impl Write,
) -> Result<(), Failure> {
    let mut cleaner = Cleaner::new(cleaner_config.clone(), Arc::new(SystemClock))
        .map_err(|e| Failure::from_cleaner("cannot build the offset map", &e))?;
    let mut warned = false;
    for (index, line) in input.lines().enumerate() {
        let number = index + 1;
        let line = line.map_err(|e| Failure::Runtime(format!("cannot read line {number}: {e}")))?;
        let command = match parse_line(&line) {
            Ok(Some(c)) => c,
            Ok(None) => continue,
            Err(e) => return Err(Failure::Script { line: number, message: e.to_string() }),
        };
        let at = |e: &dyn std::fmt::Display| Failure::Runtime(format!("line {number}: {e}"));
        let log_err = |e: log_core::Error| Failure::from_log(&format!("line {number}"), &e);
        match command {
            Command::Put { key, value } => {
                log.put(key.as_bytes(), value.as_bytes()).map_err(log_err)?;
            }
            Command::Del { key } => {
                log.delete(key.as_bytes()).map_err(log_err)?;
            }
            Command::Roll => {
                log.roll().map_err(log_err)?;
            }
            Command::Compact { purge } => {
                let s = cleaner
                    .clean(log, PassOptions { purge, ..pass_options })
                    .map_err(|e| Failure::from_cleaner(&format!("line {number}"), &e))?;
                if stats {
                    let json = serde_json::to_string(&s).map_err(|e| at(&e))?;
                    writeln!(err, "{json}").map_err(|e| at(&e))?;
                }
                if let Some(passes) = s.passes_needed().filter(|_| !warned) {
                    warned = true;
                    writeln!(err, "{}", crate::ops::many_passes_warning(&s, passes, None)).map_err(|e| at(&e))?;
                }
            }
            Command::Dump => format::dump(&log.snapshot(), out)?,
            Command::Read { offset } => match log.read(offset).map_err(log_err)? {
                Some(r) => writeln!(out, "{}", format::record(&r)).map_err(|e| at(&e))?,
                None => writeln!(out, "END").map_err(|e| at(&e))?,
            },
        }
    }
    Ok(())
}
