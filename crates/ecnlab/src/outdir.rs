//! Output directories: written beside the target, swapped in whole, and never deleting what ecnlab did not write.
//!
//! Every directory ecnlab writes (a run directory of `run --out`, `Result.save`, an experiment's result directory
//! of `reproduce`) carries a marker file, [`MARKER`], naming its kind. The rules, for every front end (CLI, Python,
//! `reproduce`):
//! - The target may be a new path, an empty directory, or an existing ecnlab directory *of the same kind*, which
//!   is replaced. Anything else is refused before any simulation: `""`, `.`, `..`, the working directory or any
//!   of its ancestors, a file, a symbolic link, a directory without the marker.
//! - A run directory is written into a uniquely named hidden sibling (`.NAME.ecnlab-staging.PID.N`), which is
//!   created, marker first, when the target is checked: an unwritable location fails before the run. When the
//!   run is complete, an old run directory is renamed aside (`.NAME.ecnlab-old.PID.N`), the new one renamed in,
//!   and the old one deleted. A kill at any instant leaves the target complete (old or new) or absent, never
//!   half-deleted; the hidden leftovers of a killed process are removed by the next write to the same target.
//! - An experiment directory is written in place, because its `runs/` cache is what lets a grid resume; its
//!   result files (table.csv, check.json, ...) are removed at the start and each written atomically, so an
//!   interrupted `reproduce` never leaves a table and checks that look like a finished one.

use crate::error::Error;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

/// The marker file in every directory ecnlab writes.
pub const MARKER: &str = ".ecnlab";

/// Set only by the test that kills a run during its swap, to `STEP:FILE`: at that step of the swap (`before`,
/// `between` the old directory's move aside and the new one's move in, `after`) the process creates FILE and
/// waits there to be killed.
const HOLD_VAR: &str = "ECNLAB_TEST_HOLD_SWAP";

/// What a directory written by ecnlab holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// A run directory: config.toml, summary.json, fct.csv, series/, trace.csv.
    Run,
    /// An experiment's result directory: runs/ (the point cache), table.csv, check.json, check.md.
    Experiment,
}

impl Kind {
    fn name(self) -> &'static str {
        match self {
            Kind::Run => "run",
            Kind::Experiment => "experiment",
        }
    }

    fn marker_text(self) -> String {
        format!(
            "# Written by ecnlab. A later `--out` of the same kind may replace this directory (docs/OUTPUTS.md).\n\
             kind = \"{}\"\nversion = \"{}\"\ncommit = \"{}\"\n",
            self.name(),
            env!("CARGO_PKG_VERSION"),
            env!("ECNLAB_COMMIT"),
        )
    }
}

/// The kind a directory's marker names, if it has a readable one.
pub fn kind_of(dir: &Path) -> Option<Kind> {
    let text = std::fs::read_to_string(dir.join(MARKER)).ok()?;
    text.lines().find_map(|l| match l.split_once('=') {
        Some((k, v)) if k.trim() == "kind" => match v.trim().trim_matches('"') {
            "run" => Some(Kind::Run),
            "experiment" => Some(Kind::Experiment),
            _ => None,
        },
        _ => None,
    })
}

fn io_err(path: &Path, what: &str, e: std::io::Error) -> Error {
    Error::Io(format!("{}: {what}: {e}", path.display()))
}

/// The error for a target ecnlab may not write, naming the path and what to do instead.
fn refuse(target: &Path, why: &str, kind: Kind) -> Error {
    Error::config(
        "--out",
        format!(
            "`{}` {why}; give a new directory, or an existing ecnlab {} directory to replace it",
            target.display(),
            kind.name()
        ),
    )
}

