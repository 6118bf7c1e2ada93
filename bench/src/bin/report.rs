//! `cargo run --release -p bench --bin report -- [--full] [--out DIR] [--baseline FILE] [--threshold R]`
//!
//! Runs the comparison matrix (maps and the external pass × key cardinalities × dedupe buffers, memory
//! backend, and the file backend for a subset; each cell repeated beside its floor) and the Kafka rows, and
//! writes `report.json`, `report.md` and `report.svg` to `--out` (default `target/report/`). The quick matrix
//! runs unless `--full` is given. Progress goes to standard error: a bar on a terminal, a line a cell
//! elsewhere. Exits 1 when cells of one workload leave different logs or a slot is larger than documented
//! (never because of timings); 2 for bad arguments; 3 when the report cannot be written.

use std::path::PathBuf;
use std::process::ExitCode;

use bench::report::{self, Config, Report, ReportError, baseline, markdown, svg};
use clap::Parser;
use indicatif::{ProgressBar, ProgressStyle};

/// The comparison of the offset maps, the external pass and Kafka's own cleaner: report.json, report.md (its
/// conclusion first) and report.svg in --out.
#[derive(Parser)]
#[command(name = "report")]
struct Args {
    /// The full matrix: more keys, every buffer, Kafka's cleaner at a quarter buffer (about an hour on 2 cores;
    /// the default quick matrix takes about 6 to 10 minutes).
    #[arg(long, conflicts_with = "quick")]
    full: bool,
    /// The quick matrix (the default; kept so that older command lines still run).
    #[arg(long)]
    quick: bool,
    /// Where the report's files go.
    #[arg(long, value_name = "DIR", default_value = "target/report")]
    out: PathBuf,
    /// An earlier run's report.json: each cell's time over its floor is compared with it.
    #[arg(long, value_name = "FILE")]
    baseline: Option<PathBuf>,
    /// How much slower than the baseline a cell may be before it is flagged (also every run slower).
    #[arg(long, value_name = "R", default_value_t = 1.3)]
    threshold: f64,
}

