//! What lies outside the surface is refused with EACCES and left untouched.

use crate::common::*;
use std::path::Path;

/// Runs `script`, expects it to print "Permission denied" and exit non-zero,
/// then checks the file system with `after`.
fn denied(name: &str, script: &str, after: impl Fn(&Tree)) {
    let t = Tree::new();
    let o = t.sh(script);
    let err = stderr(&o);
    assert!(
        err.contains("Permission denied"),
        "{name}: expected EACCES, got status {:?}\nstdout: {}\nstderr: {err}",
        o.status,
        stdout(&o)
    );
    assert!(!stdout(&o).contains("top-secret-marker"), "{name}: the secret leaked: {}", stdout(&o));
    after(&t);
}

fn secret_intact(t: &Tree) {
    assert_eq!(std::fs::read_to_string(t.outside.join("secret")).unwrap(), "top-secret-marker\n");
}

fn ro_intact(t: &Tree) {
    assert_eq!(std::fs::read_to_string(t.ro.join("data.txt")).unwrap(), "read-only data\n");
    assert_eq!(std::fs::read_dir(&t.ro).unwrap().count(), 2);
}

#[test]
fn reading_outside_is_refused() {
    if !kernel_ok() {
        return;
    }
    denied("read", "cat $OUT/secret", secret_intact);
    denied("list", "ls $OUT", secret_intact);
    denied("dotdot", "cat ../outside/secret", secret_intact);
    denied("chdir-root", "cd / && cat .${OUT}/secret", secret_intact);
    denied("shadow", "cat /etc/shadow", |_| {});
    denied("home", "ls /root", |_| {});
    denied("host-tmp", "ls /tmp", |_| {});
}

#[test]
fn writing_outside_or_in_ro_is_refused() {
    if !kernel_ok() {
        return;
    }
    denied("create", "echo x > $OUT/new", |t| assert!(!t.outside.join("new").exists()));
    denied("overwrite", "echo x > $OUT/secret", secret_intact);
    denied("append", "echo x >> $OUT/secret", secret_intact);
    denied("truncate", "truncate -s 0 $OUT/secret", secret_intact);
    denied("delete", "rm -f $OUT/secret", secret_intact);
    denied("mkdir", "mkdir $OUT/d", |t| assert!(!t.outside.join("d").exists()));
    denied("symlink-outside", "ln -s /etc/passwd $OUT/l", |t| assert!(t.outside.join("l").symlink_metadata().is_err()));
    denied("ro-write", "echo x > $RO/data.txt", ro_intact);
    denied("ro-create", "touch $RO/new", ro_intact);
    denied("ro-delete", "rm -f $RO/data.txt", ro_intact);
    denied("ro-rename-out", "mv $RO/data.txt $WS/", ro_intact);
    denied("ro-rmdir", "rmdir $RO", ro_intact);
    denied("etc", "echo x >> /etc/passwd", |_| {});
}

#[test]
fn moving_or_linking_outside_files_into_the_workspace_is_refused() {
    if !kernel_ok() {
        return;
    }
    denied("rename-in", "mv $OUT/secret $WS/stolen", |t| {
        secret_intact(t);
        assert!(!t.ws.join("stolen").exists());
    });
    denied("hardlink-in", "ln $OUT/secret $WS/stolen", |t| {
        secret_intact(t);
        assert!(!t.ws.join("stolen").exists());
    });
    denied("hardlink-ro", "ln $RO/data.txt $WS/rw-alias", |t| assert!(!t.ws.join("rw-alias").exists()));
}

#[test]
fn symlinks_do_not_lead_out() {
    if !kernel_ok() {
        return;
    }
    denied("symlink-read", "ln -s $OUT/secret link && cat link", |t| {
        assert!(t.ws.join("link").symlink_metadata().is_ok(), "creating the link itself is allowed");
    });
    denied("symlink-dir", "ln -s $OUT d && cat d/secret", |_| {});
    denied("symlink-write", "ln -s $OUT/secret link && echo pwned > link", secret_intact);
    denied("symlink-create-through", "ln -s $OUT/new link && echo pwned > link", |t| {
        assert!(!t.outside.join("new").exists())
    });
    denied("symlink-chain", "ln -s $OUT a && ln -s a b && ln -s b c && cat c/secret", |_| {});
}

