//! Standard output that ends quietly when its reader goes away (`logcompact dump | head -1`), and diagnostics
//! on standard error that never stop a run.

use std::io::{self, Write};

/// Writes one line to standard error, ignoring a failed write: a closed or full standard error (`2>/dev/full`)
/// must not abandon a run, and `eprintln!` panics then. The only way this crate writes a diagnostic line
/// (`eprintln!` and `println!` are refused by the crate's lints).
macro_rules! diag {
    ($($arg:tt)*) => {
        $crate::out::diag_line(format_args!($($arg)*))
    };
}
pub(crate) use diag;

/// The line [`diag!`] writes.
pub fn diag_line(line: std::fmt::Arguments<'_>) {
    let mut err = io::stderr().lock();
    let _ = writeln!(err, "{line}");
}

/// The failure for output that could not be written.
pub fn write_failed(e: impl std::fmt::Display) -> crate::failure::Failure {
    crate::failure::Failure::Runtime(format!("cannot write output: {e}"))
}

/// Prints `value` as one JSON line on standard output (quietly nothing once the reader has gone).
///
/// # Errors
/// [`crate::failure::Failure::Runtime`] when it cannot be written.
pub fn print_json(value: &impl serde::Serialize) -> Result<(), crate::failure::Failure> {
    let text = serde_json::to_string(value).map_err(write_failed)?;
    let mut out = QuietPipe::new(std::io::stdout().lock());
    writeln!(out, "{text}").and_then(|()| out.flush()).map_err(write_failed)
}

/// A writer that turns a broken pipe into the end of output: later writes are dropped and report success,
/// so a command whose reader stopped reading finishes its work and exits 0 without an error message.
#[derive(Debug)]
pub struct QuietPipe<W: Write> {
    inner: W,
    closed: bool,
}

impl<W: Write> QuietPipe<W> {
    /// Wraps `inner`.
    pub fn new(inner: W) -> Self {
        QuietPipe { inner, closed: false }
    }

    fn quiet<T>(&mut self, r: io::Result<T>, ok: T) -> io::Result<T> {
        match r {
            Err(e) if e.kind() == io::ErrorKind::BrokenPipe => {
                self.closed = true;
                Ok(ok)
            }
            r => r,
        }
    }
}

impl<W: Write> Write for QuietPipe<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        if self.closed {
            return Ok(buf.len());
        }
        let r = self.inner.write(buf);
        self.quiet(r, buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        if self.closed {
            return Ok(());
        }
        let r = self.inner.flush();
        self.quiet(r, ())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Gone;

    impl Write for Gone {
        fn write(&mut self, _: &[u8]) -> io::Result<usize> {
            Err(io::ErrorKind::BrokenPipe.into())
        }
        fn flush(&mut self) -> io::Result<()> {
            Err(io::ErrorKind::BrokenPipe.into())
        }
    }

    #[test]
    fn a_broken_pipe_ends_output_quietly_other_errors_stay() {
        let mut out = QuietPipe::new(Gone);
        assert!(writeln!(out, "x").is_ok());
        assert!(out.closed);
        assert!(out.flush().is_ok());
        struct Full;
        impl Write for Full {
            fn write(&mut self, _: &[u8]) -> io::Result<usize> {
                Err(io::ErrorKind::StorageFull.into())
            }
            fn flush(&mut self) -> io::Result<()> {
                Ok(())
            }
        }
        assert!(writeln!(QuietPipe::new(Full), "x").is_err());
    }
}
