//! The network by name: by default the command reaches only interpose's
//! proxy, which connects only to allowed hosts and records every
//! connection. Everything runs on the host's loopback: the test's own
//! origin server, reached under names the proxy resolves for the test
//! (`--net-resolve`), never an outside address.

use crate::common::*;
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream, UdpSocket};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

/// An HTTP/1.0 server on the host serving the files of a directory (`/`
/// is `index`; query strings ignored), one thread per connection.
struct Origin {
    port: u16,
    dir: tempfile::TempDir,
    served: Arc<AtomicUsize>,
}

fn origin(bind: &str) -> Origin {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("index"), "hello from the origin\n").unwrap();
    let listener = TcpListener::bind(bind).unwrap();
    let port = listener.local_addr().unwrap().port();
    let served = Arc::new(AtomicUsize::new(0));
    let (root, count) = (dir.path().to_path_buf(), Arc::clone(&served));
    std::thread::spawn(move || {
        for conn in listener.incoming().flatten() {
            let (root, count) = (root.clone(), Arc::clone(&count));
            std::thread::spawn(move || serve(conn, &root, &count));
        }
    });
    Origin { port, dir, served }
}

fn serve(mut conn: TcpStream, root: &Path, served: &AtomicUsize) {
    let mut head = Vec::new();
    let mut buf = [0u8; 4096];
    while !head.windows(4).any(|w| w == b"\r\n\r\n") {
        match conn.read(&mut buf) {
            Ok(0) | Err(_) => return,
            Ok(n) => head.extend_from_slice(&buf[..n]),
        }
    }
    let head = String::from_utf8_lossy(&head);
    let target = head.split(' ').nth(1).unwrap_or("/");
    // The proxy rewrites absolute-form requests; a request that reached us
    // in absolute form would mean it did not.
    assert!(target.starts_with('/'), "the origin got {target:?}");
    let path = target.split('?').next().unwrap().trim_start_matches('/');
    let file = root.join(if path.is_empty() { "index" } else { path });
    let reply = match std::fs::read(&file) {
        Ok(body) if !path.contains("..") => {
            let mut r = format!("HTTP/1.0 200 OK\r\nContent-Length: {}\r\n\r\n", body.len()).into_bytes();
            r.extend(body);
            r
        }
        _ => b"HTTP/1.0 404 Not Found\r\nContent-Length: 0\r\n\r\n".to_vec(),
    };
    served.fetch_add(1, Ordering::SeqCst);
    let _ = conn.write_all(&reply);
}

/// The flags naming the test's hosts: `allowed.test` is allowed on the
/// origin's port, `other.test` resolves to the same server but is not.
fn net_flags(port: u16) -> Vec<String> {
    vec![
        "--net".into(),
        format!("allow=allowed.test:{port}"),
        "--net-resolve".into(),
        "allowed.test=127.0.0.1".into(),
        "--net-resolve".into(),
        "other.test=127.0.0.1".into(),
    ]
}

/// An origin on loopback, a scratch tree, and where its trail goes.
fn on_loopback() -> (Origin, Tree, std::path::PathBuf) {
    let t = Tree::new();
    let trail = t.outside.join("trail.jsonl");
    (origin("127.0.0.1:0"), t, trail)
}

fn run(t: &Tree, flags: &[String], trail: &Path, script: &str) -> Output {
    let mut extra: Vec<&str> = flags.iter().map(String::as_str).collect();
    extra.extend(["--audit", trail.to_str().unwrap()]);
    t.command(&extra, &["/bin/sh", "-c", script]).env("npm_config_update_notifier", "false").output().unwrap()
}

/// The connection records of a trail: (host, port, decision, bytes down).
fn connections(trail: &Path) -> Vec<(String, u64, String, u64)> {
    std::fs::read_to_string(trail)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .filter(|v| v["type"] == "connection")
        .map(|v| {
            (
                v["host"].as_str().unwrap().to_string(),
                v["port"].as_u64().unwrap(),
                v["decision"].as_str().unwrap().to_string(),
                v["bytes_down"].as_u64().unwrap(),
            )
        })
        .collect()
}

/// A bare repository served over git's dumb HTTP protocol, and an npm
/// package document, in the origin's directory.
fn publish(o: &Origin) {
    let src = o.dir.path().join("src");
    std::fs::create_dir(&src).unwrap();
    std::fs::write(src.join("README"), "cloned through the proxy\n").unwrap();
    let git = |args: &[&str], dir: &Path| {
        let ok = Command::new("git")
            .args(["-c", "user.name=t", "-c", "user.email=t@example.org", "-c", "init.defaultBranch=main"])
            .args(args)
            .current_dir(dir)
            .output()
            .unwrap();
        assert!(ok.status.success(), "git {args:?}: {}", String::from_utf8_lossy(&ok.stderr));
    };
    git(&["init", "-q"], &src);
    git(&["add", "README"], &src);
    git(&["commit", "-qm", "init"], &src);
    git(&["clone", "-q", "--bare", "src", "repo.git"], o.dir.path());
    git(&["update-server-info"], &o.dir.path().join("repo.git"));
    let doc = format!(
        r#"{{"name":"demo-pkg","dist-tags":{{"latest":"1.2.3"}},"versions":{{"1.2.3":{{"name":"demo-pkg","version":"1.2.3","dist":{{"tarball":"http://allowed.test:{}/demo-pkg-1.2.3.tgz","shasum":"0000000000000000000000000000000000000000"}}}}}}}}"#,
        o.port
    );
    std::fs::write(o.dir.path().join("demo-pkg"), doc).unwrap();
}

