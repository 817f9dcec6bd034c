//! Routes out that are not file paths (`tests/attacks/routes.c`). Each
//! attack must get through natively and be refused under interpose, in full
//! and in fast mode.

use crate::common::*;
use std::os::fd::AsRawFd;
use std::path::PathBuf;
use std::process::{Command, Output, Stdio};

/// The attack program, copied into the workspace so that it may run there.
fn routes(t: &Tree) -> PathBuf {
    let dst = t.ws.join("routes");
    if !dst.exists() {
        // A hard link, not a copy: a file still open for writing when a
        // parallel test forks would make exec fail with ETXTBSY.
        if std::fs::hard_link(attack("routes"), &dst).is_err() {
            std::fs::copy(attack("routes"), &dst).unwrap();
        }
    }
    dst
}

fn escaped(o: &Output) -> bool {
    o.status.success() && stdout(o).starts_with("escaped:")
}

fn refused(o: &Output) -> bool {
    o.status.code() == Some(1) && stdout(o).starts_with("refused:")
}

fn native(t: &Tree, args: &[&str]) -> Output {
    Command::new(routes(t)).args(args).current_dir(&t.ws).stdin(Stdio::null()).output().unwrap()
}

/// Runs the attack under interpose in full and in fast mode; both must be
/// refused.
fn refused_in_both_modes(t: &Tree, extra: &[&str], args: &[&str]) {
    let bin = routes(t);
    for mode in [&[][..], &["--fast"][..]] {
        let mut cmd = vec![bin.to_str().unwrap()];
        cmd.extend(args);
        let o = t.command(&[mode, extra].concat(), &cmd).output().unwrap();
        assert!(refused(&o), "{args:?} {mode:?} {extra:?}: {}{}", stdout(&o), stderr(&o));
    }
}

fn root() -> bool {
    let root = nix::unistd::geteuid().is_root();
    if !root {
        assert!(std::env::var_os("INTERPOSE_REQUIRE_KERNEL").is_none(), "CI runs these as root");
        cannot_run("the attack needs root natively");
    }
    root
}

/// `newfstatat`/`statx` with `AT_EMPTY_PATH` and a non-empty path: the
/// kernel ignores the flag and looks the path up. The filter used to let the
/// flag through untrapped; now every stat is decided (an empty path, fstat,
/// is answered from the caller's own descriptor). Fast mode leaves metadata
/// unchecked by design and says so in the session record.
#[test]
fn a_stat_with_at_empty_path_and_a_path_is_decided() {
    let Some(t) = kernel_tree() else { return };
    let secret = t.outside.join("secret");
    for route in ["stat-empty-path", "statx-empty-path"] {
        assert!(escaped(&native(&t, &[route, secret.to_str().unwrap()])));
        let o = t.command(&[], &[routes(&t).to_str().unwrap(), route, secret.to_str().unwrap()]).output().unwrap();
        assert!(refused(&o) && stdout(&o).contains("Permission denied"), "{route}: {}", stdout(&o));
    }
    let trail = t.outside.join("fast.jsonl");
    let o = t.command(&["--fast", "--audit", trail.to_str().unwrap()], &["/bin/true"]).output().unwrap();
    assert!(o.status.success());
    let start: serde_json::Value =
        serde_json::from_str(std::fs::read_to_string(&trail).unwrap().lines().next().unwrap()).unwrap();
    assert!(start["mode"]["untrapped"].to_string().contains("newfstatat"), "the residual is stated: {start}");
    // fstat of what the command holds still works, whatever it is.
    let o = t.command(&[], &["/bin/sh", "-c", "stat -L -c %F /dev/stdin < $RO/data.txt"]).output().unwrap();
    assert_eq!(stdout(&o), "regular file\n", "{}", stderr(&o));
}

#[test]
fn sendmmsg_to_a_socket_outside_is_refused() {
    let Some(t) = kernel_tree() else { return };
    let path = t.outside.join("dgram.sock");
    let server = std::os::unix::net::UnixDatagram::bind(&path).unwrap();
    server.set_nonblocking(true).unwrap();
    let mut buf = [0u8; 64];
    assert!(escaped(&native(&t, &["sendmmsg", path.to_str().unwrap(), "native"])));
    assert_eq!(server.recv(&mut buf).map(|n| buf[..n].to_vec()).unwrap(), b"native");
    refused_in_both_modes(&t, &[], &["sendmmsg", path.to_str().unwrap(), "sandboxed"]);
    assert!(server.recv(&mut buf).is_err(), "no datagram arrived");
}