/// Checks `target` against the rules of the module doc; returns its absolute path and whether it exists.
fn check_target(target: &Path, kind: Kind) -> Result<(PathBuf, bool), Error> {
    if target.as_os_str().is_empty() {
        return Err(refuse(target, "is empty", kind));
    }
    if target.file_name().is_none() {
        // `.`, `..`, `/`, or a path ending in one of them.
        return Err(refuse(target, "names no directory of its own (it ends in `.`, `..` or `/`)", kind));
    }
    let cwd = std::env::current_dir().map_err(|e| Error::Io(format!("the working directory: {e}")))?;
    let abs = if target.is_absolute() { target.to_path_buf() } else { cwd.join(target) };
    let meta = match std::fs::symlink_metadata(&abs) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok((abs, false)),
        Err(e) => return Err(io_err(target, "cannot inspect", e)),
    };
    if meta.file_type().is_symlink() {
        return Err(refuse(target, "is a symbolic link", kind));
    }
    if !meta.is_dir() {
        return Err(refuse(target, "is an existing file", kind));
    }
    let real = abs.canonicalize().map_err(|e| io_err(target, "cannot resolve", e))?;
    let real_cwd = cwd.canonicalize().unwrap_or(cwd);
    if real_cwd.starts_with(&real) {
        return Err(refuse(target, "is the working directory or one of its ancestors", kind));
    }
    match kind_of(&real) {
        Some(k) if k == kind => Ok((real, true)),
        Some(k) => {
            Err(refuse(target, &format!("is an ecnlab {} directory, not an {} one", k.name(), kind.name()), kind))
        }
        None if is_empty_dir(&real) => Ok((real, true)),
        None => {
            Err(refuse(target, &format!("exists and is not an ecnlab directory (it has no `{MARKER}` marker)"), kind))
        }
    }
}

fn is_empty_dir(dir: &Path) -> bool {
    std::fs::read_dir(dir).is_ok_and(|mut d| d.next().is_none())
}

/// Creates `dir` and any missing ancestors; returns those it created, deepest first, to remove on failure.
fn create_dirs(dir: &Path) -> Result<Vec<PathBuf>, Error> {
    let mut missing = vec![];
    let mut p = dir;
    while !p.exists() {
        missing.push(p.to_path_buf());
        match p.parent() {
            Some(parent) => p = parent,
            None => break,
        }
    }
    std::fs::create_dir_all(dir).map_err(|e| io_err(dir, "cannot create", e))?;
    Ok(missing)
}

/// A unique hidden sibling of `target`: `.NAME.ecnlab-ROLE.PID.N`.
fn sibling(target: &Path, role: &str) -> PathBuf {
    static SEQ: AtomicU64 = AtomicU64::new(0);
    let name = target.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let n = SEQ.fetch_add(1, Ordering::Relaxed);
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.subsec_nanos());
    target.with_file_name(format!(".{name}.ecnlab-{role}.{}.{n}{nanos:09}", std::process::id()))
}

/// Removes the hidden staging and set-aside siblings of `target` left by processes that no longer run (killed
/// mid-write). Only directories with ecnlab's name pattern, a dead writer's id and ecnlab's marker are touched.
fn remove_leftovers(target: &Path) {
    let (Some(parent), Some(name)) = (target.parent(), target.file_name()) else { return };
    let prefix = format!(".{}.ecnlab-", name.to_string_lossy());
    let Ok(entries) = std::fs::read_dir(parent) else { return };
    for e in entries.flatten() {
        let file = e.file_name().to_string_lossy().into_owned();
        let Some(rest) = file.strip_prefix(&prefix) else { continue };
        let mut parts = rest.split('.');
        let (Some(role), Some(pid)) = (parts.next(), parts.next().and_then(|p| p.parse::<u32>().ok())) else {
            continue;
        };
        let writer_alive = pid == std::process::id() || Path::new(&format!("/proc/{pid}")).exists();
        let on_linux = Path::new("/proc/self").exists();
        if matches!(role, "staging" | "old") && on_linux && !writer_alive && kind_of(&e.path()).is_some() {
            let _ = std::fs::remove_dir_all(e.path());
        }
    }
}

/// Waits at a named step of the swap when the kill-at-swap test asks for it (see `HOLD_VAR`).
fn hold(step: &str) {
    let Ok(spec) = std::env::var(HOLD_VAR) else { return };
    if let Some((at, file)) = spec.split_once(':') {
        if at == step && std::fs::write(file, b"").is_ok() {
            std::thread::sleep(std::time::Duration::from_secs(30));
        }
    }
}

/// A run directory being written: files go into [`Staged::dir`], and [`Staged::commit`] swaps it in. Dropped
/// uncommitted (an error, an interrupt), it removes the staging directory and the parents it created.
#[derive(Debug)]
pub struct Staged {
    target: PathBuf,
    staging: PathBuf,
    created_parents: Vec<PathBuf>,
    committed: bool,
}

