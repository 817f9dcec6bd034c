//! Fidelity: where the supervisor performs a call for the command, it
//! answers as the kernel would for the command (issue 27). The probe
//! `tests/attacks/fidelity.c` prints one line per call (result and errno
//! name); run natively and under interpose in each mode, the lines must be
//! the same. Every line stands for a divergence found on an earlier `main`:
//! a truncate past the caller's `RLIMIT_FSIZE`, unknown flag bits acted on,
//! calls that take an open file accepting an `O_PATH` one, `readlinkat` of
//! an `O_PATH` symlink, `utimensat`'s NULL name, the umask applied under a
//! default ACL, `access("/", X_OK)`, EEXIST and EISDIR said after a
//! permission check the kernel makes later.

use crate::common::*;
use std::process::Command;

#[test]
fn every_probe_answers_as_the_kernel_does_in_every_mode() {
    if !kernel_ok() {
        return;
    }
    let bin = attack("fidelity");
    let t = Tree::new();
    let run = |dir: &std::path::Path, extra: Option<&[&str]>| -> String {
        std::fs::create_dir(dir).unwrap();
        let o = match extra {
            None => Command::new(&bin).arg(dir).arg(&t.ro).output().unwrap(),
            Some(extra) => {
                let ro = ["--ro", bin.to_str().unwrap()];
                let args: Vec<&str> = extra.iter().chain(&ro).copied().collect();
                let cmd = [bin.to_str().unwrap(), dir.to_str().unwrap(), t.ro.to_str().unwrap()];
                t.command(&args, &cmd).output().unwrap()
            }
        };
        assert_eq!(o.status.code(), Some(0), "{extra:?}: {}", stderr(&o));
        stdout(&o)
    };
    let native = run(&t.ws.join("native"), None);
    assert!(native.lines().count() >= 37, "{native}");
    for (i, extra) in [&[][..], &["--fast"][..], &["--no-landlock"][..], &["--no-namespace"][..]].iter().enumerate() {
        let under = run(&t.ws.join(format!("mode{i}")), Some(extra));
        let differ: Vec<String> = native
            .lines()
            .zip(under.lines())
            .filter(|(n, u)| n != u)
            .map(|(n, u)| format!("native: {n}\n  here: {u}"))
            .collect();
        assert!(
            differ.is_empty() && native.lines().count() == under.lines().count(),
            "{extra:?}:\n{}",
            differ.join("\n")
        );
    }
}

/// `os.access` says what the operation it predicts would get: `R_OK` on a
/// directory exactly when listing it works, `X_OK` exactly when entering
/// it does (the directories above the surface included: every lookup goes
/// through them), under the default surface and the shipped example policy.
#[test]
fn access_agrees_with_listing_and_entering() {
    let Some(t) = kernel_tree() else { return };
    let script = r#"
import os, sys
for p in ["/", "/usr", "/etc", "/tmp", os.getcwd(), os.environ["HOME"], "/var", "/nonexistent-dir"]:
    r, x = os.access(p, os.R_OK), os.access(p, os.X_OK)
    try:
        os.listdir(p); lists = True
    except OSError:
        lists = False
    cwd = os.getcwd()
    try:
        os.chdir(p); enters = True
    except OSError:
        enters = False
    os.chdir(cwd)
    print(p, r, lists, x, enters, "ok" if (r, x) == (lists, enters) else "DISAGREE")
"#;
    let policy = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/coding-agent.toml");
    for extra in [vec![], vec!["--policy", policy.to_str().unwrap()]] {
        let o = t.command(&extra, &["/usr/bin/python3", "-c", script]).output().unwrap();
        let out = stdout(&o);
        assert!(o.status.success() && out.lines().count() == 8, "{extra:?}: {out}{}", stderr(&o));
        assert!(!out.contains("DISAGREE"), "{extra:?}:\n{out}");
        // autoconf's `test -x /`, and the workspace fully usable.
        assert!(out.starts_with("/ False False True True ok"), "{extra:?}:\n{out}");
        assert!(out.contains(&format!("{} True True True True ok", t.ws.display())), "{extra:?}:\n{out}");
    }
}

/// An autoconf-generated `configure` and `make` under the shipped example
/// policy: `configure` looks for a shell with `test -x /` among much else,
/// and failed ("requires a shell more modern than all the shells I can
/// find") while `access("/", X_OK)` was refused.
#[test]
fn an_autoconf_configure_and_make_work_under_the_example_policy() {
    let Some(t) = kernel_tree() else { return };
    std::fs::write(
        t.ws.join("configure.ac"),
        "AC_INIT([hello], [1.0])\nAC_PROG_CC\nAC_CHECK_HEADERS([stdio.h unistd.h])\nAC_CONFIG_FILES([Makefile])\nAC_OUTPUT\n",
    )
    .unwrap();
    std::fs::write(t.ws.join("Makefile.in"), "CC = @CC@\nhello: hello.c\n\t$(CC) -o hello hello.c\n").unwrap();
    std::fs::write(
        t.ws.join("hello.c"),
        "#include <stdio.h>\nint main(void) { puts(\"configured-and-built\"); return 0; }\n",
    )
    .unwrap();
    let autoconf = Command::new("autoconf").current_dir(&t.ws).output().expect("autoconf (`cargo xtask tools`)");
    assert!(autoconf.status.success(), "{}", stderr(&autoconf));
    let policy = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/coding-agent.toml");
    let o = t
        .command(&["--policy", policy.to_str().unwrap()], &["/bin/sh", "-c", "./configure && make && ./hello"])
        .output()
        .unwrap();
    let out = stdout(&o);
    assert!(o.status.success() && out.contains("configured-and-built"), "{out}{}", stderr(&o));
    assert!(out.contains("checking for stdio.h... yes"), "{out}");
}

/// A root command that switches to another user (a test suite's `nobody`)
/// uses TMPDIR as it would use /tmp: the session's private TMPDIR is
/// sticky and writable by all, its parent traversable, as /tmp is.
#[test]
fn a_command_that_drops_to_nobody_can_still_use_tmpdir() {
    if !kernel_ok() || !nix::unistd::geteuid().is_root() {
        return;
    }
    let t = Tree::new();
    let script = "setpriv --reuid 65534 --regid 65534 --clear-groups sh -c 'd=$(mktemp -d -p \"$TMPDIR\") && echo made > \"$d/f\" && cat \"$d/f\"'";
    let o = t.command(&[], &["/bin/sh", "-c", script]).output().unwrap();
    assert_eq!(stdout(&o), "made\n", "{}", stderr(&o));
}
