//! The rest of the path syscalls: metadata, attribute changes, unix
//! sockets, and the calls refused outright.

use crate::common::*;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::process::Command;

#[test]
fn calls_that_could_escape_are_refused() {
    let Some(t) = kernel_tree() else { return };
    let bin = t.ws.join("refused");
    std::fs::copy(attack("refused"), &bin).unwrap();
    // Natively (in a private mount namespace, so the mount stays there)
    // every call goes through.
    let native = Command::new("unshare").args(["-m", "--propagation", "private"]).arg(&bin).arg(&t.outside).output();
    match native {
        Ok(native) if native.status.success() => {
            let out = stdout(&native);
            for call in
                ["seccomp_listener=ok", "io_uring_setup=ok", "mount=ok", "unshare_mount_ns=ok", "ptrace_attach=ok"]
            {
                assert!(out.contains(call), "natively {call}: {out}");
            }
        }
        other => eprintln!("note: no native run of the refused calls (needs root and unshare): {other:?}"),
    }
    let o = t.command(&[], &[bin.to_str().unwrap(), t.ws.to_str().unwrap()]).output().unwrap();
    assert_eq!(
        stdout(&o),
        "seccomp_listener=EPERM\nio_uring_setup=EPERM\nopen_by_handle_at=EPERM\nmount=EPERM\nunshare_mount_ns=EPERM\n\
         unshare_user_ns=EPERM\nprocess_vm_writev=EPERM\nptrace_attach=EPERM\nclone3=ENOSYS\nchroot=EPERM\n",
        "{}",
        stderr(&o)
    );
}

#[test]
fn attributes_outside_the_write_surface_cannot_change() {
    let Some(t) = kernel_tree() else { return };
    let secret = t.outside.join("secret");
    let data = t.ro.join("data.txt");
    let before = |p: &std::path::Path| {
        let m = p.metadata().unwrap();
        (m.mode(), m.uid(), m.gid(), m.mtime(), m.atime())
    };
    let (secret_before, data_before) = (before(&secret), before(&data));
    let script = r#"
out, ro = os.environ["OUT"] + "/secret", os.environ["RO"] + "/data.txt"
for path in (out, ro):
    attempt("chmod", lambda: os.chmod(path, 0o777))
    attempt("chown", lambda: os.chown(path, 1, 1))
    attempt("utime", lambda: os.utime(path, (0, 0)))
    attempt("setxattr", lambda: os.setxattr(path, "user.pwned", b"1"))
fd = os.open(ro, os.O_RDONLY)
attempt("fchmod", lambda: os.fchmod(fd, 0o777))
attempt("fchown", lambda: os.fchown(fd, 1, 1))
attempt("futimens", lambda: os.utime(fd, (0, 0)))
attempt("fsetxattr", lambda: os.setxattr(fd, "user.pwned", b"1"))
"#;
    let o = python_attempts(&t, &[], script);
    let out = stdout(&o);
    assert_eq!(out.matches("EACCES").count(), 12, "{out}{}", stderr(&o));
    assert_eq!(before(&secret), secret_before);
    assert_eq!(before(&data), data_before);
    for p in [&secret, &data] {
        assert!(xattr_names(p).is_empty(), "{}", p.display());
    }
}

fn xattr_names(p: &std::path::Path) -> String {
    let o = Command::new("/usr/bin/python3")
        .args(["-c", "import os,sys; print(os.listxattr(sys.argv[1]))"])
        .arg(p)
        .output()
        .unwrap();
    String::from_utf8_lossy(&o.stdout).trim().trim_matches(|c| c == '[' || c == ']').to_string()
}

#[test]
fn attributes_inside_the_workspace_change() {
    let Some(t) = kernel_tree() else { return };
    let f = t.ws.join("f");
    std::fs::write(&f, "x").unwrap();
    let script = r#"
import os
f = os.environ["WS"] + "/f"
os.chmod(f, 0o751)
os.chown(f, 4242, 4343)
os.utime(f, (1000000000, 1000000000))
os.setxattr(f, "user.tag", b"v")
os.setxattr(f, "user.gone", b"v")
os.removexattr(f, "user.gone")
os.mkfifo(os.environ["WS"] + "/fifo")
os.symlink("f", os.environ["WS"] + "/link")
os.lchown(os.environ["WS"] + "/link", 4242, 4343)
print("ok")
"#;
    let o = python_attempts(&t, &[], script);
    assert_eq!(stdout(&o), "ok\n", "{}", stderr(&o));
    let m = f.metadata().unwrap();
    assert_eq!(m.permissions().mode() & 0o7777, 0o751);
    assert_eq!((m.uid(), m.gid(), m.mtime()), (4242, 4343, 1_000_000_000));
    assert_eq!(xattr_names(&f), "'user.tag'");
    assert!(t.ws.join("fifo").symlink_metadata().unwrap().file_type().is_fifo());
    assert_eq!(t.ws.join("link").symlink_metadata().unwrap().uid(), 4242, "lchown acts on the link");
}

use std::os::unix::fs::FileTypeExt;