fn main() -> ExitCode {
    cleaner::allocator::return_large_frees_to_the_system();
    // Our side of a Kafka row's comparison with Kafka's own cleaner, in a process of its own.
    let argv: Vec<String> = std::env::args().skip(1).collect();
    if argv.first().map(String::as_str) == Some(bench::vs_kafka::CHILD_FLAG) {
        return match bench::vs_kafka::child_main(&argv[1..]) {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("error: {e}");
                ExitCode::FAILURE
            }
        };
    }
    let args = match Args::try_parse() {
        Ok(a) => a,
        Err(e) => {
            let code = if e.use_stderr() { 2 } else { 0 };
            let _ = e.print();
            return ExitCode::from(code);
        }
    };
    let baseline: Option<Report> = match &args.baseline {
        None => None,
        Some(path) => match std::fs::read_to_string(path)
            .map_err(|e| e.to_string())
            .and_then(|t| serde_json::from_str(&t).map_err(|e| e.to_string()))
        {
            Ok(r) => Some(r),
            Err(e) => {
                eprintln!("error: cannot read the baseline {}: {e}", path.display());
                return ExitCode::from(2);
            }
        },
    };
    let config = Config { child_exe: std::env::current_exe().ok(), ..Config::new(args.quick || !args.full) };
    let kafka_runs = report::kafka::reference(&config).is_ok_and(|(k, _)| k.is_some());
    let backlog_rows = usize::from(kafka_runs && config.backlog_bytes > 0);
    let total = config.cells() + report::kafka::rows(&config, kafka_runs) + backlog_rows;
    let bar = ProgressBar::new(total as u64);
    if let Ok(style) = ProgressStyle::with_template("{msg:>36} [{bar:40}] {pos}/{len} cells ({elapsed})") {
        bar.set_style(style.progress_chars("=> "));
    }
    // Off a terminal (CI, a pipe), a line a cell on standard error instead of a bar nobody sees.
    let lines = !std::io::IsTerminal::is_terminal(&std::io::stderr());
    if lines {
        bar.set_draw_target(indicatif::ProgressDrawTarget::hidden());
        eprintln!(
            "report: {total} cells ({} runs each), {}",
            config.repeats,
            if config.quick { "quick" } else { "full" }
        );
    }
    let started = std::time::Instant::now();
    let mut done = 0;
    let report = report::run(&config, |p| {
        done += 1;
        let (what, over, seconds) = match p {
            report::Progress::Cell(c) => (
                format!("{}/{}/{} keys/{:.0}%", c.map, c.backend, c.keys, c.buffer_share * 100.0),
                c.best_over_floor,
                c.seconds,
            ),
            report::Progress::Kafka(k) => (
                format!(
                    "kafka {}/{}/{}/{:.0}%{}",
                    k.shape,
                    k.codec,
                    k.map,
                    k.buffer_share * 100.0,
                    k.vs_kafka.as_ref().map_or_else(String::new, |v| format!(
                        " (Kafka's cleaner {:.3} s, ours {:.3} s on its files: {:.1}x{})",
                        v.kafka_seconds.min,
                        v.seconds.min,
                        v.speedup,
                        if v.identical { ", byte for byte" } else { ", DIFFERENT bytes" }
                    ))
                ),
                k.best_over_floor,
                k.seconds.median,
            ),
            report::Progress::Backlog(t) => {
                let fastest = t.ours.iter().min_by(|a, b| a.run.seconds.total_cmp(&b.run.seconds));
                (
                    format!(
                        "backlog of {:.0} MiB: Kafka's cleaner {:.1} s in {} passes{}",
                        t.bytes as f64 / f64::from(1 << 20),
                        t.kafka.run.seconds,
                        t.kafka.run.passes,
                        fastest.map_or_else(String::new, |f| format!(", ours fastest with {}", f.run.cleaner))
                    ),
                    fastest.map_or(0.0, |f| f.run.seconds / t.floor.seconds().max(1e-9)),
                    fastest.map_or(0.0, |f| f.run.seconds),
                )
            }
        };
        bar.set_position(done as u64);
        bar.set_message(what.clone());
        if lines {
            eprintln!(
                "[{done}/{total} {:.0} s] {what}: {seconds:.3} s, {over:.2}x its floor",
                started.elapsed().as_secs_f64()
            );
        }
    });
    bar.finish_and_clear();
    let mut report = match report {
        Ok(r) => r,
        Err(e @ (ReportError::Mismatch(_) | ReportError::Memory(_))) => {
            eprintln!("error: {e}");
            return ExitCode::from(1);
        }
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::from(3);
        }
    };
    report.peak_rss_bytes = bench::vs_kafka::vm_hwm_bytes();
    let mut md = markdown::render(&report);
    if let Some(before) = &baseline {
        let rows = baseline::compare(before, &report, args.threshold);
        md.push('\n');
        md.push_str(&baseline::render(&rows, args.threshold, before));
        let slower = rows.iter().filter(|r| r.slower).count();
        let changed = rows.iter().filter(|r| r.result_changed).count();
        eprintln!(
            "baseline: {} cells compared, {slower} slower than {:.2}x, {changed} with a changed result",
            rows.len(),
            args.threshold
        );
    }
    let written = std::fs::create_dir_all(&args.out)
        .map_err(|e| e.to_string())
        .and_then(|()| serde_json::to_string_pretty(&report).map_err(|e| e.to_string()))
        .and_then(|json| std::fs::write(args.out.join("report.json"), json).map_err(|e| e.to_string()))
        .and_then(|()| std::fs::write(args.out.join("report.md"), &md).map_err(|e| e.to_string()))
        .and_then(|()| svg::write(&report, &args.out.join("report.svg")));
    if let Err(e) = written {
        eprintln!("error: cannot write the report to {}: {e}", args.out.display());
        return ExitCode::from(3);
    }
    println!("{md}");
    eprintln!("wrote {}/report.{{json,md,svg}}", args.out.display());
    ExitCode::SUCCESS
}