#[test]
fn proc_does_not_lead_out() {
    if !kernel_ok() {
        return;
    }
    denied("proc-self-root", "cat /proc/self/root$OUT/secret", secret_intact);
    denied("proc-thread-self-root", "cat /proc/thread-self/root/etc/shadow", |_| {});
    // $PPID of the shell is the PID namespace's init, a copy of interpose:
    // its environment and descriptors are root's (it is not dumpable).
    denied("proc-init-environ", "cat /proc/$PPID/environ", |_| {});
    denied("proc-init-fd", "ls -l /proc/$PPID/fd/", |_| {});
    denied("proc-init-mem", "head -c1 /proc/1/mem", |_| {});
    denied("proc-kmsg", "head -c 1 /proc/kmsg", |_| {});
    denied("proc-self-cwd-escape", "cd $OUT 2>/dev/null; cat /proc/self/cwd/../outside/secret", |_| {});
    // No process outside the sandbox is there to name: interpose, this
    // test, the host's init are not in the command's /proc.
    let t = Tree::new();
    let me = std::process::id();
    let o = t.sh(&format!("ls /proc | grep -cx '[0-9]*'; cat /proc/{me}/status; cat /proc/1/status | head -1"));
    let out = stdout(&o);
    let listed: u32 = out.lines().next().unwrap().parse().unwrap();
    assert!(listed <= 5, "only the sandbox's processes: {out}");
    assert!(!out.contains(&format!("Pid:\t{me}")), "{out}");
    assert!(out.ends_with("Name:\tinterpose\n"), "pid 1 is the namespace's init: {out}");
}

/// A path through procfs that climbs back out of a directory outside the
/// surface with `..` is described where it ends, as the kernel would: the
/// walk that takes procfs paths once answered with the last directory it
/// entered (the denied one: its mode, inode and times).
#[test]
fn a_path_climbing_out_of_a_denied_directory_describes_where_it_ends() {
    use std::os::unix::fs::{MetadataExt, PermissionsExt};
    let Some(t) = kernel_tree() else { return };
    let denied = t.outside.join("secretdir");
    std::fs::create_dir(&denied).unwrap();
    std::fs::set_permissions(&denied, std::fs::Permissions::from_mode(0o700)).unwrap();
    let top = t.outside.parent().unwrap();
    let inodes = |p: &std::path::Path| std::fs::metadata(p).unwrap().ino();
    let (top_ino, denied_ino, out_ino) = (inodes(top), inodes(&denied), inodes(&t.outside));
    let out = t.outside.display();
    let script = format!(
        "import os\n\
         for p in ['/proc/..{out}/secretdir/../..', '/proc/self/root{out}/secretdir/../..', \
                   '/proc/thread-self/root{out}/secretdir/../..', '{out}/secretdir']:\n\
         \x20   try: print(os.stat(p).st_ino)\n\
         \x20   except PermissionError: print('EACCES')\n"
    );
    let o = t.command(&[], &["/usr/bin/python3", "-c", &script]).output().unwrap();
    let got = stdout(&o);
    assert!(!got.contains(&denied_ino.to_string()) && !got.contains(&out_ino.to_string()), "{got}");
    assert_eq!(got, format!("{top_ino}\n{top_ino}\n{top_ino}\nEACCES\n"), "{}", stderr(&o));
}

#[test]
fn dirfd_relative_escapes_are_refused() {
    if !kernel_ok() {
        return;
    }
    let script = r#"
import os, sys
ws = os.environ["WS"]
fd = os.open(ws, os.O_PATH | os.O_DIRECTORY)
for path in ["../outside/secret", os.environ["OUT"] + "/secret", "../../../../../.." + os.environ["OUT"] + "/secret"]:
    try:
        os.open(path, os.O_RDONLY, dir_fd=fd)
        print("OPENED", path)
    except PermissionError:
        print("EACCES")
try:
    os.open("../outside/planted", os.O_WRONLY | os.O_CREAT, 0o644, dir_fd=fd)
    print("CREATED")
except PermissionError:
    print("EACCES")
# An O_PATH handle on an outside directory cannot be obtained either.
try:
    os.open(os.environ["OUT"], os.O_PATH)
    print("OPENED O_PATH")
except PermissionError:
    print("EACCES")
"#;
    let t = Tree::new();
    let o = t.command(&[], &["/usr/bin/python3", "-c", script]).output().unwrap();
    assert_eq!(stdout(&o), "EACCES\nEACCES\nEACCES\nEACCES\nEACCES\n", "{}", stderr(&o));
    assert!(!t.outside.join("planted").exists());
}

#[test]
fn executing_outside_the_surface_is_refused() {
    let Some(t) = kernel_tree() else { return };
    write_exec(&t.outside.join("tool"), "#!/bin/sh\necho escaped\n");
    std::fs::copy("/bin/true", t.outside.join("true")).unwrap();
    for prog in ["tool", "true"] {
        let path = t.outside.join(prog);
        let o = t.command(&[], &["/bin/sh", "-c", &format!("{}; echo status=$?", path.display())]).output().unwrap();
        assert_eq!(stdout(&o), "status=126\n", "{prog}: {}", stderr(&o));
        assert!(stderr(&o).contains("Permission denied"), "{}", stderr(&o));
    }
    // And as the command itself.
    let o = t.command(&[], &[t.outside.join("true").to_str().unwrap()]).output().unwrap();
    assert_eq!(o.status.code(), Some(126), "{}", stderr(&o));
    assert!(Path::new(&t.outside.join("true")).exists());
}
