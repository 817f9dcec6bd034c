//! `interpose run --ask SOCKET`: held calls, a scripted client answering
//! over the real socket, and the trail.

use crate::common::*;
use serde_json::{json, Value};
use std::io::{BufRead, BufReader, Write};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// What the scripted client does with a request: answer it
/// (`decision`, `scope`) after a pause, or leave it unanswered.
type Script = Box<dyn Fn(&Value) -> Option<(Duration, &'static str, &'static str)> + Send>;

/// A scripted client on the session's socket: it creates `ws/go` once
/// greeted (the command waits for it, so no call comes before the client
/// is there), answers each request by its script, and keeps every message.
struct Client {
    seen: Arc<Mutex<Vec<Value>>>,
    stream: UnixStream,
}

impl Client {
    fn start(socket: &Path, go: PathBuf, script: Script) -> Client {
        let stream = connect(socket);
        let seen = Arc::new(Mutex::new(Vec::new()));
        let (reader, writer) = (stream.try_clone().unwrap(), stream.try_clone().unwrap());
        let kept = Arc::clone(&seen);
        std::thread::spawn(move || {
            for line in BufReader::new(reader).lines() {
                let Ok(line) = line else { return };
                let m: Value = serde_json::from_str(&line).expect("interpose sends JSON lines");
                kept.lock().unwrap().push(m.clone());
                match m["type"].as_str() {
                    Some("hello") => std::fs::write(&go, "").unwrap(),
                    Some("request") => {
                        if let Some((pause, decision, scope)) = script(&m) {
                            // Each answer after its own pause: questions
                            // are answered in parallel, not in turn.
                            let mut writer = writer.try_clone().unwrap();
                            std::thread::spawn(move || {
                                std::thread::sleep(pause);
                                let a = json!({"type": "answer", "id": m["id"], "decision": decision, "scope": scope});
                                // One write per line: answers from parallel
                                // threads must not interleave.
                                let _ = writer.write_all(format!("{a}\n").as_bytes());
                            });
                        }
                    }
                    _ => {}
                }
            }
        });
        Client { seen, stream }
    }

    fn of_type(&self, kind: &str) -> Vec<Value> {
        self.seen.lock().unwrap().iter().filter(|m| m["type"] == kind).cloned().collect()
    }

    fn send(&mut self, line: &str) {
        writeln!(self.stream, "{line}").unwrap();
    }
}

fn connect(socket: &Path) -> UnixStream {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        match UnixStream::connect(socket) {
            Ok(s) => return s,
            Err(e) => {
                assert!(Instant::now() < deadline, "no socket at {}: {e}", socket.display());
                std::thread::sleep(Duration::from_millis(10));
            }
        }
    }
}

/// The socket's own directory, outside the surface.
fn socket_in(t: &Tree) -> PathBuf {
    let dir = t.ws.parent().unwrap().join("approvals");
    std::fs::create_dir_all(&dir).unwrap();
    dir.join("ask.sock")
}

/// `interpose run --ask SOCKET --audit TRAIL EXTRA -- sh -c SCRIPT`, the
/// script starting once `go` exists.
fn spawn(t: &Tree, socket: &Path, extra: &[&str], script: &str, env: &[(&str, &str)]) -> Child {
    let trail = t.ws.parent().unwrap().join("trail.jsonl");
    let mut args = vec!["--ask", socket.to_str().unwrap(), "--audit", trail.to_str().unwrap()];
    args.extend_from_slice(extra);
    let script = format!("while [ ! -e go ]; do sleep 0.01; done; {script}");
    let mut cmd = t.command(&args, &["/bin/sh", "-c", &script]);
    cmd.envs(env.iter().copied()).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap()
}

fn trail(t: &Tree) -> Vec<Value> {
    let text = std::fs::read_to_string(t.ws.parent().unwrap().join("trail.jsonl")).unwrap();
    text.lines().map(|l| serde_json::from_str(l).unwrap()).collect()
}

