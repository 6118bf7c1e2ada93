//! `logcompact`: the command line of the logcompact toolkit. It only parses arguments and calls the
//! libraries (`logcompact`, and through it `log-core`, the storage backends and `cleaner`); each command's
//! arguments and code are in `cmd/<command>.rs`, the flag groups several share in `args.rs`.

#![warn(clippy::print_stderr, clippy::print_stdout)]

mod args;
mod backend;
mod cmd;
mod compact_summary;
#[cfg(test)]
mod documented_commands;
mod dump_kafka;
mod failure;
mod format;
mod hints;
mod json;
mod mistakes;
mod out;
mod progress;
mod records;
mod script;
mod when;

use std::process::ExitCode;

use clap::{Parser, Subcommand};

use cmd::{
    advise::AdviseArgs, analyze::AnalyzeArgs, audit::AuditArgs, check::CheckArgs, clean::CleanArgs,
    compact::CompactArgs, dump::DumpArgs, generate::GenArgs, repair::RepairArgs, roll::RollArgs, run::RunArgs,
    status::StatusArgs,
};

/// Kafka-style log compaction: a segmented keyed log, its two-pass cleaner and its offset maps.
#[derive(Debug, Parser)]
#[command(
    name = "logcompact",
    version = env!("LOGCOMPACT_VERSION"),
    about = "Kafka-style log compaction: read, check, analyse, size, repair and compact keyed logs (this project's \
             own format, or a stopped Kafka broker's partitions in place, with --format kafka), and keep a data \
             directory compacted as Kafka's cleaner does",
    long_about = "Kafka-style log compaction: read, check, analyse, size, repair and compact keyed logs (this \
                  project's own format, or a stopped Kafka broker's partitions in place, with --format kafka), and \
                  keep a data directory compacted as Kafka's cleaner does.\n\n\
                  On a broker's partition (the broker stopped for anything that writes):\n  \
                  logcompact analyze --format kafka --dir /var/lib/kafka/data/orders-0   what compaction would \
                  reclaim, hanging transactions\n  \
                  logcompact dump    --format kafka --dir ... | head                      batches and records\n  \
                  logcompact advise  --format kafka --dir ...                             the dedupe buffer one \
                  pass needs\n  \
                  logcompact compact --format kafka --dir ... --until-clean               clean it in place\n  \
                  logcompact clean   --format kafka --data-dir /var/lib/kafka/data --until-clean\n\n\
                  Sizing without a log: logcompact advise --keys 50M --records 400M. The lesson's command \
                  language: logcompact run SCRIPT. Each command's --help says more.",
    after_help = failure::EXIT_CODES_SHORT, after_long_help = failure::EXIT_CODES
)]
struct Cli {
    #[command(subcommand)]
    command: Commands,
}

