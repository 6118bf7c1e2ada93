//! Running the `logcompact` binary from tests.
#![allow(dead_code)]

use std::collections::BTreeMap;
use std::io::Write;
use std::path::Path;
use std::process::{Command, Output, Stdio};

/// The binary under test: this build's, or the one named by `LOGCOMPACT_BIN` (to run the same tests against
/// an older build and watch them fail).
pub fn bin() -> String {
    std::env::var("LOGCOMPACT_BIN").unwrap_or_else(|_| env!("CARGO_BIN_EXE_logcompact").to_owned())
}

/// Runs `logcompact ARGS` with `stdin` as its standard input.
pub fn logcompact(args: &[&str], stdin: &str) -> Output {
    let mut child = Command::new(bin())
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn logcompact");
    // The command may exit (on a bad option) before reading its input: a broken pipe is fine then.
    match child.stdin.take().expect("stdin").write_all(stdin.as_bytes()) {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => panic!("write stdin: {e}"),
        _ => {}
    }
    child.wait_with_output().expect("wait")
}

/// Every entry of a directory with its bytes (`None` for what is not a regular file), to show that a
/// command changed nothing.
pub fn contents(dir: &Path) -> BTreeMap<String, Option<Vec<u8>>> {
    std::fs::read_dir(dir)
        .expect("list")
        .map(|e| {
            let e = e.expect("entry");
            let name = e.file_name().into_string().expect("utf-8 name");
            let meta = std::fs::symlink_metadata(e.path()).expect("stat");
            (name, meta.is_file().then(|| std::fs::read(e.path()).expect("read")))
        })
        .collect()
}

/// Standard error as text.
pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// Standard output as text.
pub fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// A path as `&str`.
pub fn path(p: &Path) -> &str {
    p.to_str().expect("utf-8 path")
}
