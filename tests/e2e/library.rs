//! The library API: commands under the same surface, with a timeout and
//! output caps.

use crate::common::*;
use interpose::library::Sandbox;
use std::time::Duration;

#[test]
fn commands_run_confined_with_caps_and_a_timeout() {
    let Some(t) = kernel_tree() else { return };
    let sandbox = Sandbox::with_workspace(&t.ws).unwrap().interpose_binary(interpose());
    let secret = t.outside.join("secret");
    let script = format!("echo made > made.txt; cat {}; seq 1 10000", secret.display());
    let out = sandbox.command(&["/bin/sh", "-c", &script], Duration::from_secs(30), 100).unwrap();
    assert!(!out.timed_out);
    assert_eq!(std::fs::read_to_string(t.ws.join("made.txt")).unwrap(), "made\n");
    assert!(String::from_utf8_lossy(&out.stderr).contains("Permission denied"), "{out:?}");
    // The tail is kept: the last lines of seq, and a count of what was cut.
    assert!(out.stdout.ends_with(b"9999\n10000\n"), "{out:?}");
    assert_eq!(out.stdout.len(), 100);
    assert_eq!(out.stdout_dropped, 48_894 - 100);
    assert_eq!(sandbox.read_file("made.txt").unwrap(), b"made\n");

    let slow = sandbox.command(&["/bin/sleep", "30"], Duration::from_millis(300), 100).unwrap();
    assert!(slow.timed_out);
    assert_eq!(slow.status, 124);
}

#[test]
fn a_command_that_ignores_sigterm_is_killed_after_the_grace_period() {
    let Some(t) = kernel_tree() else { return };
    let sandbox = Sandbox::with_workspace(&t.ws).unwrap().interpose_binary(interpose());
    let started = std::time::Instant::now();
    let stubborn = sandbox
        .command(&["/bin/sh", "-c", "trap '' TERM; while :; do sleep 0.05; done"], Duration::from_millis(300), 100)
        .unwrap();
    assert!(stubborn.timed_out);
    assert_eq!(stubborn.status, 124);
    // The timeout plus the two-second grace, with room for a slow machine;
    // before the grace period existed this call never returned.
    assert!(started.elapsed() < Duration::from_secs(20), "took {:?}", started.elapsed());
}