fn records<'a>(trail: &'a [Value], kind: &str) -> Vec<&'a Value> {
    trail.iter().filter(|r| r["type"] == kind).collect()
}

fn finish(child: Child) -> (String, String) {
    let o = child.wait_with_output().unwrap();
    (stdout(&o), stderr(&o))
}

#[test]
fn a_person_allows_one_path_for_the_session_and_refuses_another() {
    let Some(t) = kernel_tree() else { return };
    std::fs::write(t.outside.join("other"), "other-marker\n").unwrap();
    let socket = socket_in(&t);
    let child = spawn(
        &t,
        &socket,
        &[],
        "cat $OUT/secret; cat $OUT/secret; cat $OUT/other; echo other=$?; echo made > $OUT/new; echo new=$?",
        &[],
    );
    let client = Client::start(
        &socket,
        t.ws.join("go"),
        Box::new(|r| match r["path"].as_str().unwrap_or_default() {
            p if p.ends_with("/secret") => Some((Duration::ZERO, "allow", "session")),
            p if p.ends_with("/new") => Some((Duration::ZERO, "allow", "once")),
            _ => Some((Duration::ZERO, "deny", "once")),
        }),
    );
    let (out, err) = finish(child);
    assert_eq!(out.matches("top-secret-marker").count(), 2, "both reads allowed: {out}\n{err}");
    assert!(out.contains("other=1") && !out.contains("other-marker"), "{out}\n{err}");
    assert!(out.contains("new=0"), "{out}\n{err}");
    assert_eq!(std::fs::read_to_string(t.outside.join("new")).unwrap(), "made\n");
    // The second read of the secret was covered by the session answer.
    let requests = client.of_type("request");
    let asked: Vec<&str> = requests.iter().map(|r| r["path"].as_str().unwrap()).collect();
    assert_eq!(asked.iter().filter(|p| p.ends_with("/secret")).count(), 1, "asked: {asked:?}");
    assert_eq!(requests.len(), 3, "asked: {asked:?}");
    let r = &requests[0];
    assert_eq!(r["access"], "read");
    assert_eq!(r["exe"], "/usr/bin/cat");
    assert!(r["what_else"].as_str().unwrap().contains("--ro"), "{r}");
    let trail = trail(&t);
    let questions = records(&trail, "question");
    assert_eq!(questions.len(), 3, "{questions:?}");
    assert!(questions.iter().any(|q| q["decision"] == "allow" && q["scope"] == "session" && q["by"] == "client"));
    assert!(questions.iter().any(|q| q["decision"] == "deny" && q["by"] == "client"));
    let decisions = records(&trail, "decision");
    let on = |suffix: &str| -> Vec<&&Value> {
        decisions.iter().filter(|d| d["path"].as_str().unwrap_or_default().ends_with(suffix)).collect()
    };
    // The second read is the same program's same access: counted as a
    // repeat of the first record.
    let allowed = on("/secret").into_iter().find(|d| d["decision"] == "allow").expect("an allowed read");
    assert_eq!(allowed["rule_kind"], "approval", "{allowed}");
    assert!(allowed["rule"].as_str().unwrap().contains("for the session"), "{allowed}");
    assert!(on("/other")
        .iter()
        .any(|d| d["decision"] == "deny" && d["rule"].as_str().unwrap().contains("refused by a person")));
    // `report` shows the questions.
    let report =
        Command::new(interpose()).arg("report").arg(t.ws.parent().unwrap().join("trail.jsonl")).output().unwrap();
    let text = stdout(&report);
    assert!(text.contains("questions (--ask") && text.contains("allowed (session), by client"), "{text}");
    // What a person refused or allowed is not proposed back as a grant.
    let suggest = Command::new(interpose())
        .args(["report", "--suggest"])
        .arg(t.ws.parent().unwrap().join("trail.jsonl"))
        .output()
        .unwrap();
    let proposed = stdout(&suggest);
    assert!(suggest.status.success(), "{proposed}{}", stderr(&suggest));
    assert!(!proposed.contains(t.outside.to_str().unwrap()), "{proposed}");
    assert!(!socket.exists(), "the socket is removed at the end");
}