impl Staged {
    /// Checks that `target` may become a run directory and creates its staging sibling (with the marker, so a
    /// read-only or missing location fails here, before any simulation).
    pub fn new(target: &Path) -> Result<Staged, Error> {
        let (abs, _) = check_target(target, Kind::Run)?;
        let parent = abs.parent().expect("a target with a file name has a parent").to_path_buf();
        let created_parents = create_dirs(&parent)?;
        remove_leftovers(&abs);
        let staging = sibling(&abs, "staging");
        let staged = Staged { target: abs, staging, created_parents, committed: false };
        std::fs::create_dir(&staged.staging).map_err(|e| io_err(&staged.staging, "cannot create", e))?;
        std::fs::write(staged.staging.join(MARKER), Kind::Run.marker_text())
            .map_err(|e| io_err(&staged.staging, "cannot write", e))?;
        Ok(staged)
    }

    /// Where to write the run's files.
    pub fn dir(&self) -> &Path {
        &self.staging
    }

    /// The run directory this becomes.
    pub fn target(&self) -> &Path {
        &self.target
    }

    /// Swaps the staged directory in as the target; an old run directory there is removed afterwards.
    pub fn commit(mut self) -> Result<PathBuf, Error> {
        hold("before");
        // Checked again: the target may have changed while the run went on.
        let (_, exists) = check_target(&self.target, Kind::Run)?;
        let mut old = None;
        if exists {
            if kind_of(&self.target).is_some() {
                let aside = sibling(&self.target, "old");
                std::fs::rename(&self.target, &aside).map_err(|e| io_err(&self.target, "cannot move aside", e))?;
                old = Some(aside);
            } else {
                // An empty directory: `remove_dir` cannot remove anything else.
                std::fs::remove_dir(&self.target).map_err(|e| io_err(&self.target, "cannot replace", e))?;
            }
        }
        hold("between");
        std::fs::rename(&self.staging, &self.target)
            .map_err(|e| io_err(&self.target, "cannot rename into place", e))?;
        self.committed = true;
        hold("after");
        if let Some(old) = old {
            std::fs::remove_dir_all(&old).map_err(|e| io_err(&old, "cannot remove the replaced run directory", e))?;
        }
        Ok(self.target.clone())
    }
}

impl Drop for Staged {
    fn drop(&mut self) {
        if !self.committed {
            let _ = std::fs::remove_dir_all(&self.staging);
            for p in &self.created_parents {
                if std::fs::remove_dir(p).is_err() {
                    break;
                }
            }
        }
    }
}

/// The result files of an experiment directory, removed when a reproduction starts (never `runs/`, the cache).
pub const EXPERIMENT_RESULTS: &[&str] = &["table.csv", "search.csv", "check.json", "check.md"];

/// Checks, without writing anything, that `target` may be opened as an experiment directory (`reproduce all`
/// checks every target before running the first).
pub fn check_experiment(target: &Path) -> Result<(), Error> {
    check_target(target, Kind::Experiment).map(|_| ())
}

/// Opens `target` as an experiment directory: created (with its marker) if new; if it exists, it must be one
/// (or empty). Its previous result files are removed, so only a finished reproduction leaves them.
pub fn open_experiment(target: &Path) -> Result<PathBuf, Error> {
    let (abs, _) = check_target(target, Kind::Experiment)?;
    create_dirs(&abs)?;
    if kind_of(&abs).is_none() {
        std::fs::write(abs.join(MARKER), Kind::Experiment.marker_text())
            .map_err(|e| io_err(&abs, "cannot write", e))?;
    }
    for f in EXPERIMENT_RESULTS {
        match std::fs::remove_file(abs.join(f)) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(io_err(&abs.join(f), "cannot remove the previous result", e)),
        }
    }
    Ok(abs)
}

