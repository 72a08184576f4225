//! Records the git commit for provenance in summary.json (`ecnlab.commit`), when built from a checkout, and a
//! hash of the simulator's sources, which keys `reproduce`'s run cache (a changed simulator never reuses runs).

use std::path::{Path, PathBuf};

/// Every file under `dir`, sorted, so the hash does not depend on directory order.
fn files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    for e in entries.flatten() {
        let path = e.path();
        if path.is_dir() {
            files(&path, out);
        } else {
            out.push(path);
        }
    }
}

/// FNV-1a over the relative paths and contents of `src/` and `data/`.
fn source_hash() -> String {
    let mut all = vec![];
    for dir in ["src", "data"] {
        files(Path::new(dir), &mut all);
    }
    all.sort();
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for path in &all {
        let bytes = path.to_string_lossy().into_owned().into_bytes();
        for b in bytes.iter().chain(&std::fs::read(path).unwrap_or_default()) {
            h = (h ^ *b as u64).wrapping_mul(0x100_0000_01b3);
        }
    }
    format!("{h:016x}")
}

fn main() {
    let commit = std::process::Command::new("git")
        .args(["rev-parse", "--short=12", "HEAD"])
        .output()
        .ok()
        .filter(|o| o.status.success())
        .and_then(|o| String::from_utf8(o.stdout).ok())
        .map(|s| s.trim().to_string())
        .unwrap_or_else(|| "unknown".into());
    let dirty = std::process::Command::new("git")
        .args(["status", "--porcelain", "--untracked-files=no"])
        .output()
        .ok()
        .is_some_and(|o| !o.stdout.is_empty());
    println!("cargo:rustc-env=ECNLAB_COMMIT={commit}{}", if dirty { "-dirty" } else { "" });
    println!("cargo:rustc-env=ECNLAB_SOURCE_HASH={}", source_hash());
    println!("cargo:rerun-if-changed=src");
    println!("cargo:rerun-if-changed=data");
    println!("cargo:rerun-if-changed=../../.git/HEAD");
    println!("cargo:rerun-if-changed=../../.git/index");
}
