//! Names the build in `logcompact --version`: the package version and the git commit it was built from
//! (`0.1.0 (commit 1a2b3c4)`), or `(commit unknown)` outside a git checkout.

use std::path::Path;
use std::process::Command;

fn main() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let git = root.join(".git");
    // Rebuilt when HEAD moves: a commit, a checkout (HEAD names the branch, the branch's ref names the commit).
    println!("cargo:rerun-if-changed={}", git.join("HEAD").display());
    if let Ok(head) = std::fs::read_to_string(git.join("HEAD"))
        && let Some(branch) = head.trim().strip_prefix("ref: ")
    {
        println!("cargo:rerun-if-changed={}", git.join(branch).display());
    }
    let commit = Command::new("git")
        .args(["rev-parse", "--short=10", "HEAD"])
        .current_dir(&root)
        .output()
        .ok()
        .filter(|o| o.status.success())
        .and_then(|o| String::from_utf8(o.stdout).ok())
        .map(|s| s.trim().to_owned())
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| "unknown".to_owned());
    let version = std::env::var("CARGO_PKG_VERSION").unwrap_or_default();
    println!("cargo:rustc-env=LOGCOMPACT_VERSION={version} (commit {commit})");
}