#[test]
fn carve_outs_credentials_and_metadata_are_never_asked() {
    let Some(t) = kernel_tree() else { return };
    let home = t.ws.parent().unwrap().join("home");
    std::fs::create_dir_all(home.join(".ssh")).unwrap();
    std::fs::write(home.join(".ssh/id_rsa"), "private-key-marker\n").unwrap();
    std::fs::write(t.outside.join("denied"), "carved-marker\n").unwrap();
    let socket = socket_in(&t);
    let deny = t.outside.join("denied");
    let child = spawn(
        &t,
        &socket,
        &["--rw", t.outside.to_str().unwrap(), "--deny", deny.to_str().unwrap()],
        &format!(
            "cat $OUT/denied; echo carve=$?; cat /etc/shadow; echo shadow=$?; cat {h}/.ssh/id_rsa; echo cred=$?; \
             stat {h} >/dev/null; echo stat=$?; \
             python3 -c 'import socket; socket.socket(socket.AF_UNIX).connect(\"{s}\")'; echo own=$?",
            h = home.display(),
            s = socket.display()
        ),
        &[],
    );
    let client = Client::start(&socket, t.ws.join("go"), Box::new(|_| Some((Duration::ZERO, "allow", "once"))));
    let (out, err) = finish(child);
    // The command cannot reach the approvals socket to answer itself.
    assert!(err.contains("PermissionError"), "{err}");
    for refused in ["carve=1", "shadow=1", "cred=1", "stat=1", "own=1"] {
        assert!(out.contains(refused), "{refused}: {out}\n{err}");
    }
    assert!(!out.contains("marker"), "{out}");
    assert!(client.of_type("request").is_empty(), "asked: {:?}", client.of_type("request"));
    assert!(records(&trail(&t), "question").is_empty());
}

#[test]
fn other_threads_keep_their_pace_while_a_question_waits() {
    let Some(t) = kernel_tree() else { return };
    let socket = socket_in(&t);
    std::fs::write(t.ws.join("mine"), "x").unwrap();
    for i in 0..20 {
        std::fs::write(t.outside.join(format!("f{i}")), format!("file-{i}\n")).unwrap();
    }
    // Twenty threads each open a file of their own outside the surface
    // (each held two seconds before its answer); the main thread opens a
    // workspace file in a loop, counting opens in the second before the
    // questions and in a second while they wait.
    let program = r#"
import os, threading, time
got = []
def held(i):
    with open(os.environ['OUT'] + '/f%d' % i) as f:
        got.append(f.read().strip())
def rate(seconds):
    n, end = 0, time.monotonic() + seconds
    while time.monotonic() < end:
        os.close(os.open('mine', os.O_RDONLY)); n += 1
    return n
before = rate(1.0)
ths = [threading.Thread(target=held, args=(i,)) for i in range(20)]
[th.start() for th in ths]
time.sleep(0.2)
during = rate(1.0)
done_early = any(not th.is_alive() for th in ths)
[th.join() for th in ths]
print('held', len(got), 'before', before, 'during', during, 'early', done_early, flush=True)
"#;
    let child = spawn(&t, &socket, &[], "exec /usr/bin/python3 -c \"$PROG\"", &[("PROG", program)]);
    let client = Client::start(&socket, t.ws.join("go"), Box::new(|_| Some((Duration::from_secs(2), "allow", "once"))));
    let (out, err) = finish(child);
    assert!(out.contains("held 20 "), "{out}\n{err}");
    let field = |name: &str| -> u64 {
        let at = out.split_whitespace().skip_while(|w| *w != name).nth(1);
        at.and_then(|v| v.parse().ok()).unwrap_or_else(|| panic!("no {name} in {out}\n{err}"))
    };
    let (before, during) = (field("before"), field("during"));
    assert!(out.contains("early False"), "the held open waited for the answer: {out}");
    // The same work, done by the same thread, in the second before and the
    // second during the question: holding a call must not stop the others
    // (a single-threaded supervisor waiting for the answer would stop them
    // at zero). Alone the two rates are equal; beside the rest of the suite
    // on two vCPUs a second of it has read half the other (9,325 against
    // 4,576), so the bound is a quarter: what it guards is progress, and a
    // rate is the bench's to measure.
    assert!(during * 4 >= before && during > 100, "before {before}, during {during}");
    eprintln!("opens per second before the question {before}, while it waited {during}");
    assert_eq!(client.of_type("request").len(), 20);
    let trail = trail(&t);
    let questions = records(&trail, "question");
    assert_eq!(questions.len(), 20);
    assert!(questions.iter().all(|q| q["wait_ms"].as_u64().unwrap() >= 1900), "{questions:?}");
}