#[test]
fn metadata_outside_the_surface_is_refused_but_the_way_there_is_not() {
    let Some(t) = kernel_tree() else { return };
    let script = r#"
out, ws = os.environ["OUT"], os.environ["WS"]
attempt("stat-outside", lambda: os.stat(out + "/secret"))
attempt("lstat-outside", lambda: os.lstat(out))
attempt("access-outside", lambda: os.access(out + "/secret", os.R_OK) or os.stat(out + "/secret"))
attempt("chdir-outside", lambda: os.chdir(out))
attempt("stat-shadow", lambda: os.stat("/etc/shadow"))
attempt("stat-ancestor", lambda: os.stat(os.path.dirname(ws)))
attempt("stat-root", lambda: os.stat("/"))
attempt("realpath-ws", lambda: os.path.realpath(ws, strict=True))
attempt("stat-ro", lambda: os.stat(os.environ["RO"] + "/data.txt"))
attempt("fstat-held", lambda: os.fstat(0))
"#;
    let o = python_attempts(&t, &[], script);
    assert_eq!(
        stdout(&o),
        "stat-outside EACCES\nlstat-outside EACCES\naccess-outside EACCES\nchdir-outside EACCES\nstat-shadow EACCES\n\
         stat-ancestor ok\nstat-root ok\nrealpath-ws ok\nstat-ro ok\nfstat-held ok\n",
        "{}",
        stderr(&o)
    );
}

#[test]
fn unix_sockets_are_files_too() {
    if !kernel_ok() {
        return;
    }
    use std::io::Read;
    let t = Tree::new();
    let outside = std::os::unix::net::UnixListener::bind(t.outside.join("sock")).unwrap();
    let inside = std::os::unix::net::UnixListener::bind(t.ws.join("sock")).unwrap();
    let dgram = std::os::unix::net::UnixDatagram::bind(t.outside.join("dgram")).unwrap();
    outside.set_nonblocking(true).unwrap();
    dgram.set_nonblocking(true).unwrap();
    let script = r#"
def connect(path):
    s = socket.socket(socket.AF_UNIX)
    s.connect(path)
    s.sendall(b"hello")
    s.close()
attempt("connect-outside", lambda: connect(os.environ["OUT"] + "/sock"))
attempt("connect-inside", lambda: connect("sock"))
d = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
attempt("sendto-outside", lambda: d.sendto(b"x", os.environ["OUT"] + "/dgram"))
b = socket.socket(socket.AF_UNIX)
attempt("bind-outside", lambda: b.bind(os.environ["OUT"] + "/planted"))
attempt("bind-inside", lambda: socket.socket(socket.AF_UNIX).bind("mine"))
"#;
    let o = python_attempts(&t, &[], script);
    assert_eq!(
        stdout(&o),
        "connect-outside EACCES\nconnect-inside ok\nsendto-outside EACCES\nbind-outside EACCES\nbind-inside ok\n",
        "{}",
        stderr(&o)
    );
    let (mut conn, _) = inside.accept().unwrap();
    let mut got = String::new();
    conn.read_to_string(&mut got).unwrap();
    assert_eq!(got, "hello", "the supervisor connected the command's own socket");
    assert!(outside.accept().is_err(), "nothing reached the outside listener");
    assert!(dgram.recv(&mut [0u8; 8]).is_err(), "no datagram reached the outside socket");
    assert!(!t.outside.join("planted").exists());
}

/// `--user`: the supervisor performs the command's opens, creates and
/// attribute changes with the command's credentials, so it cannot be used as
/// a confused deputy to reach what the user itself may not.
#[test]
fn another_user_gets_no_more_than_its_own_credentials() {
    if !kernel_ok() {
        return;
    }
    if !nix::unistd::geteuid().is_root() {
        cannot_run("--user needs root");
        return;
    }
    use std::os::unix::fs::PermissionsExt;
    let t = Tree::new();
    for dir in [t.ws.parent().unwrap(), &t.ro] {
        std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    std::fs::set_permissions(&t.ws, std::fs::Permissions::from_mode(0o777)).unwrap();
    std::fs::write(t.ws.join("root-only"), "root's\n").unwrap();
    std::fs::set_permissions(t.ws.join("root-only"), std::fs::Permissions::from_mode(0o600)).unwrap();
    let o = t
        .command(
            &["--user", "65534:65534"],
            &["/bin/sh", "-c", "id -u; cat root-only; echo mine > mine; chmod 666 root-only; cat $RO/data.txt; touch $TMPDIR/t && echo tmp"],
        )
        .output()
        .unwrap();
    let (out, err) = (stdout(&o), stderr(&o));
    assert_eq!(out, "65534\nread-only data\ntmp\n", "{err}");
    assert!(err.contains("root-only: Permission denied"), "{err}");
    assert!(err.contains("Operation not permitted"), "chmod of root's file: {err}");
    let mine = t.ws.join("mine").metadata().unwrap();
    assert_eq!((mine.uid(), mine.gid()), (65534, 65534), "created as the command's user");
    assert_eq!(t.ws.join("root-only").metadata().unwrap().permissions().mode() & 0o777, 0o600);
}
