//! Fidelity: where the supervisor performs a call for the command, it
//! answers as the kernel would for the command (issue 27). The probe
//! `tests/attacks/fidelity.c` prints one line per call (result and errno
//! name); run natively and under interpose in each mode, the lines must be
//! the same. Every line stands for a divergence found on an earlier `main`:
//! a truncate past the caller's `RLIMIT_FSIZE`, unknown flag bits acted on,
//! calls that take an open file accepting an `O_PATH` one, `readlinkat` of
//! an `O_PATH` symlink, `utimensat`'s NULL name, the umask applied under a
//! default ACL, `access("/", X_OK)`.

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
            None => Command::new(&bin).arg(dir).output().unwrap(),
            Some(extra) => {
                let ro = ["--ro", bin.to_str().unwrap()];
                let args: Vec<&str> = extra.iter().chain(&ro).copied().collect();
                t.command(&args, &[bin.to_str().unwrap(), dir.to_str().unwrap()]).output().unwrap()
            }
        };
        assert_eq!(o.status.code(), Some(0), "{extra:?}: {}", stderr(&o));
        stdout(&o)
    };
    let native = run(&t.ws.join("native"), None);
    assert!(native.lines().count() >= 28, "{native}");
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