/// TIOCSTI pushes input into the terminal: after interpose exits the
/// user's shell would read it as typed (CVE-2017-5226 in bubblewrap).
#[test]
fn terminal_injection_ioctls_are_refused() {
    let Some(t) = kernel_tree() else { return };
    let pty = nix::pty::openpty(None, None).unwrap();
    // Raw mode: a pushed character is readable at once, without a newline.
    let mut raw = nix::sys::termios::tcgetattr(&pty.slave).unwrap();
    nix::sys::termios::cfmakeraw(&mut raw);
    nix::sys::termios::tcsetattr(&pty.slave, nix::sys::termios::SetArg::TCSANOW, &raw).unwrap();
    let input = |o: &Output| {
        nix::fcntl::fcntl(&pty.slave, nix::fcntl::FcntlArg::F_SETFL(nix::fcntl::OFlag::O_NONBLOCK)).unwrap();
        let mut buf = [0u8; 16];
        let n = nix::unistd::read(&pty.slave, &mut buf).unwrap_or(0);
        let _ = o;
        buf[..n].to_vec()
    };
    let run = |args: &[&str]| {
        let stdin = Stdio::from(pty.slave.try_clone().unwrap());
        let mut cmd = Command::new(routes(&t));
        cmd.args(args).current_dir(&t.ws).stdin(stdin).output().unwrap()
    };
    let o = run(&["tiocsti"]);
    assert!(escaped(&o), "{}", stdout(&o));
    assert_eq!(input(&o), b"x", "the character is waiting to be read as typed");
    assert!(escaped(&run(&["tioclinux"])));
    let bin = routes(&t);
    for route in ["tiocsti", "tioclinux"] {
        for mode in [&[][..], &["--fast"][..]] {
            let stdin = Stdio::from(pty.slave.try_clone().unwrap());
            let o = t.command(mode, &[bin.to_str().unwrap(), route]).stdin(stdin).output().unwrap();
            assert!(refused(&o) && stdout(&o).contains("not permitted"), "{route} {mode:?}: {}", stdout(&o));
            assert_eq!(input(&o), b"", "nothing was pushed");
        }
    }
    let _ = pty.master.as_raw_fd();
}

#[test]
fn the_inherited_keyring_is_out_of_reach() {
    let Some(t) = kernel_tree() else { return };
    const KEY_SPEC_SESSION_KEYRING: i32 = -3;
    // SAFETY: add_key reads the NUL-terminated type and description and
    // `len` bytes of payload.
    let id = unsafe {
        libc::syscall(
            libc::SYS_add_key,
            c"user".as_ptr(),
            c"interpose-route-test".as_ptr(),
            b"key-secret".as_ptr(),
            10usize,
            KEY_SPEC_SESSION_KEYRING,
        )
    };
    assert!(id > 0, "add_key: {}", std::io::Error::last_os_error());
    let native = native(&t, &["keyctl-read", &id.to_string()]);
    let refusals = std::panic::catch_unwind(|| refused_in_both_modes(&t, &[], &["keyctl-read", &id.to_string()]));
    // SAFETY: KEYCTL_INVALIDATE (21) takes the key id only.
    unsafe { libc::syscall(libc::SYS_keyctl, 21, id) };
    assert!(escaped(&native) && stdout(&native).contains("key-secret"), "{}", stdout(&native));
    refusals.unwrap();
}

#[test]
fn other_processes_system_v_and_posix_ipc_are_out_of_reach() {
    if !kernel_ok() || !root() {
        return;
    }
    let t = Tree::new();
    let key = 0x1e7e_0000 + (std::process::id() as i32 & 0xffff);
    // SAFETY: shmget/shmat/shmdt on a fresh segment of one page; the copy
    // stays inside it.
    let id = unsafe { libc::shmget(key, 4096, libc::IPC_CREAT | 0o666) };
    assert!(id >= 0, "shmget: {}", std::io::Error::last_os_error());
    // SAFETY: as above.
    unsafe {
        let p = libc::shmat(id, std::ptr::null(), 0) as *mut u8;
        std::ptr::copy_nonoverlapping(c"shm-secret".as_ptr().cast::<u8>(), p, 11);
        libc::shmdt(p as *const libc::c_void);
    }
    let queue = format!("/interpose-route-{}", std::process::id());
    let cqueue = std::ffi::CString::new(queue.clone()).unwrap();
    // SAFETY: mq_open with O_CREAT reads the mode and a NULL attribute
    // pointer; mq_send reads `len` bytes.
    let q = unsafe {
        libc::mq_open(cqueue.as_ptr(), libc::O_CREAT | libc::O_RDWR, 0o666, std::ptr::null::<libc::mq_attr>())
    };
    assert!(q >= 0, "mq_open: {}", std::io::Error::last_os_error());
    // SAFETY: as above.
    unsafe { libc::mq_send(q, b"mq-secret".as_ptr().cast(), 9, 0) };
    let shm = native(&t, &["shm-read", &key.to_string()]);
    let mq = native(&t, &["mq-read", &queue]);
    let checks = std::panic::catch_unwind(|| {
        for extra in [&[][..], &["--no-namespace"][..]] {
            refused_in_both_modes(&t, extra, &["shm-read", &key.to_string()]);
            refused_in_both_modes(&t, extra, &["mq-read", &queue]);
        }
    });
    // SAFETY: removing the segment and the queue made above.
    unsafe {
        libc::shmctl(id, libc::IPC_RMID, std::ptr::null_mut());
        libc::mq_unlink(cqueue.as_ptr());
    }
    assert!(escaped(&shm) && stdout(&shm).contains("shm-secret"), "{}", stdout(&shm));
    assert!(escaped(&mq) && stdout(&mq).contains("mq-secret"), "{}", stdout(&mq));
    checks.unwrap();
}

