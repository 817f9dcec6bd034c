//! `--net`: the command's network, from none at all to a list of TCP ports.

use crate::common::*;
use std::net::TcpListener;

/// A Python snippet that connects to each port on 127.0.0.1 and prints
/// `PORT ok` or `PORT <errno name>`.
fn connect_script(ports: &[u16]) -> String {
    format!(
        "import socket, errno\nfor p in {ports:?}:\n    s = socket.socket()\n    s.settimeout(5)\n    try:\n        s.connect(('127.0.0.1', p)); print(p, 'ok')\n    except OSError as e:\n        print(p, errno.errorcode.get(e.errno, e.errno))\n"
    )
}

#[test]
fn net_none_has_only_its_own_loopback() {
    if !kernel_ok() {
        return;
    }
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let t = Tree::new();
    let o = t.command(&["--net", "none"], &["/usr/bin/python3", "-c", &connect_script(&[port])]).output().unwrap();
    assert_eq!(stdout(&o), format!("{port} ECONNREFUSED\n"), "{}", stderr(&o));
    // Loopback inside works: a listener of its own.
    let inside = "import socket\nl = socket.socket(); l.bind(('127.0.0.1', 0)); l.listen()\n\
                  c = socket.create_connection(l.getsockname()); print('inside ok')\n";
    let o = t.command(&["--net", "none"], &["/usr/bin/python3", "-c", inside]).output().unwrap();
    assert_eq!(stdout(&o), "inside ok\n", "{}", stderr(&o));
    // The host network is there only when asked for; by default only the
    // proxy is (tests/e2e/proxy.rs), and the host's loopback is not.
    let o = t.command(&["--net", "host"], &["/usr/bin/python3", "-c", &connect_script(&[port])]).output().unwrap();
    assert_eq!(stdout(&o), format!("{port} ok\n"), "{}", stderr(&o));
    let o = t.command(&[], &["/usr/bin/python3", "-c", &connect_script(&[port])]).output().unwrap();
    assert_eq!(stdout(&o), format!("{port} ECONNREFUSED\n"), "{}", stderr(&o));
}

#[test]
fn net_connect_allows_listed_tcp_ports_only_and_records_the_rest() {
    if !kernel_ok() {
        return;
    }
    let allowed = TcpListener::bind("127.0.0.1:0").unwrap();
    let other = TcpListener::bind("127.0.0.1:0").unwrap();
    let (a, b) = (allowed.local_addr().unwrap().port(), other.local_addr().unwrap().port());
    let t = Tree::new();
    let trail = t.outside.join("trail.jsonl");
    let flag = format!("connect={a}");
    let o = t
        .command(
            &["--net", &flag, "--audit", trail.to_str().unwrap()],
            &["/usr/bin/python3", "-c", &connect_script(&[a, b])],
        )
        .output()
        .unwrap();
    assert_eq!(stdout(&o), format!("{a} ok\n{b} EACCES\n"), "{}", stderr(&o));
    let trail = std::fs::read_to_string(&trail).unwrap();
    let denied: Vec<&str> = trail.lines().filter(|l| l.contains("\"decision\":\"deny\"")).collect();
    assert_eq!(denied.len(), 1, "{trail}");
    assert!(
        denied[0].contains(&format!("\"path\":\"tcp:127.0.0.1:{b}\"")) && denied[0].contains("\"access\":\"connect\"")
    );

    // A malformed list is refused before anything runs.
    let o = t.command(&["--net", "connect=1,x"], &["/bin/true"]).output().unwrap();
    assert_eq!(o.status.code(), Some(2), "a flag value that does not parse is usage");
    assert!(stderr(&o).contains("\"x\" is not a TCP port"), "{}", stderr(&o));
}