#[test]
fn nobody_answering_or_no_client_means_deny() {
    let Some(t) = kernel_tree() else { return };
    let socket = socket_in(&t);
    // A client that is greeted but never answers: refused after the timeout.
    let child = spawn(&t, &socket, &["--ask-timeout", "1"], "cat $OUT/secret; echo rc=$?", &[]);
    let started = Instant::now();
    let client = Client::start(&socket, t.ws.join("go"), Box::new(|_| None));
    let (out, err) = finish(child);
    assert!(out.contains("rc=1") && !out.contains("marker"), "{out}\n{err}");
    assert!(started.elapsed() >= Duration::from_secs(1));
    assert_eq!(client.of_type("request").len(), 1);
    assert!(client.of_type("settled").iter().any(|s| s["by"] == "timeout" && s["decision"] == "deny"));
    let first = trail(&t);
    let q = records(&first, "question");
    assert!(q.len() == 1 && q[0]["by"] == "timeout", "{q:?}");
    let denial = records(&first, "decision").into_iter().find(|d| d["decision"] == "deny").cloned().unwrap();
    assert!(denial["rule"].as_str().unwrap().contains("in time"), "{denial}");

    // No client at all: refused at once, recorded, and the command goes on.
    let t = Tree::new();
    let socket = socket_in(&t);
    std::fs::write(t.ws.join("go"), "").unwrap();
    let child = spawn(&t, &socket, &[], "cat $OUT/secret; echo rc=$?; echo after", &[]);
    let (out, err) = finish(child);
    assert!(out.contains("rc=1") && out.contains("after"), "{out}\n{err}");
    let q = records(&trail(&t), "question").into_iter().next().cloned().expect("a question record");
    assert_eq!(q["by"], "no_client");
}

#[test]
fn identical_calls_and_a_signalled_caller_are_asked_once() {
    let Some(t) = kernel_tree() else { return };
    let socket = socket_in(&t);
    // Two threads of one process open the same file at once; the first is
    // sent a handled signal (SA_RESTART) while it waits.
    let program = r#"
import os, signal, threading, time
got = []
signal.signal(signal.SIGUSR1, lambda *a: got.append(1))
signal.siginterrupt(signal.SIGUSR1, False)
out = {}
def read(name):
    with open(os.environ['OUT'] + '/secret') as f:
        out[name] = f.read().strip()
a = threading.Thread(target=read, args=('a',)); b = threading.Thread(target=read, args=('b',))
a.start(); b.start()
time.sleep(0.3)
signal.pthread_kill(a.ident, signal.SIGUSR1)
os.kill(os.getpid(), signal.SIGUSR1)
a.join(); b.join()
print(sorted(out.items()), 'signals', len(got), flush=True)
"#;
    let child = spawn(&t, &socket, &[], "exec /usr/bin/python3 -c \"$PROG\"", &[("PROG", program)]);
    let client = Client::start(&socket, t.ws.join("go"), Box::new(|_| Some((Duration::from_secs(1), "allow", "once"))));
    let (out, err) = finish(child);
    assert!(out.contains("[('a', 'top-secret-marker'), ('b', 'top-secret-marker')]"), "{out}\n{err}");
    assert!(out.contains("signals 2"), "the handler ran: {out}");
    assert_eq!(client.of_type("request").len(), 1, "{:?}", client.of_type("request"));
    let trail = trail(&t);
    let q = records(&trail, "question");
    assert_eq!(q.len(), 1);
    assert_eq!(q[0]["calls"], 2, "{}", q[0]);
}