/// Writes `file` atomically: into a unique sibling first, then renamed over it.
pub fn write_atomic(file: &Path, bytes: impl AsRef<[u8]>) -> Result<(), Error> {
    let tmp = sibling(file, "write");
    std::fs::write(&tmp, bytes).map_err(|e| {
        let _ = std::fs::remove_file(&tmp);
        io_err(file, "cannot write", e)
    })?;
    std::fs::rename(&tmp, file).map_err(|e| {
        let _ = std::fs::remove_file(&tmp);
        io_err(file, "cannot write", e)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A fresh scratch directory under the target dir (tests run with the crate as working directory).
    fn scratch(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("ecnlab-outdir-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    fn write_run(target: &Path, content: &str) -> Result<PathBuf, Error> {
        let s = Staged::new(target)?;
        std::fs::write(s.dir().join("summary.json"), content).unwrap();
        s.commit()
    }

    #[test]
    fn a_new_target_gets_a_marked_directory_and_no_leftovers() {
        let d = scratch("new");
        let t = d.join("a/b/run");
        write_run(&t, "1").unwrap();
        assert_eq!(kind_of(&t), Some(Kind::Run));
        assert_eq!(std::fs::read_to_string(t.join("summary.json")).unwrap(), "1");
        let names: Vec<_> = std::fs::read_dir(d.join("a/b")).unwrap().flatten().map(|e| e.file_name()).collect();
        assert_eq!(names, vec![std::ffi::OsString::from("run")], "no staging or set-aside sibling left");
        // Replacing it swaps the contents.
        write_run(&t, "2").unwrap();
        assert_eq!(std::fs::read_to_string(t.join("summary.json")).unwrap(), "2");
        assert_eq!(std::fs::read_dir(d.join("a/b")).unwrap().count(), 1);
    }

    #[test]
    fn foreign_files_and_directories_are_refused_and_left_alone() {
        let d = scratch("foreign");
        let file = d.join("notes.txt");
        std::fs::write(&file, "mine").unwrap();
        let dir = d.join("mine");
        std::fs::create_dir(&dir).unwrap();
        std::fs::write(dir.join("keep"), "mine").unwrap();
        for t in [&file, &dir] {
            let e = Staged::new(t).unwrap_err().to_string();
            assert!(e.contains("--out") && e.contains(&t.display().to_string()), "{e}");
        }
        assert_eq!(std::fs::read_to_string(&file).unwrap(), "mine");
        assert_eq!(std::fs::read_to_string(dir.join("keep")).unwrap(), "mine");
        // An experiment directory is not a run directory.
        let exp = d.join("exp");
        open_experiment(&exp).unwrap();
        assert!(Staged::new(&exp).unwrap_err().to_string().contains("experiment directory"));
        for bad in ["", ".", "..", "/", "a/.."] {
            assert!(Staged::new(Path::new(bad)).is_err(), "{bad:?} accepted");
        }
        assert!(std::fs::read_dir(&d).unwrap().flatten().all(|e| !e.file_name().to_string_lossy().starts_with('.')));
    }

    #[test]
    fn a_dropped_stage_removes_its_staging_and_the_parents_it_made() {
        let d = scratch("drop");
        let s = Staged::new(&d.join("x/y/run")).unwrap();
        assert!(s.dir().is_dir());
        drop(s);
        assert!(!d.join("x").exists(), "created parents removed");
        assert_eq!(std::fs::read_dir(&d).unwrap().count(), 0);
    }

    #[test]
    fn an_empty_directory_may_be_the_target() {
        let d = scratch("empty");
        let t = d.join("run");
        std::fs::create_dir(&t).unwrap();
        write_run(&t, "1").unwrap();
        assert_eq!(kind_of(&t), Some(Kind::Run));
    }

    #[test]
    fn leftovers_of_a_dead_writer_are_removed_and_others_kept() {
        let d = scratch("left");
        let t = d.join("run");
        // A pid far above any the kernel hands out (pid_max ≤ 2^22).
        let dead = d.join(".run.ecnlab-staging.99999999.1");
        std::fs::create_dir(&dead).unwrap();
        std::fs::write(dead.join(MARKER), Kind::Run.marker_text()).unwrap();
        let unmarked = d.join(".run.ecnlab-old.99999999.2");
        std::fs::create_dir(&unmarked).unwrap();
        write_run(&t, "1").unwrap();
        assert!(!dead.exists() || !Path::new("/proc/self").exists());
        assert!(unmarked.exists(), "a directory without the marker is not ecnlab's to remove");
    }

    #[test]
    fn an_experiment_directory_loses_its_old_results_but_keeps_its_cache() {
        let d = scratch("exp");
        let t = d.join("exp");
        open_experiment(&t).unwrap();
        std::fs::create_dir(t.join("runs")).unwrap();
        std::fs::write(t.join("runs/p.json"), "{}").unwrap();
        write_atomic(&t.join("table.csv"), "a\n").unwrap();
        open_experiment(&t).unwrap();
        assert!(!t.join("table.csv").exists());
        assert!(t.join("runs/p.json").exists());
        let run = d.join("run");
        write_run(&run, "1").unwrap();
        assert!(open_experiment(&run).is_err(), "a run directory is not an experiment directory");
    }
}
