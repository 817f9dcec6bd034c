//! What the surface grants works, through real programs.

use crate::common::*;

#[test]
fn every_file_operation_inside_rw_works() {
    if !kernel_ok() {
        return;
    }
    let t = Tree::new();
    let o = t.sh("set -e
        echo one > f; echo two >> f; cat f
        mv f g; ln g hard; ln -s g soft; cat soft
        mkdir -p d/e; echo x > d/e/x; rm d/e/x; rmdir d/e d
        : > trunc; printf abc > trunc; truncate -s 1 trunc; cat trunc; echo
        rm g hard soft trunc
        ls -A");
    assert_eq!(stdout(&o), "one\ntwo\none\ntwo\na\n", "stderr: {}", stderr(&o));
    assert!(o.status.success(), "{o:?}");
    assert_eq!(std::fs::read_dir(&t.ws).unwrap().count(), 0, "everything was cleaned up");
}

#[test]
fn ro_is_readable_and_executable() {
    if !kernel_ok() {
        return;
    }
    let t = Tree::new();
    let o = t.sh("cat $RO/data.txt && $RO/tool.sh && ls $RO");
    assert_eq!(stdout(&o), "read-only data\ntool-ran\ndata.txt\ntool.sh\n", "{}", stderr(&o));
    assert!(o.status.success());
}

#[test]
fn own_proc_entries_and_devices_work() {
    if !kernel_ok() {
        return;
    }
    let t = Tree::new();
    let o = t.sh("grep -c ^Name: /proc/self/status; cat /proc/thread-self/comm; head -c 4 /dev/zero | wc -c; \
         echo gone > /dev/null; readlink /proc/self/cwd; test -r /proc/cpuinfo && echo cpuinfo; \
         echo piped | cat /dev/stdin");
    let ws = t.ws.display();
    assert_eq!(stdout(&o), format!("1\ncat\n4\n{ws}\ncpuinfo\npiped\n"), "{}", stderr(&o));
}

#[test]
fn private_tmpdir_is_writable_and_removed_afterwards() {
    if !kernel_ok() {
        return;
    }
    let t = Tree::new();
    let o = t.sh("echo $TMPDIR; echo scratch > $TMPDIR/x && cat $TMPDIR/x");
    let out = stdout(&o);
    let mut lines = out.lines();
    let tmpdir = lines.next().expect("TMPDIR printed");
    assert!(tmpdir.contains("interpose-"), "{tmpdir}");
    assert_eq!(lines.next(), Some("scratch"), "{}", stderr(&o));
    assert!(!std::path::Path::new(tmpdir).exists(), "{tmpdir} was removed at exit");
}

#[test]
fn git_commits_in_the_workspace() {
    if !kernel_ok() {
        return;
    }
    let t = Tree::new();
    let o = t
        .command(
            &[],
            &[
                "/bin/sh",
                "-c",
                "git init -q . && echo hi > a && git add a && git commit -qm first && git log --format=%s",
            ],
        )
        .env("HOME", &t.ws)
        .env("GIT_AUTHOR_NAME", "t")
        .env("GIT_AUTHOR_EMAIL", "t@example.com")
        .env("GIT_COMMITTER_NAME", "t")
        .env("GIT_COMMITTER_EMAIL", "t@example.com")
        .output()
        .unwrap();
    assert_eq!(stdout(&o), "first\n", "{}", stderr(&o));
    assert!(t.ws.join(".git/HEAD").exists());
}

#[test]
fn python_runs() {
    if !kernel_ok() {
        return;
    }
    let t = Tree::new();
    let o = t
        .command(
            &[],
            &[
                "/usr/bin/python3",
                "-c",
                "import json, email, asyncio, decimal, os; print(json.dumps(sorted(os.listdir('.'))))",
            ],
        )
        .output()
        .unwrap();
    assert_eq!(stdout(&o), "[]\n", "{}", stderr(&o));
}

#[test]
fn cargo_runs_with_its_toolchain_read_only() {
    if !kernel_ok() {
        return;
    }
    let home = std::path::PathBuf::from(std::env::var_os("HOME").expect("HOME"));
    let (cargo_home, rustup_home) = (home.join(".cargo"), home.join(".rustup"));
    assert!(cargo_home.exists() && rustup_home.exists(), "the test machine has rustup under $HOME");
    let t = Tree::new();
    let o = t
        .command(
            &["--ro", cargo_home.to_str().unwrap(), "--ro", rustup_home.to_str().unwrap()],
            &[cargo_home.join("bin/cargo").to_str().unwrap(), "--version"],
        )
        .output()
        .unwrap();
    assert!(stdout(&o).starts_with("cargo "), "{} {}", stdout(&o), stderr(&o));
}