#[test]
fn bad_input_on_the_socket_is_an_error_and_never_an_allow() {
    let Some(t) = kernel_tree() else { return };
    let socket = socket_in(&t);
    let child = spawn(&t, &socket, &["--ask-timeout", "3"], "cat $OUT/secret; echo rc=$?", &[]);
    let mut client = Client::start(&socket, t.ws.join("go"), Box::new(|_| None));
    wait_until("the request", 20, || !client.of_type("request").is_empty());
    let id = client.of_type("request")[0]["id"].as_u64().unwrap();
    // A second client is turned away; the first keeps its place.
    let mut second = BufReader::new(UnixStream::connect(&socket).unwrap());
    let mut line = String::new();
    second.read_line(&mut line).unwrap();
    assert!(line.contains("another approvals client"), "{line}");
    client.send("this is not json");
    client.send(r#"{"type":"answer","id":999,"decision":"allow"}"#);
    client.send(&format!(r#"{{"type":"answer","id":{id},"decision":"allow","scope":"policy"}}"#));
    client.send(&format!(r#"{{"type":"answer","id":{id},"decision":"yes"}}"#));
    client.send(&format!(r#"{{"type":"answer","id":{id},"decision":"allow","extra":1}}"#));
    client.send(&format!(r#"{{"type":"answer","id":{id},"decision":"deny"}}"#));
    client.send(&format!(r#"{{"type":"answer","id":{id},"decision":"allow"}}"#));
    let (out, err) = finish(child);
    assert!(out.contains("rc=1") && !out.contains("marker"), "{out}\n{err}");
    let errors: Vec<String> =
        client.of_type("error").iter().map(|e| e["message"].as_str().unwrap().to_string()).collect();
    assert_eq!(errors.len(), 6, "{errors:?}");
    assert!(errors[1].contains("no request 999"), "{errors:?}");
    assert!(errors[2].contains("--ask-policy"), "{errors:?}");
    assert!(errors[5].contains("settled already"), "{errors:?}");
    let trail = trail(&t);
    let q = records(&trail, "question");
    assert!(q.len() == 1 && q[0]["decision"] == "deny" && q[0]["by"] == "client", "{q:?}");
}

#[test]
fn a_client_that_never_reads_does_not_stall_the_session() {
    let Some(t) = kernel_tree() else { return };
    let socket = socket_in(&t);
    std::fs::write(t.ws.join("go"), "").unwrap();
    // Connected before the command asks, and never reading a byte.
    let child = spawn(
        &t,
        &socket,
        &["--ask-timeout", "1"],
        "sleep 0.3; for i in 1 2 3; do cat $OUT/secret; done; echo done",
        &[],
    );
    let _mute = connect(&socket);
    let started = Instant::now();
    let (out, err) = finish(child);
    assert!(out.contains("done") && !out.contains("marker"), "{out}\n{err}");
    assert!(started.elapsed() < Duration::from_secs(20));
    assert!(records(&trail(&t), "question").iter().all(|q| q["decision"] == "deny" && q["by"] == "timeout"));
}

#[test]
fn a_policy_answer_writes_the_narrowest_rule_and_the_next_session_keeps_it() {
    let Some(t) = kernel_tree() else { return };
    let socket = socket_in(&t);
    let policy = t.ws.parent().unwrap().join("approvals").join("approved.toml");
    let child = spawn(&t, &socket, &["--ask-policy", policy.to_str().unwrap()], "cat $OUT/secret", &[]);
    let client = Client::start(&socket, t.ws.join("go"), Box::new(|_| Some((Duration::ZERO, "allow", "policy"))));
    let (out, err) = finish(child);
    assert!(out.contains("top-secret-marker"), "{out}\n{err}");
    assert!(client.of_type("hello")[0]["policy"] == true);
    let written = std::fs::read_to_string(&policy).unwrap();
    let secret = t.outside.join("secret");
    assert!(written.contains(&format!("additional_reads = [\"{}\"]", secret.display())), "{written}");
    // The rule is the file alone: its neighbour stays refused.
    std::fs::write(t.outside.join("neighbour"), "n").unwrap();
    let o = t
        .command(&["--policy", policy.to_str().unwrap()], &["/bin/sh", "-c", "cat $OUT/secret; cat $OUT/neighbour"])
        .output()
        .unwrap();
    assert!(stdout(&o).contains("top-secret-marker") && stderr(&o).contains("Permission denied"), "{}", stderr(&o));
}

#[test]
fn the_terminal_client_answers_with_keys() {
    let Some(t) = kernel_tree() else { return };
    let socket = socket_in(&t);
    std::fs::write(t.outside.join("other"), "other-marker\n").unwrap();
    let child = spawn(&t, &socket, &[], "cat $OUT/secret; cat $OUT/secret; cat $OUT/other; echo other=$?", &[]);
    // `s`: allow for the session; `n`: deny once. The client creates no
    // `go`: the test does once it is connected.
    wait_until("the socket", 30, || socket.exists());
    let mut keys = Command::new(interpose())
        .arg("approvals")
        .arg(&socket)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    keys.stdin.take().unwrap().write_all(b"s\nn\n").unwrap();
    std::thread::sleep(Duration::from_millis(300));
    std::fs::write(t.ws.join("go"), "").unwrap();
    let (out, err) = finish(child);
    assert_eq!(out.matches("top-secret-marker").count(), 2, "{out}\n{err}");
    assert!(out.contains("other=1"), "{out}");
    let shown = keys.wait_with_output().unwrap();
    let shown = stderr(&shown);
    assert!(shown.contains("allow for the session") && shown.contains("deny once"), "{shown}");
    assert!(shown.contains("the session ended"), "{shown}");
}

#[test]
fn ask_refuses_what_cannot_work() {
    let Some(t) = kernel_tree() else { return };
    let inside = t.ws.join("ask.sock");
    let socket = socket_in(&t);
    let policy_inside = t.ws.join("p.toml");
    let cases: [(&[&str], &str); 4] = [
        (&["--ask", inside.to_str().unwrap()], "the command could reach"),
        (&["--ask", socket.to_str().unwrap(), "--fast"], "--fast"),
        (&["--ask", socket.to_str().unwrap(), "--ask-timeout", "0"], "--ask-timeout 0"),
        (&["--ask", socket.to_str().unwrap(), "--ask-policy", policy_inside.to_str().unwrap()], "--ask-policy"),
    ];
    for (flags, says) in cases {
        let o = t.command(flags, &["/bin/true"]).output().unwrap();
        assert_eq!(o.status.code(), Some(125), "{flags:?}: {}", stderr(&o));
        assert!(stderr(&o).contains(says), "{flags:?}: {}", stderr(&o));
    }
    // Something that is not a socket is never replaced.
    std::fs::write(&socket, "keep").unwrap();
    let o = t.command(&["--ask", socket.to_str().unwrap()], &["/bin/true"]).output().unwrap();
    assert!(stderr(&o).contains("is not a socket"), "{}", stderr(&o));
    assert_eq!(std::fs::read_to_string(&socket).unwrap(), "keep");
}