#[test]
fn real_clients_reach_allowed_hosts_through_the_proxy_and_are_told_which_host_was_refused() {
    if !kernel_ok() {
        return;
    }
    let (o, t, trail) = on_loopback();
    publish(&o);
    let p = o.port;
    let script = format!(
        r#"
curl -sS --proxytunnel http://allowed.test:{p}/ ; echo "curl-connect=$?"
curl -sS http://allowed.test:{p}/ ; echo "curl-plain=$?"
curl -sS -x "$ALL_PROXY" http://allowed.test:{p}/ ; echo "curl-socks=$?"
curl -sS --proxytunnel http://other.test:{p}/ 2>&1 | tr -d '\r' | grep -o 'response 403' ; echo "curl-other"
curl -sS http://other.test:{p}/ | grep -o 'other.test:{p} is not on the network allowlist; to allow it: --net allow=other.test:{p}'
python3 - <<'EOF'
import http.client, os, urllib.request, urllib.error
print("urllib", urllib.request.urlopen("http://allowed.test:{p}/").read().decode().strip())
try:
    urllib.request.urlopen("http://other.test:{p}/")
except urllib.error.HTTPError as e:
    print("urllib-other", e.code, e.reason)
host, port = os.environ["HTTPS_PROXY"].rsplit("/", 1)[1].split(":")
c = http.client.HTTPConnection(host, int(port))
c.set_tunnel("allowed.test", {p})
c.request("GET", "/")
print("tunnel", c.getresponse().read().decode().strip())
EOF
git clone -q http://allowed.test:{p}/repo.git clone && cat clone/README
git clone -q http://other.test:{p}/repo.git clone2 2>&1 | grep -o 'interpose: other.test:{p} is not on the network allowlist'
npm view demo-pkg version --registry http://allowed.test:{p}/ 2>/dev/null
npm view demo-pkg version --registry http://other.test:{p}/ 2>&1 | grep -o '403 interpose refused other.test:{p}'
curl -sS --noproxy '' http://127.0.0.1:{p}/ | grep -o 'is not on the network allowlist'
curl -sS --noproxy '' http://localhost:{p}/ | grep -o 'resolves only to local addresses'
"#
    );
    // `localhost` is allowed by name, but the system resolver maps it to
    // the host's own loopback: an allowed name must not lead back there.
    let mut flags = net_flags(p);
    flags[1] = format!("allow=allowed.test:{p},localhost:{p}");
    let out = run(&t, &flags, &trail, &script);
    let got = stdout(&out);
    let expected = format!(
        "hello from the origin\ncurl-connect=0\nhello from the origin\ncurl-plain=0\nhello from the origin\ncurl-socks=0\n\
         response 403\ncurl-other\nother.test:{p} is not on the network allowlist; to allow it: --net allow=other.test:{p}\n\
         urllib hello from the origin\nurllib-other 403 interpose refused other.test:{p}\ntunnel hello from the origin\n\
         cloned through the proxy\ninterpose: other.test:{p} is not on the network allowlist\n1.2.3\n\
         403 interpose refused other.test:{p}\nis not on the network allowlist\nresolves only to local addresses\n"
    );
    assert_eq!(got, expected, "{}", stderr(&out));
    // The user is told on stderr which host was refused and how to allow it.
    assert!(stderr(&out).contains(&format!("interpose: network: refused other.test:{p}")), "{}", stderr(&out));

    // Every connection is a record: the allowed ones with the bytes they
    // carried, the refused ones naming the host.
    let records = connections(&trail);
    let allowed: Vec<_> = records.iter().filter(|r| r.0 == "allowed.test" && r.2 == "allow").collect();
    let refused: Vec<_> = records.iter().filter(|r| r.0 == "other.test" && r.2 == "deny").collect();
    assert!(allowed.len() >= 8 && allowed.iter().all(|r| r.1 == u64::from(p) && r.3 > 0), "{records:?}");
    assert!(refused.len() >= 4, "{records:?}");
    let literal = records.iter().filter(|r| r.0 == "127.0.0.1" && r.2 == "deny").count();
    let local = records.iter().filter(|r| r.0 == "localhost" && r.2 == "error").count();
    assert_eq!((literal, local), (1, 1), "{records:?}");
    assert_eq!(records.len(), allowed.len() + refused.len() + 2, "nothing else was contacted: {records:?}");
    // `report` lists the hosts.
    let report = Command::new(interpose()).arg("report").arg(&trail).output().unwrap();
    let text = stdout(&report);
    assert!(text.contains(&format!("allowed.test:{p}")) && text.contains(&format!("other.test:{p}")), "{text}");
    assert!(text.contains("hosts (proxy, loopback forwards)"), "{text}");
}

#[test]
fn a_policy_names_hosts_in_net_allow_and_a_bad_entry_is_pointed_at() {
    if !kernel_ok() {
        return;
    }
    let o = origin("127.0.0.1:0");
    let t = Tree::new();
    let policy = t.outside.join("p.toml");
    std::fs::write(&policy, format!("cwd = {:?}\n[net]\nallow = [\"allowed.test:{}\"]\n", t.ws, o.port)).unwrap();
    let script = format!("curl -sS http://allowed.test:{}/", o.port);
    let o2 = Command::new(interpose())
        .args(["run", "--policy", policy.to_str().unwrap(), "--net-resolve", "allowed.test=127.0.0.1", "--"])
        .args(["/bin/sh", "-c", &script])
        .current_dir(&t.ws)
        .output()
        .unwrap();
    assert_eq!(stdout(&o2), "hello from the origin\n", "{}", stderr(&o2));
    std::fs::write(&policy, "[net]\nallow = [\n  \"ok.example\",\n  \"bad host\",\n]\n").unwrap();
    let bad = Command::new(interpose())
        .args(["run", "--policy", policy.to_str().unwrap(), "--", "/bin/true"])
        .output()
        .unwrap();
    assert_eq!(bad.status.code(), Some(125));
    assert!(
        stderr(&bad).contains("p.toml:4:") && stderr(&bad).contains("\"bad host\": not a host name"),
        "{}",
        stderr(&bad)
    );
    let flag = Command::new(interpose()).args(["run", "--net", "allow=*.org", "--", "/bin/true"]).output().unwrap();
    assert_eq!(flag.status.code(), Some(2), "{}", stderr(&flag));
    assert!(stderr(&flag).contains("a wildcard stands for"), "{}", stderr(&flag));
}

/// A Python program that ignores the proxy variables: TCP to the origin on
/// the host's loopback and on the host's own address, UDP to a receiver,
/// IPv6, and vsock (the hypervisor).
const DIRECT: &str = r#"
import errno, socket, sys
port, udp_port, host_ip = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
def attempt(name, f):
    try:
        f(); print(name, "ok")
    except OSError as e:
        print(name, errno.errorcode.get(e.errno, e.errno))
