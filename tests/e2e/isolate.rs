//! `--isolate`: a root holding only the surface. What it does not grant does
//! not exist; the workspace is the real one.

use crate::common::*;

#[test]
fn only_the_surface_exists_and_the_workspace_is_real() {
    if !kernel_ok() {
        return;
    }
    let t = Tree::new();
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
