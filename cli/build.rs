//! Names the build in `logcompact --version`: the package version and the git commit it was built from
//! (`0.1.0 (commit 1a2b3c4)`), or `(commit unknown)` outside a git checkout.

use std::path::{Path, PathBuf};
use std::process::Command;

/// What `git` prints for `args` in `root`, trimmed; `None` when git is missing or fails.
fn git(root: &Path, args: &[&str]) -> Option<String> {
    let out = Command::new("git").args(args).current_dir(root).output().ok().filter(|o| o.status.success())?;
    let text = String::from_utf8(out.stdout).ok()?.trim().to_owned();
    (!text.is_empty()).then_some(text)
}

fn main() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    println!("cargo:rerun-if-changed=build.rs");
    // Rebuilt when HEAD moves: a commit or a checkout changes HEAD or the branch's ref. The git directory is
    // asked of git, so a worktree (whose `.git` is a file) is followed too.
    if let Some(dir) = git(&root, &["rev-parse", "--git-dir"]) {
        let dir = root.join(PathBuf::from(dir));
        println!("cargo:rerun-if-changed={}", dir.join("HEAD").display());
        if let Some(branch) = git(&root, &["symbolic-ref", "-q", "HEAD"])
            && let Some(common) = git(&root, &["rev-parse", "--git-common-dir"])
        {
            let common = root.join(common);
            // A branch's ref is a file of its own, or a line of `packed-refs` once git packed it.
            let loose = common.join(branch);
            let watched = if loose.exists() { loose } else { common.join("packed-refs") };
            println!("cargo:rerun-if-changed={}", watched.display());
        }
    }
    let commit = git(&root, &["rev-parse", "--short=10", "HEAD"]).unwrap_or_else(|| "unknown".to_owned());
    let version = std::env::var("CARGO_PKG_VERSION").unwrap_or_default();
    println!("cargo:rustc-env=LOGCOMPACT_VERSION={version} (commit {commit})");
}