def tcp(addr, family=socket.AF_INET):
    s = socket.socket(family); s.settimeout(5); s.connect(addr); s.sendall(b"GET / HTTP/1.0\r\n\r\n"); s.recv(100)
attempt("loopback", lambda: tcp(("127.0.0.1", port)))
attempt("host-address", lambda: tcp((host_ip, port)))
attempt("udp", lambda: socket.socket(socket.AF_INET, socket.SOCK_DGRAM).sendto(b"leaked", (host_ip, udp_port)))
def udp_connected():
    u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); u.connect((host_ip, udp_port)); u.send(b"leaked")
attempt("udp-connect", udp_connected)
attempt("vsock", lambda: socket.socket(40, socket.SOCK_STREAM).connect((2, 1234)))
"#;

/// The host's own (non-loopback) IPv4 address: the one a route out uses.
fn host_address() -> String {
    let probe = UdpSocket::bind("0.0.0.0:0").unwrap();
    probe.connect("10.255.255.254:9").unwrap();
    probe.local_addr().unwrap().ip().to_string()
}

/// Runs [`DIRECT`] natively and under interpose (as root, with a network
/// namespace of the command's own; and as nobody without any namespace,
/// where only the supervisor and Landlock stand between the command and
/// the host's network): natively it reaches everything; under interpose
/// nothing, and each attempt is recorded with the address it named.
#[test]
fn a_program_that_ignores_the_proxy_reaches_nothing_and_is_recorded() {
    if !kernel_ok() {
        return;
    }
    let o = origin("0.0.0.0:0");
    let receiver = UdpSocket::bind("0.0.0.0:0").unwrap();
    receiver.set_read_timeout(Some(std::time::Duration::from_millis(200))).unwrap();
    let udp_port = receiver.local_addr().unwrap().port().to_string();
    let ip = host_address();
    let t = Tree::new();
    let script = t.ws.join("direct.py");
    std::fs::write(&script, DIRECT).unwrap();
    let args = [script.to_str().unwrap(), &o.port.to_string(), &udp_port, &ip];
    let native = Command::new("python3").args(args).output().unwrap();
    let received = |r: &UdpSocket| {
        let mut buf = [0u8; 16];
        let mut n = 0;
        while r.recv(&mut buf).is_ok() {
            n += 1;
        }
        n
    };
    assert_eq!(
        stdout(&native).lines().take(4).collect::<Vec<_>>(),
        ["loopback ok", "host-address ok", "udp ok", "udp-connect ok"],
        "natively every route works: {}",
        stderr(&native)
    );
    assert_eq!(received(&receiver), 2, "natively the datagrams arrive");
    let served = o.served.load(Ordering::SeqCst);

    // As root: a namespace of its own. Its loopback is its own (nothing
    // listens there), everything else is refused and recorded.
    let trail = t.outside.join("root.jsonl");
    let mut cmd = vec!["/usr/bin/python3"];
    cmd.extend(args);
    let out = t.command(&["--audit", trail.to_str().unwrap()], &cmd).output().unwrap();
    assert_eq!(
        stdout(&out),
        "loopback ECONNREFUSED\nhost-address EACCES\nudp EACCES\nudp-connect EACCES\nvsock EACCES\n",
        "{}",
        stderr(&out)
    );
    let text = std::fs::read_to_string(&trail).unwrap();
    for subject in [format!("tcp:{ip}:{}", o.port), format!("udp:{ip}:{udp_port}"), "family 40".to_string()] {
        assert!(
            text.lines().any(|l| l.contains(&format!("\"path\":\"{subject}\"")) && l.contains("\"decision\":\"deny\"")),
            "{subject} recorded: {text}"
        );
    }

    // As nobody, without namespaces: the host's network, the proxy on its
    // loopback, and only the proxy reachable.
    std::os::unix::fs::chown(&script, Some(65534), Some(65534)).unwrap();
    let trail = t.outside.join("nobody.jsonl");
    let mut cmd = vec!["/usr/bin/python3"];
    cmd.extend(args);
    let out = as_nobody_on_the_hosts_network(&t, &[], &trail, &cmd).output().unwrap();
    assert_eq!(
        stdout(&out),
        "loopback EACCES\nhost-address EACCES\nudp EACCES\nudp-connect EACCES\nvsock EACCES\n",
        "{}",
        stderr(&out)
    );
    assert_eq!(received(&receiver), 0, "no datagram left the sandbox");
    assert_eq!(o.served.load(Ordering::SeqCst), served, "the origin saw no connection from the sandbox");
    let text = std::fs::read_to_string(&trail).unwrap();
    let network = first_network_feature(&text);
    assert!(network.contains("on the host's loopback"), "{network}");
    for subject in [format!("tcp:127.0.0.1:{}", o.port), format!("udp:{ip}:{udp_port}")] {
        assert!(
            text.lines().any(|l| l.contains(&format!("\"path\":\"{subject}\"")) && l.contains("\"decision\":\"deny\"")),
            "{subject} recorded: {text}"
        );
    }
}

/// `interpose run --no-namespace --rw WS FLAGS --audit TRAIL -- CMD` as
/// nobody (the tree handed over to it): no namespace can be had, so the
/// command shares the host's network and the proxy listens on its
/// loopback.
fn as_nobody_on_the_hosts_network(t: &Tree, flags: &[String], trail: &Path, cmd: &[&str]) -> Command {
    assert!(Path::new("/usr/bin/setpriv").exists(), "setpriv is needed to run as nobody (util-linux)");
    let dir: PathBuf = t.outside.parent().unwrap().to_path_buf();
    for d in [&dir, &t.ws, &t.ro, &t.outside] {
        std::os::unix::fs::chown(d, Some(65534), Some(65534)).unwrap();
    }
    let mut c = Command::new("/usr/bin/setpriv");
    c.args(["--reuid=65534", "--regid=65534", "--clear-groups", interpose(), "run", "--no-namespace", "--rw"])
        .arg(&t.ws)
        .args(flags)
        .arg("--audit")
        .arg(trail)
        .arg("--")
        .args(cmd)
        .current_dir(&t.ws)
        .env("HOME", &t.ws);
    c
}

fn first_network_feature(trail: &str) -> String {
    let first: serde_json::Value = serde_json::from_str(trail.lines().next().unwrap()).unwrap();
    first["features"]["network"]["detail"].as_str().unwrap_or_default().to_string()
}