#[test]
fn a_root_command_has_no_raw_packet_socket() {
    if !kernel_ok() || !root() {
        return;
    }
    let t = Tree::new();
    assert!(escaped(&native(&t, &["packet"])));
    refused_in_both_modes(&t, &[], &["packet"]);
}

#[test]
fn a_rename_leaves_no_whiteout_device_behind() {
    if !kernel_ok() || !root() {
        return;
    }
    let t = Tree::new();
    std::fs::write(t.ws.join("a"), "a").unwrap();
    assert!(escaped(&native(&t, &["whiteout", "a", "b"])));
    std::fs::remove_file(t.ws.join("a")).unwrap();
    std::fs::rename(t.ws.join("b"), t.ws.join("a")).unwrap();
    refused_in_both_modes(&t, &[], &["whiteout", "a", "b"]);
    assert!(t.ws.join("a").metadata().unwrap().is_file());
}

/// Attribute changes are made by the supervisor: with interpose's own
/// capabilities a file in the workspace could carry file capabilities that
/// the user later runs outside.
#[test]
fn file_capabilities_and_trusted_attributes_cannot_be_set() {
    if !kernel_ok() || !root() {
        return;
    }
    let t = Tree::new();
    std::fs::write(t.ws.join("tool"), "x").unwrap();
    assert!(escaped(&native(&t, &["setcap", "tool"])));
    assert!(escaped(&native(&t, &["trusted-xattr", "tool"])));
    std::fs::remove_file(t.ws.join("tool")).unwrap();
    std::fs::write(t.ws.join("tool"), "x").unwrap();
    refused_in_both_modes(&t, &[], &["setcap", "tool"]);
    refused_in_both_modes(&t, &[], &["trusted-xattr", "tool"]);
    assert!(xattr_names(&t.ws.join("tool")).is_empty(), "{:?}", xattr_names(&t.ws.join("tool")));
}

fn xattr_names(path: &std::path::Path) -> Vec<String> {
    let c = std::ffi::CString::new(path.as_os_str().as_encoded_bytes()).unwrap();
    let mut buf = [0u8; 1024];
    // SAFETY: listxattr writes at most buf.len() bytes.
    let n = unsafe { libc::listxattr(c.as_ptr(), buf.as_mut_ptr().cast(), buf.len()) };
    if n <= 0 {
        return Vec::new();
    }
    buf[..n as usize].split(|&b| b == 0).filter(|s| !s.is_empty()).map(|s| String::from_utf8_lossy(s).into()).collect()
}

/// Files of `/proc` whose content depends on the opener's credentials are
/// opened by the supervisor with the caller's, so a root command without
/// CAP_SYS_ADMIN sees no physical addresses and no kernel stack.
#[test]
fn proc_files_show_only_what_the_commands_own_credentials_allow() {
    if !kernel_ok() || !root() {
        return;
    }
    let t = Tree::new();
    for route in ["pagemap", "proc-stack"] {
        assert!(escaped(&native(&t, &[route])), "{route}");
        refused_in_both_modes(&t, &[], &[route]);
    }
}

