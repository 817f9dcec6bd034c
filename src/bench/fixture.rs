//! The files every mode works on.

use super::BenchError;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// The fixtures: a workspace with a file, a tree, a repository and a C
/// file, and a file outside it.
pub(super) struct Fixture {
    _dir: tempfile::TempDir,
    /// The directory holding the workspace and what lies outside it.
    pub(super) root: PathBuf,
    pub(super) work: PathBuf,
    pub(super) file: PathBuf,
    pub(super) denied: PathBuf,
    /// Where the socket workloads bind their other end.
    pub(super) socket: PathBuf,
}

/// `std::fs::create_dir_all`, its error naming the directory.
fn create_dir(path: &Path) -> Result<(), BenchError> {
    std::fs::create_dir_all(path).map_err(|source| BenchError::CreateDir { path: path.into(), source })
}

/// `std::fs::write`, its error naming the file.
fn write(path: &Path, contents: impl AsRef<[u8]>) -> Result<(), BenchError> {
    std::fs::write(path, contents).map_err(|source| BenchError::Write { path: path.into(), source })
}

/// How many recipes the bench's makefile has.
pub(super) const RECIPES: usize = 100;

pub(super) fn fixture(quick: bool) -> Result<Fixture, BenchError> {
    let dir = tempfile::Builder::new().prefix("interpose-bench.").tempdir().map_err(BenchError::TempDir)?;
    let root =
        dir.path().canonicalize().map_err(|source| BenchError::Canonicalize { path: dir.path().into(), source })?;
    let work = root.join("work");
    create_dir(&root.join("outside"))?;
    create_dir(&work)?;
    create_dir(&work.join("home"))?;
    create_dir(&work.join("tmp"))?;
    let file = work.join("file.txt");
    write(&file, "x\n")?;
    let denied = root.join("outside/secret");
    write(&denied, "secret\n")?;
    let (tree_files, repo_files) = if quick { (500, 300) } else { (5_000, 3_000) };
    for i in 0..tree_files {
        let d = work.join(format!("tree/d{}", i / 100));
        create_dir(&d)?;
        write(&d.join(format!("f{i}.txt")), format!("file {i}\n"))?;
    }
    let repo = work.join("repo");
    for i in 0..repo_files {
        let d = repo.join(format!("src/m{}", i / 100));
        create_dir(&d)?;
        write(&d.join(format!("f{i}.rs")), format!("// {i}\n"))?;
    }
    let git = |args: &[&str]| -> Result<(), BenchError> {
        let o = Command::new("git")
            .arg("-C")
            .arg(&repo)
            .args(args)
            .stdout(Stdio::null())
            .output()
            .map_err(BenchError::RunGit)?;
        if !o.status.success() {
            let (args, stderr) = (args.iter().map(ToString::to_string).collect(), String::from_utf8_lossy(&o.stderr));
            return Err(BenchError::Git { args, stderr: stderr.into_owned() });
        }
        Ok(())
    };
    git(&["init", "-q"])?;
    git(&["add", "-A"])?;
    git(&["-c", "user.name=bench", "-c", "user.email=bench@localhost", "commit", "-q", "-m", "bench"])?;
    write(&work.join("small.c"), "#include <stdio.h>\nint main(void) { puts(\"hi\"); return 0; }\n")?;
    // A makefile whose every recipe make runs through `/bin/sh -c` (the `;`
    // asks for a shell): a process start per recipe, as a build's.
    let recipes: String = (0..RECIPES).map(|i| format!("r{i}:\n\t@true; true\n")).collect();
    let all: Vec<String> = (0..RECIPES).map(|i| format!("r{i}")).collect();
    write(&work.join("recipes.mk"), format!("all: {}\n{recipes}", all.join(" ")))?;
    let socket = work.join("bench.sock");
    Ok(Fixture { _dir: dir, root, work, file, denied, socket })
}