/// 200 tunnels open at once (each waits for all the others before it sends
/// its request): every one is served and every one recorded.
#[test]
fn the_proxy_keeps_200_concurrent_connections_and_records_each() {
    if !kernel_ok() {
        return;
    }
    let (o, t, trail) = on_loopback();
    let p = o.port;
    let script = format!(
        r#"python3 - <<'EOF'
import http.client, os, threading
host, port = os.environ["HTTPS_PROXY"].rsplit("/", 1)[1].split(":")
n = 200
barrier = threading.Barrier(n, timeout=60)
ok = []
def one():
    c = http.client.HTTPConnection(host, int(port), timeout=60)
    c.set_tunnel("allowed.test", {p})
    c.connect()
    barrier.wait()
    c.request("GET", "/")
    if c.getresponse().read() == b"hello from the origin\n":
        ok.append(1)
threads = [threading.Thread(target=one) for _ in range(n)]
for t in threads: t.start()
for t in threads: t.join()
print(len(ok))
EOF"#
    );
    let out = run(&t, &net_flags(p), &trail, &script);
    assert_eq!(stdout(&out), "200\n", "{}", stderr(&out));
    let records = connections(&trail);
    assert_eq!(records.iter().filter(|r| r.2 == "allow" && r.3 > 0).count(), 200, "{records:?}");
}

/// The proxy failing (a fault injected in debug builds) leaves the command
/// with no way out: the next connection is refused, never sent direct.
#[test]
fn the_proxy_failing_makes_connections_fail_never_bypass() {
    if !kernel_ok() {
        return;
    }
    let (o, t, trail) = on_loopback();
    let p = o.port;
    let script = format!(
        "curl -sS http://allowed.test:{p}/; curl -sS http://panic-the-proxy.interpose-test/ > /dev/null 2>&1; \
         sleep 0.2; curl -sS http://allowed.test:{p}/ 2>/dev/null; echo after=$?; \
         curl -sS --noproxy '*' http://127.0.0.1:{p}/ 2>/dev/null; echo direct=$?"
    );
    let served = o.served.load(Ordering::SeqCst);
    let out = run(&t, &net_flags(p), &trail, &script);
    // curl: 7 is "failed to connect"; 56, "connection reset", when the
    // request reached the listener's backlog just before it closed.
    let got = stdout(&out);
    let lines: Vec<&str> = got.lines().collect();
    assert_eq!(lines.len(), 3, "{got}{}", stderr(&out));
    assert_eq!(lines[0], "hello from the origin", "{}", stderr(&out));
    assert!(["after=7", "after=56", "after=52"].contains(&lines[1]), "{got}{}", stderr(&out));
    assert_eq!(lines[2], "direct=7", "{}", stderr(&out));
    assert!(stderr(&out).contains("the network proxy failed"), "{}", stderr(&out));
    assert_eq!(o.served.load(Ordering::SeqCst), served + 1, "only the first request reached the origin");
}

/// Learning: the proxy connects to hosts the allowlist does not name and
/// records them as `would_deny`; `report --suggest` turns them into an
/// allowlist under which the same command reaches them, enforced.
#[test]
fn learning_suggests_the_allowlist_a_session_needed() {
    if !kernel_ok() {
        return;
    }
    let o = origin("127.0.0.1:0");
    let p = o.port;
    let t = Tree::new();
    let trail = t.outside.join("learn.jsonl");
    let resolve = ["--net-resolve", "other.test=127.0.0.1"];
    let script = format!("curl -sS http://other.test:{p}/");
    let mut flags: Vec<String> = resolve.iter().map(|s| s.to_string()).collect();
    flags.push("--learn".into());
    let out = run(&t, &flags, &trail, &script);
    assert_eq!(stdout(&out), "hello from the origin\n", "{}", stderr(&out));
    assert!(
        connections(&trail).iter().any(|r| r.0 == "other.test" && r.2 == "would_deny"),
        "{:?}",
        connections(&trail)
    );

    let as_flags =
        Command::new(interpose()).args(["report", "--suggest", "--as", "flags"]).arg(&trail).output().unwrap();
    assert!(stdout(&as_flags).contains(&format!("--net allow=other.test:{p}\n")), "{}", stdout(&as_flags));
    let policy = Command::new(interpose()).args(["report", "--suggest"]).arg(&trail).output().unwrap();
    let file = t.outside.join("suggested.toml");
    std::fs::write(&file, stdout(&policy)).unwrap();
    assert!(stdout(&policy).contains(&format!("[net]\nallow = [\n    \"other.test:{p}\",")), "{}", stdout(&policy));
    // Enforced, without the suggestion the host is refused; with it, reached.
    let enforced = |extra: &[&str]| {
        let mut c = Command::new(interpose());
        c.arg("run").args(extra).args(resolve).args(["--", "/bin/sh", "-c", &script]).current_dir(&t.ws);
        c.output().unwrap()
    };
    let without = enforced(&["--rw", t.ws.to_str().unwrap()]);
    assert!(
        stdout(&without).contains("interpose refused") || stdout(&without).contains("not on the network allowlist"),
        "{}",
        stdout(&without)
    );
    let with = enforced(&["--policy", file.to_str().unwrap()]);
    assert_eq!(stdout(&with), "hello from the origin\n", "{}", stderr(&with));
}

