//! The files every mode works on.

use std::path::PathBuf;
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

pub(super) fn fixture(quick: bool) -> anyhow::Result<Fixture> {
    let dir = tempfile::Builder::new().prefix("interpose-bench.").tempdir()?;
    let root = dir.path().canonicalize()?;
    let work = root.join("work");
    std::fs::create_dir_all(root.join("outside"))?;
    std::fs::create_dir_all(&work)?;
    std::fs::create_dir_all(work.join("home"))?;
    std::fs::create_dir_all(work.join("tmp"))?;
    let file = work.join("file.txt");
    std::fs::write(&file, "x\n")?;
    let denied = root.join("outside/secret");
    std::fs::write(&denied, "secret\n")?;
    let (tree_files, repo_files) = if quick { (500, 300) } else { (5_000, 3_000) };
    for i in 0..tree_files {
        let d = work.join(format!("tree/d{}", i / 100));
        std::fs::create_dir_all(&d)?;
        std::fs::write(d.join(format!("f{i}.txt")), format!("file {i}\n"))?;
    }
    let repo = work.join("repo");
    for i in 0..repo_files {
        let d = repo.join(format!("src/m{}", i / 100));
        std::fs::create_dir_all(&d)?;
        std::fs::write(d.join(format!("f{i}.rs")), format!("// {i}\n"))?;
    }
    let git = |args: &[&str]| -> anyhow::Result<()> {
        let o = Command::new("git").arg("-C").arg(&repo).args(args).stdout(Stdio::null()).output()?;
        anyhow::ensure!(o.status.success(), "git {args:?}: {}", String::from_utf8_lossy(&o.stderr));
        Ok(())
    };
    git(&["init", "-q"])?;
    git(&["add", "-A"])?;
    git(&["-c", "user.name=bench", "-c", "user.email=bench@localhost", "commit", "-q", "-m", "bench"])?;
    std::fs::write(work.join("small.c"), "#include <stdio.h>\nint main(void) { puts(\"hi\"); return 0; }\n")?;
    let socket = work.join("bench.sock");
    Ok(Fixture { _dir: dir, root, work, file, denied, socket })
}
