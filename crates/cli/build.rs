//! Records the commit oio is built from for `oio --version` (OIO_GIT_COMMIT), or "unknown"
//! when git or the repository is absent (a source tarball, a crates.io build).

use std::path::Path;
use std::process::Command;

fn git(args: &[&str]) -> Option<String> {
    let out = Command::new("git").args(args).output().ok()?;
    if !out.status.success() {
        return None;
    }
    let s = String::from_utf8(out.stdout).ok()?.trim().to_string();
    (!s.is_empty()).then_some(s)
}

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    let commit = git(&["rev-parse", "--short", "HEAD"]).unwrap_or_else(|| "unknown".into());
    println!("cargo:rustc-env=OIO_GIT_COMMIT={commit}");
    // Rebuild when HEAD moves: HEAD itself (checkout), the branch it names (commit), and
    // packed-refs. Only files that exist: cargo reruns on every build for a missing one.
    // --git-path resolves these in a worktree, whose .git is a file.
    let mut watch = vec!["HEAD".to_string(), "packed-refs".to_string()];
    if let Some(r) = git(&["symbolic-ref", "-q", "HEAD"]) {
        watch.push(r);
    }
    for w in watch {
        if let Some(p) = git(&["rev-parse", "--git-path", &w]) {
            if Path::new(&p).exists() {
                let abs = std::fs::canonicalize(&p).unwrap_or_else(|_| p.into());
                println!("cargo:rerun-if-changed={}", abs.display());
            }
        }
    }
}