/// On the host's loopback (no namespace of the command's own) the proxy's
/// port is reachable by any process of the host: it serves only the
/// connections the supervisor made for the command, so another process can
/// neither use the allowlist nor add records to the session's trail.
#[test]
fn on_the_hosts_loopback_the_proxy_serves_only_the_sandbox() {
    if !kernel_ok() {
        return;
    }
    let (o, t, trail) = on_loopback();
    let p = o.port;
    let script = format!("echo \"$HTTPS_PROXY\"; sleep 2; curl -sS http://allowed.test:{p}/");
    let mut child = as_nobody_on_the_hosts_network(&t, &net_flags(p), &trail, &["/bin/sh", "-c", &script])
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut out = std::io::BufReader::new(child.stdout.take().unwrap());
    let mut first = String::new();
    std::io::BufRead::read_line(&mut out, &mut first).unwrap();
    let proxy = first.trim().strip_prefix("http://").expect("the proxy's address").to_string();
    // Another process of the host asks the proxy for the allowed host.
    let mut outsider = TcpStream::connect(&proxy).unwrap();
    outsider.set_read_timeout(Some(std::time::Duration::from_secs(5))).unwrap();
    let _ = outsider.write_all(format!("CONNECT allowed.test:{p} HTTP/1.1\r\n\r\n").as_bytes());
    let mut answer = Vec::new();
    let _ = outsider.read_to_end(&mut answer);
    assert!(answer.is_empty(), "the outsider was served: {}", String::from_utf8_lossy(&answer));
    let mut rest = String::new();
    out.read_to_string(&mut rest).unwrap();
    assert!(child.wait().unwrap().success());
    assert_eq!(rest, "hello from the origin\n", "the sandbox is served");
    let records = connections(&trail);
    assert_eq!(records.len(), 1, "only the sandbox's connection is recorded: {records:?}");
    assert_eq!(o.served.load(Ordering::SeqCst), 1);
}

/// A host that reaches the network only through a proxy of its own
/// (`HTTPS_PROXY` in interpose's environment): interpose's proxy tunnels
/// allowed connections through it and still refuses the others itself.
#[test]
fn the_hosts_own_proxy_is_chained() {
    if !kernel_ok() {
        return;
    }
    let o = origin("127.0.0.1:0");
    let p = o.port;
    // The host's proxy: CONNECT only, to `allowed.test` (which only it can
    // resolve: interpose's proxy is given no mapping for it).
    let up = TcpListener::bind("127.0.0.1:0").unwrap();
    let up_port = up.local_addr().unwrap().port();
    let asked = Arc::new(std::sync::Mutex::new(Vec::<String>::new()));
    let seen = Arc::clone(&asked);
    std::thread::spawn(move || {
        for conn in up.incoming().flatten() {
            let seen = Arc::clone(&seen);
            std::thread::spawn(move || {
                let mut conn = conn;
                let mut head = Vec::new();
                let mut b = [0u8; 1];
                while !head.ends_with(b"\r\n\r\n") && conn.read(&mut b).unwrap_or(0) == 1 {
                    head.push(b[0]);
                }
                let head = String::from_utf8_lossy(&head).to_string();
                seen.lock().unwrap().push(head.lines().next().unwrap_or_default().to_string());
                let target = head.split(' ').nth(1).unwrap_or_default().replace("allowed.test", "127.0.0.1");
                let Ok(mut origin) = TcpStream::connect(target) else { return };
                conn.write_all(b"HTTP/1.1 200 Connection established\r\n\r\n").unwrap();
                let mut back = origin.try_clone().unwrap();
                let mut client = conn.try_clone().unwrap();
                std::thread::spawn(move || std::io::copy(&mut back, &mut client));
                let _ = std::io::copy(&mut conn, &mut origin);
            });
        }
    });
    let t = Tree::new();
    let trail = t.outside.join("trail.jsonl");
    let script = format!(
        "curl -sS --proxytunnel http://allowed.test:{p}/; curl -sS http://allowed.test:{p}/; \
         curl -sS http://other.test:{p}/ | grep -o 'not on the network allowlist'"
    );
    let flag = format!("allow=allowed.test:{p}");
    let out = t
        .command(&["--net", &flag, "--audit", trail.to_str().unwrap()], &["/bin/sh", "-c", &script])
        .env("HTTPS_PROXY", format!("http://127.0.0.1:{up_port}"))
        .env("HTTP_PROXY", format!("http://127.0.0.1:{up_port}"))
        .env_remove("NO_PROXY")
        .env_remove("no_proxy")
        .output()
        .unwrap();
    assert_eq!(
        stdout(&out),
        "hello from the origin\nhello from the origin\nnot on the network allowlist\n",
        "{}",
        stderr(&out)
    );
    let asked = asked.lock().unwrap().clone();
    assert_eq!(asked, vec![format!("CONNECT allowed.test:{p} HTTP/1.1"); 2], "the host's proxy saw only allowed hosts");
    let first: serde_json::Value =
        serde_json::from_str(std::fs::read_to_string(&trail).unwrap().lines().next().unwrap()).unwrap();
    let network = first["features"]["network"]["detail"].as_str().unwrap().to_string();
    assert!(network.contains(&format!("chained through the host's proxy 127.0.0.1:{up_port}")), "{network}");
}

/// The host's own non-loopback addresses (a LAN or bridge interface), from
/// `hostname -I`: CI machines have one.
fn own_addresses() -> Vec<String> {
    let o = Command::new("hostname").arg("-I").output().unwrap();
    let all: Vec<String> = stdout(&o).split_whitespace().map(str::to_string).collect();
    all.into_iter().filter(|a| !a.starts_with("127.") && a != "::1" && !a.starts_with("fe80")).collect()
}

/// A name allowed by the allowlist that resolves to one of the host's own
/// interface addresses (not loopback) leads to a service on the host that
/// listens on every address: natively it is reached; through the proxy,
/// by CONNECT, absolute-form GET and SOCKS5, it is refused, IPv4 and IPv6.
#[test]
fn a_name_that_resolves_to_the_hosts_own_interface_is_refused() {
    if !kernel_ok() {
        return;
    }
    let own = own_addresses();
    assert!(!own.is_empty(), "the machine has a non-loopback interface address (hostname -I)");
    let o = origin("[::]:0");
    let p = o.port;
    let t = Tree::new();
    let trail = t.outside.join("trail.jsonl");
    for addr in &own {
        let host = if addr.contains(':') { format!("[{addr}]") } else { addr.clone() };
        let native = Command::new("curl").args(["-sS", "--noproxy", "*", &format!("http://{host}:{p}/")]).output();
        assert!(stdout(&native.unwrap()).contains("hello from the origin"), "natively {host}:{p} is reached");
        let _ = std::fs::remove_file(&trail);
        let flags =
            vec!["--net".into(), format!("allow=lan.test:{p}"), "--net-resolve".into(), format!("lan.test={addr}")];
        let script = format!(
            "curl -sS --proxytunnel http://lan.test:{p}/ 2>&1; echo; curl -sS http://lan.test:{p}/; echo; \
             curl -sS -x \"$ALL_PROXY\" http://lan.test:{p}/ 2>&1; echo; echo end"
        );
        let out = run(&t, &flags, &trail, &script);
        let got = stdout(&out);
        assert!(!got.contains("hello from the origin") && got.contains("end"), "{addr}: {got}{}", stderr(&out));
        assert!(got.contains("this host's own address"), "{addr}: {got}");
        let refused = connections(&trail).iter().filter(|r| r.0 == "lan.test" && r.2 != "allow").count();
        assert!(refused >= 3, "{addr}: {:?}", connections(&trail));
    }
    assert_eq!(o.served.load(Ordering::SeqCst), own.len(), "only the native requests reached the origin");
}