/// An emulated unix connect must present the command's own user to the
/// server, under --user and after the command dropped privileges itself.
#[test]
fn a_unix_socket_server_sees_the_commands_own_user() {
    if !kernel_ok() || !root() {
        return;
    }
    let t = Tree::new();
    use std::os::unix::fs::PermissionsExt;
    for dir in [t.ws.parent().unwrap(), &t.ws] {
        std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o777)).unwrap();
    }
    let path = t.ws.join("server.sock");
    let listener = std::os::unix::net::UnixListener::bind(&path).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o777)).unwrap();
    let peers = std::thread::spawn(move || {
        let mut uids = Vec::new();
        for _ in 0..2 {
            let (conn, _) = listener.accept().unwrap();
            let cred = nix::sys::socket::getsockopt(&conn, nix::sys::socket::sockopt::PeerCredentials).unwrap();
            uids.push(cred.uid());
        }
        uids
    });
    let connect = format!("import socket; socket.socket(socket.AF_UNIX).connect({:?})", path.display().to_string());
    let o = t.command(&["--user", "65534:65534"], &["/usr/bin/python3", "-c", &connect]).output().unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let dropped = format!("import os; os.setgid(65534); os.setuid(65534); {connect}");
    let o = t.command(&[], &["/usr/bin/python3", "-c", &dropped]).output().unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(peers.join().unwrap(), [65534, 65534], "SO_PEERCRED names the command's user, never interpose's");
}

/// fanotify marks report the names made in a directory (and, with
/// privilege, in whole mounts) by file handle: refused in every mode, so
/// programs fall back to inotify, whose watches are decided as reads.
#[test]
fn fanotify_is_refused() {
    if !kernel_ok() || !root() {
        return;
    }
    let t = Tree::new();
    let outside = t.outside.to_str().unwrap();
    assert!(escaped(&native(&t, &["fanotify", outside])), "{}", stdout(&native(&t, &["fanotify", outside])));
    refused_in_both_modes(&t, &[], &["fanotify", outside]);
    refused_in_both_modes(&t, &[], &["fanotify", t.ws.to_str().unwrap()]);
}

/// `/dev/pts` used to be granted whole: any terminal on the machine could
/// be opened, its keystrokes read. Now the command gets the terminal
/// interpose runs in and the ones it creates through `/dev/ptmx`; another
/// session's is refused (open and stat), in full and in fast mode.
#[test]
fn only_the_commands_own_terminals_can_be_opened() {
    let Some(t) = kernel_tree() else { return };
    let victim = nix::pty::openpty(None, None).unwrap();
    let victim_name = nix::unistd::ttyname(&victim.slave).unwrap();
    let own = nix::pty::openpty(None, None).unwrap();
    let script = r#"
import os, pty, sys
victim = sys.argv[1]
for what, f in [("open", lambda: os.open(victim, os.O_RDONLY)), ("stat", lambda: os.stat(victim))]:
    try:
        f()
        print(what, "other terminal: opened")
    except PermissionError:
        print(what, "other terminal: refused")
own = os.ttyname(0)
os.close(os.open(own, os.O_RDWR))
print("own terminal: opened")
master, slave = pty.openpty()
name = os.ttyname(slave)
fd = os.open(name, os.O_RDWR)
os.write(fd, b"typed\n")
print("created terminal:", os.read(master, 64))
"#;
    let victim_arg = victim_name.to_str().unwrap();
    let native = Command::new("/usr/bin/python3")
        .args(["-c", script, victim_arg])
        .stdin(Stdio::from(own.slave.try_clone().unwrap()))
        .output()
        .unwrap();
    assert!(stdout(&native).starts_with("open other terminal: opened\n"), "{}{}", stdout(&native), stderr(&native));
    for mode in [&[][..], &["--fast"][..]] {
        let o = t
            .command(mode, &["/usr/bin/python3", "-c", script, victim_arg])
            .stdin(Stdio::from(own.slave.try_clone().unwrap()))
            .output()
            .unwrap();
        let stat = if mode.is_empty() { "refused" } else { "opened" };
        assert_eq!(
            stdout(&o),
            format!(
                "open other terminal: refused\nstat other terminal: {stat}\nown terminal: opened\ncreated terminal: b'typed\\r\\n'\n"
            ),
            "{mode:?}: {}",
            stderr(&o)
        );
    }
    let _ = (victim.master.as_raw_fd(), own.master.as_raw_fd());
}

/// The kernel log and system-wide performance counters describe the host:
/// root reads them natively; the filter refuses both, as container
/// runtimes' default profiles do.
#[test]
fn the_kernel_log_and_system_wide_counters_are_refused() {
    if !kernel_ok() || !root() {
        return;
    }
    let t = Tree::new();
    for route in ["syslog", "perf"] {
        let native = native(&t, &[route]);
        assert!(escaped(&native), "{route} natively: {}{}", stdout(&native), stderr(&native));
        refused_in_both_modes(&t, &[], &[route]);
    }
}
