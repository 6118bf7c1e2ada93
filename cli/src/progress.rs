//! Progress bars for long commands: drawn on standard error when it is a terminal, hidden otherwise.

use indicatif::{ProgressBar, ProgressStyle};

/// A bar of `total` units labelled `what`; hidden when standard error is not a terminal.
pub fn bar(total: u64, what: &str, bytes: bool) -> ProgressBar {
    let bar = ProgressBar::new(total);
    let template = if bytes {
        "{msg:>8} [{bar:40}] {bytes}/{total_bytes} ({bytes_per_sec}, {eta})"
    } else {
        "{msg:>8} [{bar:40}] {human_pos}/{human_len} ({elapsed}, {eta} left)"
    };
    if let Ok(style) = ProgressStyle::with_template(template) {
        bar.set_style(style.progress_chars("=> "));
    }
    bar.set_message(what.to_owned());
    bar
}