/// What `LOOPBACK` does: a plain TCP connect and one exchange with the
/// allowed port by address and by name, the other port directly and
/// through the proxy (`CONNECT`), and a datagram to the allowed port.
const LOOPBACK: &str = r#"
import errno, os, socket, sys
allowed, other = int(sys.argv[1]), int(sys.argv[2])
def attempt(name, f):
    try:
        print(name, f())
    except OSError as e:
        print(name, errno.errorcode.get(e.errno, e.errno))
def exchange(host, port):
    c = socket.create_connection((host, port), timeout=5); c.sendall(b"ping"); return c.recv(100).decode()
attempt("allowed", lambda: exchange("127.0.0.1", allowed))
attempt("by-name", lambda: exchange("localhost", allowed))
attempt("other", lambda: exchange("127.0.0.1", other))
def through_proxy():
    proxy = os.environ.get("HTTPS_PROXY")
    if not proxy:
        return "no proxy"
    host, port = proxy.rsplit("/", 1)[-1].rsplit(":", 1)
    c = socket.create_connection((host, int(port)), timeout=5)
    c.sendall(f"CONNECT 127.0.0.1:{other} HTTP/1.1\r\nHost: 127.0.0.1:{other}\r\n\r\n".encode())
    return c.recv(100).decode().split("\r\n")[0]
attempt("other-via-proxy", through_proxy)
attempt("udp", lambda: socket.socket(socket.AF_INET, socket.SOCK_DGRAM).sendto(b"leaked", ("127.0.0.1", allowed)) and "sent")
"#;

/// A service on the host's loopback that the allowlist names
/// (`--net allow=127.0.0.1:PORT`) is reached from inside at the same
/// address and port by a plain TCP connect (a database client speaks no
/// proxy), forwarded by interpose, each connection recorded with who made
/// it, the port, the bytes and its length; every other loopback port stays
/// unreachable, directly and through the proxy; a datagram to the allowed
/// port leaves nothing. Natively all of it goes through. Without a network
/// namespace (as nobody) the entry is refused before anything runs.
#[test]
fn an_allowed_loopback_service_is_reached_by_a_plain_connect_and_no_other() {
    if !kernel_ok() {
        return;
    }
    let echo = |tag: &'static str| {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        std::thread::spawn(move || {
            for mut conn in listener.incoming().flatten() {
                let mut buf = [0u8; 4];
                if conn.read_exact(&mut buf).is_ok() {
                    let _ = conn.write_all(&[tag.as_bytes(), &buf].concat());
                }
            }
        });
        port
    };
    let (allowed, other) = (echo("A:"), echo("B:"));
    let receiver = UdpSocket::bind(("127.0.0.1", allowed)).unwrap();
    receiver.set_read_timeout(Some(std::time::Duration::from_millis(300))).unwrap();
    let t = Tree::new();
    let script = t.ws.join("loopback.py");
    std::fs::write(&script, LOOPBACK).unwrap();
    let args = [script.to_str().unwrap(), &allowed.to_string(), &other.to_string()];
    let native = Command::new("python3").args(args).env_remove("HTTPS_PROXY").output().unwrap();
    assert_eq!(
        stdout(&native),
        "allowed A:ping\nby-name A:ping\nother B:ping\nother-via-proxy no proxy\nudp sent\n",
        "{}",
        stderr(&native)
    );
    let mut buf = [0u8; 16];
    assert!(receiver.recv(&mut buf).is_ok(), "natively the datagram arrives");

    let trail = t.outside.join("loopback.jsonl");
    let flag = format!("allow=127.0.0.1:{allowed}");
    let mut cmd = vec!["/usr/bin/python3"];
    cmd.extend(args);
    let o = t.command(&["--net", &flag, "--audit", trail.to_str().unwrap()], &cmd).output().unwrap();
    assert_eq!(
        stdout(&o),
        format!("allowed A:ping\nby-name A:ping\nother ECONNREFUSED\nother-via-proxy HTTP/1.1 403 interpose refused 127.0.0.1:{other}\nudp sent\n"),
        "{}",
        stderr(&o)
    );
    assert!(receiver.recv(&mut buf).is_err(), "no datagram left the namespace");
    let records: Vec<serde_json::Value> =
        std::fs::read_to_string(&trail).unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    let who = records
        .iter()
        .find(|r| r["type"] == "decision" && r["path"] == format!("tcp:127.0.0.1:{allowed}").as_str())
        .unwrap_or_else(|| panic!("no record of who connected: {records:?}"));
    assert_eq!((&who["comm"], &who["decision"]), (&serde_json::json!("python3"), &serde_json::json!("allow")));
    let forwarded: Vec<_> =
        records.iter().filter(|r| r["type"] == "connection" && r["protocol"] == "forward").collect();
    assert_eq!(forwarded.len(), 2, "one record per connection: {forwarded:?}");
    for r in &forwarded {
        assert_eq!(
            (r["port"].as_u64(), r["bytes_up"].as_u64(), r["bytes_down"].as_u64()),
            (Some(allowed.into()), Some(4), Some(6))
        );
        assert_eq!(r["decision"], "allow");
        assert!(r["duration_ms"].is_u64());
    }
    assert!(
        records.iter().any(|r| r["type"] == "connection" && r["port"] == other && r["decision"] == "deny"),
        "the proxy's refusal of the other port is recorded"
    );

    // By name: `localhost` listens on both loopback addresses inside and
    // reaches the host's service on whichever it listens (here 127.0.0.1
    // only, though a client asking for localhost may try ::1 first).
    let by_name = format!("allow=localhost:{allowed}");
    let o = t.command(&["--net", &by_name], &cmd).output().unwrap();
    assert!(
        stdout(&o).starts_with("allowed A:ping\nby-name A:ping\nother ECONNREFUSED\n"),
        "{}{}",
        stdout(&o),
        stderr(&o)
    );

    // On the host's own network (as nobody, no namespaces) there is no
    // namespace to forward into: refused at start, saying so.
    std::os::unix::fs::chown(&script, Some(65534), Some(65534)).unwrap();
    let trail = t.outside.join("nobody-loopback.jsonl");
    let flags = ["--net".to_string(), flag];
    let o = as_nobody_on_the_hosts_network(&t, &flags, &trail, &cmd).output().unwrap();
    assert_eq!(o.status.code(), Some(125), "{}{}", stdout(&o), stderr(&o));
    assert!(stderr(&o).contains("needs root or unprivileged user namespaces"), "{}", stderr(&o));
    assert!(stdout(&o).is_empty());
}

