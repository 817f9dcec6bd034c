//! `--isolate`: a root holding only the surface. What it does not grant does
//! not exist; the workspace is the real one.

use crate::common::*;

#[test]
fn only_the_surface_exists_and_the_workspace_is_real() {
    let Some(t) = kernel_tree() else { return };
    std::fs::write(t.ws.join(".env"), "top-secret-marker\n").unwrap();
    let env = t.ws.join(".env");
    let o = t
        .command(
            &["--isolate", "--deny", env.to_str().unwrap()],
            &[
                "/bin/sh",
                "-c",
                "ls /home; cat /etc/shadow; ls $OUT; cat $OUT/secret; \
                 echo made > made.txt && mkdir d && mv made.txt d/ && cat d/made.txt && \
                 head -c 4 /etc/passwd && echo && $RO/tool.sh && cat .env; \
                 grep -c '^Name:' /proc/self/status; touch $TMPDIR/t && echo tmp-ok",
            ],
        )
        .output()
        .unwrap();
    let (out, err) = (stdout(&o), stderr(&o));
    assert_eq!(out, "made\nroot\ntool-ran\n1\ntmp-ok\n", "{err}");
    for missing in ["'/home'", "/etc/shadow", "outside"] {
        assert!(
            err.lines().any(|l| l.contains(missing) && l.contains("No such file or directory")),
            "{missing} exists inside:\n{err}"
        );
    }
    assert!(err.contains(".env: Permission denied"), "{err}");
    // Made inside, there on the host.
    assert_eq!(std::fs::read_to_string(t.ws.join("d/made.txt")).unwrap(), "made\n");
    assert_eq!(std::fs::read_to_string(&env).unwrap(), "top-secret-marker\n");
}

/// A carve-out in the workspace leaves the rest of it the command's under
/// --isolate as without it: a program the command makes there runs (cargo
/// runs the build scripts it links into `target/`, a test suite the binary
/// it built), in fast mode too, and the carve-out stays refused.
#[test]
fn a_program_made_beside_a_carve_out_runs() {
    let Some(t) = kernel_tree() else { return };
    let env = t.ws.join(".env");
    std::fs::write(&env, "top-secret-marker\n").unwrap();
    for mode in [&["--isolate"][..], &["--isolate", "--fast"]] {
        let flags = [mode, &["--deny", env.to_str().unwrap()]].concat();
        let script = "rm -rf made a; cp /bin/true made && ./made && echo made-ran; \
                      mkdir -p a/b && cp /bin/true a/b/deep && ln a/b/deep a/linked && a/linked && echo linked-ran; \
                      cat .env; rm -f .env; mv .env e; ln .env h; ln -sf .env s; cat s h e 2> /dev/null; \
                      cp -r . ../copy 2> /dev/null; cat ../copy/.env 2> /dev/null; rm -f s";
        let o = t.command(&flags, &["/bin/sh", "-c", script]).output().unwrap();
        let (out, err) = (stdout(&o), stderr(&o));
        assert_eq!(out, "made-ran\nlinked-ran\n", "{mode:?}: {err}");
        assert!(err.contains(".env: Permission denied"), "{mode:?}: {err}");
        // cat, rm, mv and ln of the carve-out: refused.
        assert!(err.matches("denied").count() >= 4, "{mode:?}: {err}");
    }
    assert_eq!(std::fs::read_to_string(&env).unwrap(), "top-secret-marker\n");
}

/// Without root, --isolate takes a user namespace of its own (where the
/// kernel allows unprivileged ones) and works the same way.
#[test]
fn isolation_works_unprivileged() {
    if !kernel_ok() {
        return;
    }
    let is_root = std::fs::read_to_string("/proc/self/status")
        .unwrap()
        .lines()
        .any(|l| l.starts_with("Uid:") && l.split_whitespace().nth(1) == Some("0"));
    if !is_root || !std::path::Path::new("/usr/bin/setpriv").exists() {
        cannot_run("needs root to switch to nobody, and setpriv");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path().canonicalize().unwrap().join("ws");
    std::fs::create_dir(&ws).unwrap();
    for p in [dir.path(), ws.as_path()] {
        std::os::unix::fs::chown(p, Some(65534), Some(65534)).unwrap();
    }
    let o = std::process::Command::new("/usr/bin/setpriv")
        .args(["--reuid=65534", "--regid=65534", "--clear-groups", interpose(), "--isolate", "--rw"])
        .arg(&ws)
        .args(["--", "/bin/sh", "-c", "id -u; echo hi > x && cat x; ls /home; cat /etc/shadow"])
        .current_dir(&ws)
        .env_remove("LD_LIBRARY_PATH")
        .env("PWD", &ws)
        .output()
        .unwrap();
    let (out, err) = (stdout(&o), stderr(&o));
    if err.contains("building the isolated root") {
        cannot_run(&format!("unprivileged user namespaces are not allowed here: {err}"));
        return;
    }
    assert_eq!(out, "65534\nhi\n", "{err}");
    assert!(err.contains("'/home': No such file or directory"), "{err}");
    assert!(err.contains("/etc/shadow: No such file or directory"), "{err}");
    use std::os::unix::fs::MetadataExt;
    assert_eq!(std::fs::metadata(ws.join("x")).unwrap().uid(), 65534, "files keep their owner");
}
