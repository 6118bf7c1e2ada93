//! `logcompact completions SHELL` and `logcompact man --out DIR`: shell completions and man pages made from
//! the command line's own definitions, so they cannot drift from the flags.

use std::io::Write;
use std::path::PathBuf;

use clap::{Args, CommandFactory};

use crate::failure::Failure;

/// `completions`' arguments.
#[derive(Debug, Args)]
pub struct CompletionsArgs {
    /// The shell to complete in.
    ///
    /// Install, e.g. for bash: `logcompact completions bash > ~/.local/share/bash-completion/completions/logcompact`
    #[arg(value_enum)]
    shell: clap_complete::Shell,
}

/// `man`'s arguments.
#[derive(Debug, Args)]
pub struct ManArgs {
    /// The directory the pages are written to (created if missing)
    ///
    /// `logcompact.1`, then a page a command (`logcompact-clean.1`, ...). Read one with `man -l
    /// DIR/logcompact-clean.1`.
    #[arg(long, value_name = "DIR")]
    out: PathBuf,
}

/// Prints the completion script of `a.shell` to standard output.
///
/// # Errors
/// [`Failure::Runtime`] when standard output cannot be written.
pub fn completions(a: &CompletionsArgs) -> Result<(), Failure> {
    let mut script = Vec::new();
    clap_complete::generate(a.shell, &mut crate::Cli::command(), "logcompact", &mut script);
    let mut out = crate::out::QuietPipe::new(std::io::stdout().lock());
    out.write_all(&script).and_then(|()| out.flush()).map_err(crate::out::write_failed)
}

/// Writes the man pages into `a.out`, and names them on standard error.
///
/// # Errors
/// [`Failure::Runtime`] when the directory or a page cannot be written.
pub fn man(a: &ManArgs) -> Result<(), Failure> {
    let failed =
        |e: std::io::Error| Failure::Runtime(format!("cannot write the man pages to {}: {e}", a.out.display()));
    std::fs::create_dir_all(&a.out).map_err(failed)?;
    clap_mangen::generate_to(crate::Cli::command(), &a.out).map_err(failed)?;
    let mut pages: Vec<String> = std::fs::read_dir(&a.out)
        .map_err(failed)?
        .filter_map(|e| e.ok().map(|e| e.file_name().to_string_lossy().into_owned()))
        .filter(|n| n.starts_with("logcompact") && n.ends_with(".1"))
        .collect();
    pages.sort();
    crate::out::diag!("wrote {} man pages to {}: {}", pages.len(), a.out.display(), pages.join(", "));
    Ok(())
}