/// An HTTP/1.1 server on the host's loopback (TLS with `tls CERT KEY`)
/// that logs each request (method, path, headers, body) as a JSON line and
/// answers `ok METHOD PATH BODY`; it prints its port first.
const LOGGING_SERVER: &str = r#"
import http.server, json, ssl, sys
log, mode = sys.argv[1], sys.argv[2]
class H(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def do_any(self):
        body = b""
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            while True:
                size = int(self.rfile.readline().split(b";")[0], 16)
                if size == 0:
                    while self.rfile.readline() not in (b"\r\n", b""):
                        pass
                    break
                body += self.rfile.read(size)
                self.rfile.readline()
        elif self.headers.get("Content-Length"):
            body = self.rfile.read(int(self.headers["Content-Length"]))
        with open(log, "a") as f:
            f.write(json.dumps({"method": self.command, "path": self.path,
                                "headers": [[k, v] for k, v in self.headers.items()], "body": body.decode()}) + "\n")
        out = f"ok {self.command} {self.path} {body.decode()}".encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(out)))
        self.end_headers()
        self.wfile.write(out)
    do_GET = do_POST = do_any
    def log_message(self, *a):
        pass
srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), H)
if mode == "tls":
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(sys.argv[3], sys.argv[4])
    srv.socket = ctx.wrap_socket(srv.socket, server_side=True)
print(srv.server_address[1], flush=True)
srv.serve_forever()
"#;

/// What the sandboxed client does: reads its key variable and base URL,
/// saves its own environment (as `/proc` shows it), makes three requests
/// on one connection to the base URL (a GET, a POST with a body, a chunked
/// POST) with the key it holds, one through the proxy to another host, and
/// saves its writable memory.
const CREDENTIAL_CLIENT: &str = r#"
import http.client, os, sys, urllib.parse, urllib.request
other = sys.argv[1]
key = os.environ.get("TEST_SERVICE_API_KEY")
print("key", key)
# The environment as the kernel holds it, for the test to search.
open("environ.bin", "wb").write(open("/proc/self/environ", "rb").read())
u = urllib.parse.urlparse(os.environ["TEST_SERVICE_BASE_URL"])
c = http.client.HTTPConnection(u.hostname, u.port, timeout=10)
c.request("GET", "/v1/models", headers={"x-api-key": key})
r = c.getresponse(); print(r.status, r.read().decode())
c.request("POST", "/v1/messages", body=b'{"hello": 1}', headers={"x-api-key": key, "content-type": "application/json"})
r = c.getresponse(); print(r.status, r.read().decode())
c.request("POST", "/v1/chunked", body=iter([b"ab", b"cd"]), headers={"x-api-key": key}, encode_chunked=True)
r = c.getresponse(); print(r.status, r.read().decode())
open("notes.txt", "w").write(f"{key} {os.environ.get('TEST_SERVICE_BASE_URL')}\n")
opener = urllib.request.build_opener(urllib.request.ProxyHandler({"http": os.environ["HTTP_PROXY"]}))
req = urllib.request.Request(f"http://other.test.example:{other}/elsewhere", headers={"x-api-key": key})
print(opener.open(req, timeout=10).read().decode())
# Its own memory after all of it (every writable mapping), for the test to search.
with open("/proc/self/maps") as maps, open("/proc/self/mem", "rb", 0) as mem, open("memory.bin", "wb") as out:
    for line in maps:
        where, perms = line.split()[:2]
        if not perms.startswith("rw"):
            continue
        start, end = (int(x, 16) for x in where.split("-"))
        try:
            mem.seek(start)
            out.write(mem.read(end - start))
        except (OSError, ValueError, OverflowError):
            pass
"#;