#[derive(Debug, Subcommand)]
enum Commands {
    /// Run a script of log commands, one per line, and print what DUMP and READ show.
    ///
    /// Commands: PUT key value | DEL key | ROLL | COMPACT | COMPACT PURGE | DUMP | READ offset.
    /// Blank lines and lines starting with '#' are skipped. Example:
    ///
    ///   printf 'PUT a 1\nPUT a 2\nROLL\nCOMPACT\nDUMP\n' | logcompact run -
    #[command(verbatim_doc_comment, after_help = failure::EXIT_CODES_SHORT, after_long_help = failure::EXIT_CODES)]
    Run(RunArgs),
    /// Append a deterministic synthetic workload to the log in a directory; prints what it appended (--json: as
    /// JSON). Records are
    /// timestamped 1 ms apart, the last one now.
    #[command(after_help = failure::EXIT_CODES_SHORT, after_long_help = failure::EXIT_CODES)]
    Gen(GenArgs),
    /// Clean the log in a directory; prints a summary of each pass and of the whole run (sizes before and
    /// after, records removed, time, what comes next), or with --json each pass's statistics as one JSON line.
    #[command(after_help = failure::EXIT_CODES_SHORT, after_long_help = failure::EXIT_CODES)]
    Compact(CompactArgs),
    /// Keep every log of a data directory (each subdirectory a log, or a stopped broker's partitions) compacted,
    /// as Kafka's cleaner threads do.
    ///
    /// Threads split the dedupe buffer; a free thread takes the log the policy picks (Kafka's: a log past
    /// max.compaction.lag.ms first, else the dirtiest above its min.cleanable.dirty.ratio) and runs one pass.
    /// Per-log settings, lowest first: the defaults (Kafka's; for __consumer_offsets and __transaction_state
    /// what Kafka creates them with), what earlier runs saved (<data-dir>/logcompact-settings.json), the
    /// --config file (defaults, then a [log] or [topic] section each), the flags. `status` shows where each
    /// setting came from. A second run on the same data directory is refused (exit 3); a Kafka log directory
    /// is held under the broker's own lock, so no broker starts on it meanwhile.
    /// A log whose pass fails is marked uncleanable and retried with backoff, then on SIGHUP; the others go
    /// on. Prints a summary per pass (or JSON lines), and keeps <data-dir>/cleaner-status.json up to date.
    /// SIGINT or SIGTERM abandons running passes (their logs unchanged); a second one ends at once.
    /// Exits 1 when a log is left uncleanable, after cleaning the others.
    #[command(verbatim_doc_comment, after_help = failure::EXIT_CODES_SHORT, after_long_help = failure::EXIT_CODES)]
    Clean(CleanArgs),
    /// Show the cleaner's gauges (Kafka's names) from the last `clean` run and every log's dirty ratio, last
    /// clean and last error. Reads only: works beside a running `clean`.
    #[command(after_help = failure::EXIT_CODES_SHORT, after_long_help = failure::EXIT_CODES)]
    Status(StatusArgs),
    /// Seal the active segment of the log in a directory, so that a pass can take its records.
    #[command(after_help = failure::EXIT_CODES_SHORT, after_long_help = failure::EXIT_CODES)]
    Roll(RollArgs),
    /// Print the log in a directory, one record per line (keys, values and headers quoted and escaped), or
    /// as JSON. Reads only: takes no lock, changes nothing.
    #[command(after_help = failure::EXIT_CODES_SHORT, after_long_help = failure::EXIT_CODES)]
    Dump(DumpArgs),
    /// Verify every checksum and invariant of the log in a directory without changing anything.
    ///
    /// Takes no lock, so it works beside a running writer and on a read-only mount. Exits 0 with a JSON
    /// report when every record is intact (notices on standard error tell what a crash left for the next open
    /// to repair), or 1 naming the file and byte position of the first problem.
    #[command(after_help = failure::EXIT_CODES_SHORT, after_long_help = failure::EXIT_CODES)]
    Check(CheckArgs),
    /// Size the dedupe buffer: for each offset map, the buffer one pass needs, the passes a buffer takes,
    /// bytes per key and the collision probability.
    ///
    /// From counts (--keys, with --records for keys spread uniformly over that many records) or from a log
    /// (--dir: reads its dirty section without changing anything, counts the distinct keys exactly, or by
    /// HyperLogLog on very large logs, and replays pass 1 with every map to find the passes exactly).
    #[command(after_help = failure::EXIT_CODES_SHORT, after_long_help = failure::EXIT_CODES)]
    Advise(AdviseArgs),
    /// Analyze a Kafka partition directory without changing it: records, keyed and unkeyed, tombstones,
    /// codecs, transactional and control batches, the dirty ratio against Kafka's cleaner-offset-checkpoint,
    /// what a full compaction would keep and reclaim (a dry run), and per map the buffer one pass needs.
    #[command(after_help = failure::EXIT_CODES_SHORT, after_long_help = failure::EXIT_CODES)]
    Analyze(AnalyzeArgs),
    /// Show what a repair of a damaged log would drop, or with --apply do it.
    ///
    /// A repair drops damaged byte ranges of segments while keeping every valid record around them, sets
    /// aside a .swap file that is not a valid cleaned segment (restoring the segment it replaced), and sets
    /// aside an unreadable checkpoint. A copy of every cut byte is kept in repair-<time>.*.bytes files in the
    /// directory. Without --apply nothing is changed.
    #[command(after_help = failure::EXIT_CODES_SHORT, after_long_help = failure::EXIT_CODES)]
    Repair(RepairArgs),
    /// Audit a partition's replicas across brokers: what each broker's replica holds (--data-dir, read only,
    /// beside a running broker, into --out FILE), or the files of every broker compared (--compare), naming the
    /// partitions whose replicas disagree (a deleted key back, a transaction read otherwise) and the fix.
    #[command(after_help = failure::EXIT_CODES_SHORT, after_long_help = failure::EXIT_CODES)]
    Audit(AuditArgs),
    /// Move a disagreeing replica's partition directory out of a stopped broker's log directory, so that the
    /// broker fetches the partition again from the leader at its next start (Kafka's remedy; under the broker's
    /// lock, nothing deleted).
    #[command(after_help = failure::EXIT_CODES_SHORT, after_long_help = failure::EXIT_CODES)]
    Refetch(cmd::refetch::RefetchArgs),
    /// Print a shell's completion script for logcompact (bash, zsh, fish, elvish, powershell).
    Completions(cmd::shell::CompletionsArgs),
    /// Write logcompact's man pages (one a command) into a directory.
    Man(cmd::shell::ManArgs),
}

fn main() -> ExitCode {
    cleaner::allocator::return_large_frees_to_the_system();
    let cli = Cli::parse();
    let result = match &cli.command {
        Commands::Run(a) => cmd::run::run(a),
        Commands::Gen(a) => cmd::generate::run(a),
        Commands::Compact(a) => cmd::compact::run(a),
        Commands::Clean(a) => cmd::clean::run(a),
        Commands::Status(a) => cmd::status::run(a),
        Commands::Roll(a) => cmd::roll::run(a),
        Commands::Dump(a) => cmd::dump::run(a),
        Commands::Check(a) => cmd::check::run(a),
        Commands::Analyze(a) => cmd::analyze::run(a),
        Commands::Repair(a) => cmd::repair::run(a),
        Commands::Advise(a) => cmd::advise::run(a),
        Commands::Audit(a) => cmd::audit::run(a),
        Commands::Refetch(a) => cmd::refetch::run(a),
        Commands::Completions(a) => cmd::shell::completions(a),
        Commands::Man(a) => cmd::shell::man(a),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(failure) => {
            crate::out::diag!("{failure}");
            failure.exit_code()
        }
    }
}