/// Credentials by reference: a policy's `[[net.credentials]]` entry gives
/// the command a base URL of interpose's and a placeholder key; requests
/// sent there reach the HTTPS host (a local one with a throwaway
/// certificate here) with the real key, read by interpose from its own
/// environment. The real key is in no record, no file, nor the command's
/// environment; the placeholder never reaches the host; a request to
/// another host carries no credential. A missing source is refused at
/// start, naming the variable.
#[test]
fn a_credential_by_reference_reaches_its_host_only_and_never_the_command() {
    if !kernel_ok() {
        return;
    }
    const SECRET: &str = "real-credential-7d3a91c0";
    let t = Tree::new();
    let pki = t.outside.join("pki");
    std::fs::create_dir(&pki).unwrap();
    let openssl = |args: &[&str]| {
        let o = Command::new("openssl").args(args).current_dir(&pki).output().expect("openssl");
        assert!(o.status.success(), "openssl {args:?}: {}", stderr(&o));
    };
    openssl(
        &["req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "ca.key", "-out", "ca.pem", "-days", "2"]
            .iter()
            .copied()
            .chain(["-subj", "/CN=interpose throwaway CA", "-addext", "basicConstraints=critical,CA:TRUE"])
            .chain(["-addext", "keyUsage=critical,keyCertSign,cRLSign"])
            .collect::<Vec<_>>(),
    );
    openssl(&[
        "req",
        "-newkey",
        "rsa:2048",
        "-nodes",
        "-keyout",
        "srv.key",
        "-out",
        "srv.csr",
        "-subj",
        "/CN=api.test.example",
    ]);
    std::fs::write(pki.join("ext"), "subjectAltName=DNS:api.test.example\nbasicConstraints=CA:FALSE\n").unwrap();
    openssl(&[
        "x509",
        "-req",
        "-in",
        "srv.csr",
        "-CA",
        "ca.pem",
        "-CAkey",
        "ca.key",
        "-CAcreateserial",
        "-out",
        "srv.pem",
        "-days",
        "2",
        "-extfile",
        "ext",
    ]);
    let server = |log: &Path, tls: bool| {
        let mut c = Command::new("python3");
        c.arg("-c").arg(LOGGING_SERVER).arg(log);
        if tls {
            c.args(["tls"]).arg(pki.join("srv.pem")).arg(pki.join("srv.key"));
        } else {
            c.arg("plain");
        }
        let mut child = c.stdout(std::process::Stdio::piped()).spawn().unwrap();
        let mut line = String::new();
        std::io::BufRead::read_line(&mut std::io::BufReader::new(child.stdout.as_mut().unwrap()), &mut line).unwrap();
        (child, line.trim().parse::<u16>().unwrap())
    };
    let (api_log, other_log) = (t.outside.join("api.jsonl"), t.outside.join("other.jsonl"));
    let (mut api, api_port) = server(&api_log, true);
    let (mut other, other_port) = server(&other_log, false);
    let policy = t.outside.join("credentials.toml");
    std::fs::write(
        &policy,
        format!(
            "[[net.credentials]]\nhost = \"api.test.example:{api_port}\"\nheader = \"x-api-key\"\n\
             value = \"env:TEST_SERVICE_API_KEY\"\nbase_url = \"TEST_SERVICE_BASE_URL\"\n\
             placeholder = [\"TEST_SERVICE_API_KEY\"]\n"
        ),
    )
    .unwrap();
    let trail = t.outside.join("trail.jsonl");
    let run = |key: Option<&str>, trail: &Path| {
        let mut c = t.command(
            &[
                "--policy",
                policy.to_str().unwrap(),
                "--net",
                &format!("allow=other.test.example:{other_port}"),
                "--net-resolve",
                "api.test.example=127.0.0.1",
                "--net-resolve",
                "other.test.example=127.0.0.1",
                "--audit",
                trail.to_str().unwrap(),
            ],
            &["/usr/bin/python3", "-c", CREDENTIAL_CLIENT, &other_port.to_string()],
        );
        c.env("SSL_CERT_FILE", pki.join("ca.pem")).env_remove("TEST_SERVICE_API_KEY");
        if let Some(k) = key {
            c.env("TEST_SERVICE_API_KEY", k);
        }
        c.output().unwrap()
    };
    let o = run(Some(SECRET), &trail);
    let (out, err) = (stdout(&o), stderr(&o));
    let _ = (api.kill(), other.kill());
    assert_eq!(
        out,
        format!(
            "key interpose-placeholder-not-a-credential\n200 ok GET /v1/models \n\
             200 ok POST /v1/messages {{\"hello\": 1}}\n200 ok POST /v1/chunked abcd\nok GET /elsewhere \n"
        ),
        "{err}"
    );
    assert!(err.contains("TEST_SERVICE_BASE_URL is http://127.0.0.1:"), "said at start: {err}");
    assert!(!err.contains(SECRET), "{err}");
    let lines = |p: &Path| -> Vec<serde_json::Value> {
        std::fs::read_to_string(p).unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect()
    };
    let seen = lines(&api_log);
    assert_eq!(seen.len(), 3, "{seen:?}");
    for r in &seen {
        let headers: Vec<(String, String)> = r["headers"]
            .as_array()
            .unwrap()
            .iter()
            .map(|h| (h[0].as_str().unwrap().to_ascii_lowercase(), h[1].as_str().unwrap().to_string()))
            .collect();
        let keys: Vec<&str> = headers.iter().filter(|(k, _)| k == "x-api-key").map(|(_, v)| v.as_str()).collect();
        assert_eq!(keys, [SECRET], "exactly the real key: {r}");
        assert!(headers.contains(&("host".into(), format!("api.test.example:{api_port}"))), "{r}");
        assert!(!r.to_string().contains("interpose-placeholder"), "the placeholder never leaves: {r}");
    }
    assert_eq!(seen[1]["body"], "{\"hello\": 1}");
    assert_eq!(seen[2]["body"], "abcd");
    // Another host gets what the command itself sent, the placeholder, and
    // never the value.
    let elsewhere = std::fs::read_to_string(&other_log).unwrap();
    assert!(elsewhere.contains("/elsewhere") && !elsewhere.contains(SECRET), "{elsewhere}");
    let recorded = std::fs::read_to_string(&trail).unwrap();
    assert!(!recorded.contains(SECRET), "the trail never holds the value");
    assert!(recorded.contains("\"protocol\":\"credential\"") && recorded.contains("\"host\":\"api.test.example\""));
    for entry in walk(&t.ws) {
        let data = std::fs::read(&entry).unwrap_or_default();
        assert!(!data.windows(SECRET.len()).any(|w| w == SECRET.as_bytes()), "{} holds the value", entry.display());
    }
    assert!(t.ws.join("notes.txt").exists() && t.ws.join("environ.bin").exists());
    let memory = std::fs::metadata(t.ws.join("memory.bin")).map(|m| m.len()).unwrap_or(0);
    assert!(memory > 1 << 20, "the command's memory was saved ({memory} bytes) and searched above");
    let environ = std::fs::read(t.ws.join("environ.bin")).unwrap();
    assert!(environ.windows(22).any(|w| w == b"TEST_SERVICE_BASE_URL="), "the command's environment was read");

    // Without its source, nothing runs, and the variable is named.
    let o = run(None, &t.outside.join("missing.jsonl"));
    assert_eq!(o.status.code(), Some(125), "{}", stderr(&o));
    assert!(stderr(&o).contains("TEST_SERVICE_API_KEY is not set"), "{}", stderr(&o));
    assert!(stdout(&o).is_empty());
}

/// Every file beneath `dir`.
fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        let path = entry.path();
        if entry.file_type().is_ok_and(|t| t.is_dir()) {
            out.extend(walk(&path));
        } else {
            out.push(path);
        }
    }
    out
}
