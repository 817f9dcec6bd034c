//! `run --journal DIR` and `interpose undo DIR`: sessions that change a
//! tree on the real file system, undone, and the tree compared with a
//! manifest taken before (kind, mode, content, symlink target, which names
//! are links of one file).

use crate::common::*;
use std::collections::BTreeMap;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

/// One name of a tree as a manifest describes it.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Entry {
    File { mode: u32, content: Vec<u8>, links: Vec<String> },
    Dir { mode: u32 },
    Symlink { target: PathBuf },
    Other { mode: u32 },
}

/// Every name under `root` (not following symlinks): kind, mode, content
/// or target, and the other names of the same file.
fn manifest(root: &Path) -> BTreeMap<String, Entry> {
    let mut out = BTreeMap::new();
    let mut inodes: BTreeMap<u64, Vec<String>> = BTreeMap::new();
    fn walk(root: &Path, dir: &Path, out: &mut BTreeMap<String, Entry>, inodes: &mut BTreeMap<u64, Vec<String>>) {
        let mut names: Vec<_> = std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().path()).collect();
        names.sort();
        for p in names {
            let rel = p.strip_prefix(root).unwrap().display().to_string();
            let m = std::fs::symlink_metadata(&p).unwrap();
            let mode = m.permissions().mode() & 0o7777;
            let entry = if m.file_type().is_symlink() {
                Entry::Symlink { target: std::fs::read_link(&p).unwrap() }
            } else if m.is_dir() {
                walk(root, &p, out, inodes);
                Entry::Dir { mode }
            } else if m.is_file() {
                inodes.entry(m.ino()).or_default().push(rel.clone());
                Entry::File { mode, content: std::fs::read(&p).unwrap(), links: vec![] }
            } else {
                Entry::Other { mode }
            };
            out.insert(rel, entry);
        }
    }
    walk(root, root, &mut out, &mut inodes);
    for names in inodes.values().filter(|n| n.len() > 1) {
        for n in names {
            if let Some(Entry::File { links, .. }) = out.get_mut(n) {
                *links = names.clone();
            }
        }
    }
    out
}

/// The names whose entries differ between two manifests, for a failure
/// message (contents are too long to print).
fn differences(a: &BTreeMap<String, Entry>, b: &BTreeMap<String, Entry>) -> Vec<String> {
    let names: std::collections::BTreeSet<&String> = a.keys().chain(b.keys()).collect();
    names
        .into_iter()
        .filter(|n| a.get(*n) != b.get(*n))
        .map(|n| {
            let show = |e: Option<&Entry>| match e {
                None => "absent".to_string(),
                Some(Entry::File { mode, content, links }) => {
                    format!("file {mode:o} {} bytes links {links:?}", content.len())
                }
                Some(e) => format!("{e:?}"),
            };
            format!("{n}: {} vs {}", show(a.get(n)), show(b.get(n)))
        })
        .collect()
}

/// A tree for a journalled session: the workspace, a journal directory
/// beside it, and a key of the test's own.
struct Journalled {
    t: Tree,
    state: PathBuf,
}

impl Journalled {
    fn new() -> Option<Journalled> {
        let t = kernel_tree()?;
        let state = t.outside.join("state");
        Some(Journalled { t, state })
    }

    fn journal(&self, name: &str) -> PathBuf {
        self.t.outside.join(name)
    }

    /// `interpose run --rw ws --journal J EXTRA -- sh -c SCRIPT`.
    fn session(&self, journal: &Path, extra: &[&str], script: &str) -> Output {
        let mut c =
            self.t.command(&[&["--journal", journal.to_str().unwrap()], extra].concat(), &["/bin/sh", "-c", script]);
        c.env("XDG_STATE_HOME", &self.state).output().unwrap()
    }

    /// `interpose undo EXTRA J`.
    fn undo(&self, journal: &Path, extra: &[&str]) -> Output {
        Command::new(interpose())
            .arg("undo")
            .args(extra)
            .arg(journal)
            .env("XDG_STATE_HOME", &self.state)
            .stdin(Stdio::null())
            .output()
            .unwrap()
    }

    /// Undoes `journal` and checks that it succeeded and that the tree's
    /// manifest is `before` again; returns what undo said.
    /// Takes the tree's manifest, then runs `script` in a session journalled
    /// into `journal` and checks that it succeeded; returns the journal and
    /// the manifest.
    fn session_ok(&self, script: &str) -> (PathBuf, BTreeMap<String, Entry>) {
        let before = manifest(&self.t.ws);
        let journal = self.journal("journal");
        let o = self.session(&journal, &[], script);
        assert_eq!(o.status.code(), Some(0), "{}{}", stdout(&o), stderr(&o));
        (journal, before)
    }

    fn undone_to(&self, journal: &Path, before: &BTreeMap<String, Entry>) -> Output {
        let o = self.undo(journal, &[]);
        assert_eq!(o.status.code(), Some(0), "{}{}", stdout(&o), stderr(&o));
        assert_eq!(differences(before, &manifest(&self.t.ws)), Vec::<String>::new());
        assert_eq!(*before, manifest(&self.t.ws));
        o
    }
}

/// An 8 MiB file whose every block differs.
fn big_content() -> Vec<u8> {
    (0..8u32 << 20).map(|i| (i.wrapping_mul(2654435761) >> 13) as u8).collect()
}

/// The workspace every scenario starts from.
fn populate(ws: &Path) {
    let w = |p: &str, s: &[u8]| {
        let p = ws.join(p);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, s).unwrap();
    };
    w("edit.txt", b"the first version\n");
    w("append.txt", b"one line\n");
    w("trunc.txt", b"a longer file to be cut short\n");
    w("big.bin", &big_content());
    w("gone.txt", b"deleted by the session\n");
    w("old-name.txt", b"renamed by the session\n");
    w("mode.txt", b"mode changed\n");
    w("keep/tree/deep/file.txt", b"in a subtree the session removes\n");
    w("keep/tree/other.txt", b"also there\n");
    w("target-a.txt", b"a\n");
    w("target-b.txt", b"b\n");
    w("hard1.txt", b"one file, two names\n");
    std::fs::hard_link(ws.join("hard1.txt"), ws.join("hard2.txt")).unwrap();
    std::os::unix::fs::symlink("target-a.txt", ws.join("link")).unwrap();
    std::fs::create_dir(ws.join("private")).unwrap();
    std::fs::set_permissions(ws.join("private"), std::fs::Permissions::from_mode(0o750)).unwrap();
    std::fs::set_permissions(ws.join("mode.txt"), std::fs::Permissions::from_mode(0o640)).unwrap();
}

/// What a session does to it: every kind of change the issue names.
const WRECK: &str = r#"set -e
cd "$WS"
printf 'rewritten\n' > edit.txt
echo 'a second line' >> append.txt
truncate -s 5 trunc.txt
head -c 8388608 /dev/zero | tr '\0' 'x' > big.bin
rm gone.txt
mv old-name.txt new-name.txt
echo made > created.txt
mkdir -p made/nested/dirs
echo deep > made/nested/dirs/file
chmod 600 mode.txt
chmod 700 private
ln -sfn target-b.txt link
rm -rf keep/tree
rm hard2.txt
echo 'changed through the other name' >> hard1.txt
"#;

#[test]
fn undo_puts_a_wrecked_tree_back_exactly() {
    let Some(j) = Journalled::new() else { return };
    populate(&j.t.ws);
    let before = manifest(&j.t.ws);
    let journal = j.journal("journal");
    let o = j.session(&journal, &[], WRECK);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(stderr(&o).contains("interpose undo"), "the session says how to undo: {}", stderr(&o));
    let after = manifest(&j.t.ws);
    // Each change happened.
    let changed = differences(&before, &after);
    for name in [
        "edit.txt",
        "append.txt",
        "trunc.txt",
        "big.bin",
        "gone.txt",
        "new-name.txt",
        "created.txt",
        "made",
        "mode.txt",
        "private",
        "link",
        "keep/tree",
        "hard2.txt",
        "hard1.txt",
    ] {
        assert!(changed.iter().any(|c| c.starts_with(&format!("{name}:"))), "{name} unchanged: {changed:#?}");
    }
    let o = j.undo(&journal, &[]);
    assert_eq!(o.status.code(), Some(0), "{}{}", stdout(&o), stderr(&o));
    assert!(stdout(&o).contains("moved") && stdout(&o).contains("put back"), "says what it did: {}", stdout(&o));
    let undone = manifest(&j.t.ws);
    assert_eq!(differences(&before, &undone), Vec::<String>::new());
    assert_eq!(before, undone);
    // The hard link is one file again, not two copies.
    let (a, b) = (j.t.ws.join("hard1.txt"), j.t.ws.join("hard2.txt"));
    assert_eq!(std::fs::metadata(a).unwrap().ino(), std::fs::metadata(b).unwrap().ino());
    // Undone once: a second undo refuses.
    let o = j.undo(&journal, &[]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(stderr(&o).contains("undone already"), "{}", stderr(&o));
}

#[test]
fn undo_stops_at_a_file_changed_after_the_session_and_names_it() {
    let Some(j) = Journalled::new() else { return };
    populate(&j.t.ws);
    let before = manifest(&j.t.ws);
    let journal = j.journal("journal");
    let o = j.session(&journal, &[], "echo by-the-agent >> \"$WS/edit.txt\"; echo new > \"$WS/created.txt\"");
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    // The user edits both files afterwards (a new mtime, another size).
    std::thread::sleep(std::time::Duration::from_millis(20));
    std::fs::write(j.t.ws.join("edit.txt"), "the user's own edit after the session\n").unwrap();
    std::fs::write(j.t.ws.join("created.txt"), "kept by the user\n").unwrap();
    let edited = manifest(&j.t.ws);
    let o = j.undo(&journal, &[]);
    assert_eq!(o.status.code(), Some(1), "{}", stdout(&o));
    let err = stderr(&o);
    assert!(err.contains("edit.txt") && err.contains("created.txt") && err.contains("--force"), "{err}");
    assert_eq!(manifest(&j.t.ws), edited, "nothing was done");
    // The check alone (--dry-run) says the same.
    assert_eq!(j.undo(&journal, &["--dry-run"]).status.code(), Some(1));
    let o = j.undo(&journal, &["--force"]);
    assert_eq!(o.status.code(), Some(0), "{}{}", stdout(&o), stderr(&o));
    assert!(stderr(&o).contains("overwritten (--force)"), "{}", stderr(&o));
    assert_eq!(manifest(&j.t.ws), before);
}

/// Rewrites the journal's lines with `edit` and re-chains them (a forger
/// who can write the directory but has no key).
fn rechain(journal: &Path, edit: impl Fn(Vec<String>) -> Vec<String>) {
    use sha2::Digest;
    let file = journal.join("journal.jsonl");
    let lines: Vec<String> = std::fs::read_to_string(&file).unwrap().lines().map(String::from).collect();
    let mut prev = "0".repeat(64);
    let mut out = String::new();
    for line in edit(lines) {
        let mut v: serde_json::Value = serde_json::from_str(&line).unwrap();
        v["prev"] = prev.clone().into();
        // `prev` first, as interpose writes it.
        let body = serde_json::to_string(&v).unwrap();
        let rest = body.replacen(&format!("\"prev\":\"{prev}\","), "", 1);
        let line = format!("{{\"prev\":\"{prev}\",{}", &rest[1..]);
        prev = sha2::Sha256::digest(line.as_bytes()).iter().map(|b| format!("{b:02x}")).collect();
        out.push_str(&line);
        out.push('\n');
    }
    std::fs::write(file, out).unwrap();
}

#[test]
fn undo_refuses_a_journal_edited_reordered_or_rechained() {
    let Some(j) = Journalled::new() else { return };
    populate(&j.t.ws);
    let journal = j.journal("journal");
    let o = j.session(&journal, &[], WRECK);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let file = journal.join("journal.jsonl");
    let good = std::fs::read_to_string(&file).unwrap();
    let wrecked = manifest(&j.t.ws);
    let refused = |why: &str| {
        let o = j.undo(&journal, &[]);
        assert_eq!(o.status.code(), Some(1), "{why}: {}", stdout(&o));
        assert!(stderr(&o).contains("refusing to undo"), "{why}: {}", stderr(&o));
        assert_eq!(manifest(&j.t.ws), wrecked, "{why}: nothing was done");
        // Not even with --force.
        assert_eq!(j.undo(&journal, &["--force"]).status.code(), Some(1), "{why}");
        assert_eq!(manifest(&j.t.ws), wrecked, "{why}: nothing was done");
    };
    // A path edited in place.
    std::fs::write(&file, good.replacen("gone.txt", "gone.txX", 1)).unwrap();
    refused("an edited line");
    // Two change lines swapped.
    let mut lines: Vec<&str> = good.lines().collect();
    lines.swap(2, 3);
    std::fs::write(&file, lines.join("\n") + "\n").unwrap();
    refused("reordered lines");
    // A line removed and the chain made whole again: the anchor fails.
    std::fs::write(&file, &good).unwrap();
    rechain(&journal, |mut l| {
        let i = l.iter().position(|l| l.contains("\"type\":\"remove\"")).unwrap();
        l.remove(i);
        l
    });
    refused("a re-chained journal");
    // The seal and anchor cut off.
    let cut: Vec<&str> = good.lines().filter(|l| !l.contains("\"type\":\"anchor\"")).collect();
    std::fs::write(&file, cut.join("\n") + "\n").unwrap();
    refused("no anchor");
    // As written, it is undone.
    std::fs::write(&file, &good).unwrap();
    assert_eq!(j.undo(&journal, &[]).status.code(), Some(0));
}

/// A tmpfs of `size` mounted on a new directory, unmounted when dropped.
struct Tmpfs(PathBuf);

impl Tmpfs {
    fn mount(at: PathBuf, size: &str) -> Option<Tmpfs> {
        std::fs::create_dir_all(&at).unwrap();
        let ok = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size},mode=0700"), "tmpfs"])
            .arg(&at)
            .status()
            .is_ok_and(|s| s.success());
        if !ok {
            cannot_run("mounting a tmpfs needs root");
            return None;
        }
        Some(Tmpfs(at))
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(&self.0).status();
    }
}

#[test]
fn a_full_disk_stops_the_session_loudly_and_what_was_journalled_is_undone() {
    let Some(j) = Journalled::new() else { return };
    populate(&j.t.ws);
    let before = manifest(&j.t.ws);
    // Room for the journal's reserve (4 MiB) and its lines, not for the
    // 8 MiB file's pre-image.
    let Some(disk) = Tmpfs::mount(j.t.outside.join("small"), "6m") else { return };
    let journal = disk.0.join("journal");
    let o = j.session(
        &journal,
        &[],
        "cd \"$WS\"; printf 'rewritten\\n' > edit.txt; rm gone.txt; echo made > created.txt; \
         head -c 100 /dev/zero > big.bin; echo status=$?; echo after > after.txt",
    );
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(125), "the session stops: {err}");
    assert!(err.contains("No space left on device") && err.contains("journal"), "{err}");
    // The file whose pre-image did not fit was not changed, and nothing
    // ran after it.
    assert_eq!(std::fs::read(j.t.ws.join("big.bin")).unwrap(), big_content());
    assert!(!j.t.ws.join("after.txt").exists());
    j.undone_to(&journal, &before);
}

#[test]
fn a_file_beyond_the_budget_is_recorded_as_not_restorable_and_undo_says_so() {
    let Some(j) = Journalled::new() else { return };
    populate(&j.t.ws);
    let before = manifest(&j.t.ws);
    let journal = j.journal("journal");
    let o = j.session(&journal, &["--journal-max", "1M"], WRECK);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(stderr(&o).contains("not restorable") && stderr(&o).contains("big.bin"), "{}", stderr(&o));
    let o = j.undo(&journal, &[]);
    assert_eq!(o.status.code(), Some(1), "not everything is back: {}", stdout(&o));
    assert!(stderr(&o).contains("big.bin") && stderr(&o).contains("budget"), "{}", stderr(&o));
    // Everything else is.
    let diff = differences(&before, &manifest(&j.t.ws));
    assert_eq!(diff.len(), 1, "{diff:#?}");
    assert!(diff[0].starts_with("big.bin:"), "{diff:#?}");
}

#[test]
fn two_sessions_are_undone_in_reverse_order() {
    let Some(j) = Journalled::new() else { return };
    populate(&j.t.ws);
    let start = manifest(&j.t.ws);
    let (first, second) = (j.journal("first"), j.journal("second"));
    let o = j.session(&first, &[], WRECK);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let between = manifest(&j.t.ws);
    let o = j.session(
        &second,
        &[],
        "cd \"$WS\"; echo again >> edit.txt; echo more >> made/nested/dirs/file; mv created.txt made/; \
         rm -rf made/nested; ln -sfn edit.txt link; chmod 644 mode.txt; echo third > hard1.txt",
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    // The first session's files changed since it ended: its undo stops.
    let o = j.undo(&first, &[]);
    assert_eq!(o.status.code(), Some(1), "{}", stdout(&o));
    assert!(stderr(&o).contains("after the session"), "{}", stderr(&o));
    let o = j.undo(&second, &[]);
    assert_eq!(o.status.code(), Some(0), "{}{}", stdout(&o), stderr(&o));
    assert_eq!(differences(&between, &manifest(&j.t.ws)), Vec::<String>::new());
    let o = j.undo(&first, &[]);
    assert_eq!(o.status.code(), Some(0), "{}{}", stdout(&o), stderr(&o));
    assert_eq!(differences(&start, &manifest(&j.t.ws)), Vec::<String>::new());
}

/// Threads that re-point a symlink and rename its targets away and back
/// while another opens it to truncate and write: whichever file each open
/// reached, undo puts every one back.
#[test]
fn a_racing_name_cannot_change_a_file_the_journal_did_not_keep() {
    let Some(j) = Journalled::new() else { return };
    let dir = j.t.ws.join("race");
    std::fs::create_dir(&dir).unwrap();
    const FILES: usize = 40;
    for i in 0..FILES {
        std::fs::write(dir.join(format!("f{i}")), format!("original content of f{i}\n")).unwrap();
    }
    std::os::unix::fs::symlink("f0", dir.join("p")).unwrap();
    let before = manifest(&j.t.ws);
    let bin = j.t.ro.join("race_journal");
    std::fs::copy(attack("race_journal"), &bin).unwrap();
    let journal = j.journal("journal");
    let mut c = j.t.command(
        &["--journal", journal.to_str().unwrap()],
        &[bin.to_str().unwrap(), dir.to_str().unwrap(), &FILES.to_string(), "3000"],
    );
    let o = c.env("XDG_STATE_HOME", &j.state).output().unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let out = stdout(&o);
    let field = |k: &str| -> usize {
        out.split_whitespace().find_map(|w| w.strip_prefix(k)).and_then(|n| n.parse().ok()).expect(k)
    };
    // The race ran: writes landed on many of the files.
    assert!(field("written=") > 100 && field("distinct=") > FILES / 2, "{out}");
    j.undone_to(&journal, &before);
}

#[test]
fn the_journal_is_refused_where_changes_are_left_to_the_kernel_and_is_out_of_the_commands_reach() {
    let Some(j) = Journalled::new() else { return };
    let journal = j.journal("journal");
    for mode in [&["--fast"][..], &["--learn", "--audit", "/dev/null"][..]] {
        let o = j.session(&journal, mode, "true");
        assert_eq!(o.status.code(), Some(125), "{mode:?}");
        assert!(stderr(&o).contains("--journal"), "{mode:?}: {}", stderr(&o));
    }
    // A journal inside the workspace is carved out of it.
    let inside = j.t.ws.join(".journal");
    let o = j.session(
        &inside,
        &[],
        "cat \"$WS/.journal/journal.jsonl\" && echo read; echo x > \"$WS/.journal/journal.jsonl\" && echo wrote; \
         rm -rf \"$WS/.journal\" && echo removed; echo done",
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let out = stdout(&o);
    assert!(!out.contains("read") && !out.contains("wrote") && !out.contains("removed"), "{out}");
    assert!(out.contains("done"));
    // A directory that holds something is never used.
    std::fs::create_dir_all(j.journal("used")).unwrap();
    std::fs::write(j.journal("used").join("x"), "x").unwrap();
    let o = j.session(&j.journal("used"), &[], "true");
    assert_eq!(o.status.code(), Some(125));
    assert!(stderr(&o).contains("not empty"), "{}", stderr(&o));
}

#[test]
fn the_trail_and_the_journal_name_each_other() {
    use sha2::Digest;
    let Some(j) = Journalled::new() else { return };
    populate(&j.t.ws);
    let journal = j.journal("journal");
    let trail = j.t.outside.join("trail.jsonl");
    let o = j.session(&journal, &["--audit", trail.to_str().unwrap()], "echo x >> \"$WS/edit.txt\" > /dev/null");
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let hash =
        |line: &str| -> String { sha2::Sha256::digest(line.as_bytes()).iter().map(|b| format!("{b:02x}")).collect() };
    let trail_text = std::fs::read_to_string(&trail).unwrap();
    let journal_text = std::fs::read_to_string(journal.join("journal.jsonl")).unwrap();
    let start: serde_json::Value = serde_json::from_str(journal_text.lines().next().unwrap()).unwrap();
    assert_eq!(start["trail"], hash(trail_text.lines().next().unwrap()), "the journal names the trail");
    let end: serde_json::Value =
        serde_json::from_str(trail_text.lines().find(|l| l.contains("\"type\":\"session_end\"")).unwrap()).unwrap();
    let seal = journal_text.lines().find(|l| l.contains("\"type\":\"seal\"")).unwrap();
    assert_eq!(end["journal"]["head"], hash(seal), "the trail names the journal's seal");
    assert_eq!(end["journal"]["dir"], journal.to_str().unwrap());
    let verify = Command::new(interpose())
        .args(["report", "--verify"])
        .arg(&trail)
        .env("XDG_STATE_HOME", &j.state)
        .output()
        .unwrap();
    assert_eq!(verify.status.code(), Some(0), "{}{}", stdout(&verify), stderr(&verify));
}

/// Whether `program` runs here; says why the test cannot run if not.
fn have(program: &str) -> bool {
    let ok = Command::new(program).arg("--version").stdout(Stdio::null()).stderr(Stdio::null()).status().is_ok();
    if !ok {
        cannot_run(&format!("{program} is not installed"));
    }
    ok
}

/// `git` run by the test itself (not sandboxed) in `dir`, with an author
/// and no automatic maintenance.
fn git(dir: &Path, args: &[&str]) -> Output {
    Command::new("git")
        .args(["-c", "user.name=t", "-c", "user.email=t@example.org", "-c", "init.defaultBranch=master"])
        .args(args)
        .current_dir(dir)
        .output()
        .unwrap()
}

/// The session a coding agent makes of a repository: an edit, a subtree
/// removed, a file moved, commits (each writes `.git/index.lock` and
/// renames it over `.git/index`), a branch made and left, a stash made and
/// popped, and `git gc` (objects packed, loose ones and their directories
/// removed, `packed-refs` renamed over). On ext4 the inode of nearly every
/// file removed is the next new file's: the lock files, objects and
/// directories git makes next take them.
const GIT_SESSION: &str = r#"set -e
cd "$WS/repo"
g() { git -c user.name=agent -c user.email=agent@example.org -c gc.auto=0 -c maintenance.auto=false "$@"; }
echo changed >> f1.txt
rm -rf sub
g mv f2.txt renamed.txt
g commit -qam wreck
g checkout -q -b x
echo on-x > x.txt
g add x.txt
g commit -qm x
g checkout -q master
echo dirty >> f5.txt
g stash -q
g gc -q
g stash pop -q
chmod 600 f3.txt
ln -sf f4.txt link
head -c 8388608 /dev/zero | tr '\0' 'x' > big
"#;

#[test]
fn a_git_session_is_undone_exactly_and_the_repository_is_whole() {
    let Some(j) = Journalled::new() else { return };
    if !have("git") {
        return;
    }
    let repo = j.t.ws.join("repo");
    std::fs::create_dir(&repo).unwrap();
    for i in 1..=30 {
        std::fs::write(repo.join(format!("f{i}.txt")), format!("line {i}\n")).unwrap();
    }
    std::fs::create_dir_all(repo.join("sub/deep")).unwrap();
    std::fs::write(repo.join("sub/deep/y"), "x\n").unwrap();
    std::os::unix::fs::symlink("f1.txt", repo.join("link")).unwrap();
    for args in [&["init", "-q"][..], &["add", "-A"], &["commit", "-qm", "init"]] {
        let o = git(&repo, args);
        assert!(o.status.success(), "git {args:?}: {}", stderr(&o));
    }
    let before = manifest(&j.t.ws);
    let journal = j.journal("journal");
    let o = j.session(&journal, &[], GIT_SESSION);
    assert_eq!(o.status.code(), Some(0), "{}{}", stdout(&o), stderr(&o));
    // It committed (on master, and on x).
    assert_eq!(stdout(&git(&repo, &["log", "--oneline", "--all"])).lines().count(), 3);
    j.undone_to(&journal, &before);
    // The repository is as healthy as it was: one commit, nothing to
    // commit, every object there.
    let log = git(&repo, &["log", "--oneline", "--all"]);
    assert_eq!(stdout(&log).lines().count(), 1, "{}{}", stdout(&log), stderr(&log));
    assert!(stdout(&log).ends_with(" init\n"), "{}", stdout(&log));
    let status = git(&repo, &["status", "--porcelain"]);
    assert!(status.status.success() && stdout(&status).is_empty(), "{}{}", stdout(&status), stderr(&status));
    let fsck = git(&repo, &["fsck", "--full", "--strict"]);
    assert!(fsck.status.success() && stderr(&fsck).is_empty(), "{}{}", stdout(&fsck), stderr(&fsck));
}

/// A unified diff that changes `lib/f1.txt` to `lib/f6.txt`, removes
/// `lib/old.txt` and adds `tests/unit/n1.txt` to `n3.txt`: in that order,
/// the inodes the rewritten files free are the new directories'.
fn change_diff() -> String {
    let mut d = String::new();
    for i in 1..=6 {
        d += &format!(
            "--- a/lib/f{i}.txt\n+++ b/lib/f{i}.txt\n@@ -1,2 +1,2 @@\n line one\n-line two {i}\n+line TWO {i}\n"
        );
    }
    d += "--- a/lib/old.txt\n+++ /dev/null\n@@ -1 +0,0 @@\n-gone\n";
    for i in 1..=3 {
        d += &format!("--- /dev/null\n+++ b/tests/unit/n{i}.txt\n@@ -0,0 +1 @@\n+new {i}\n");
    }
    d
}

/// Tools that rewrite a file by writing a new one beside it and renaming
/// it over the old (`patch`, `sed -i`, `perl -pi`), as editors and
/// formatters do: each rename takes the old file's last name, and the
/// next file or directory made takes its inode. A patch applied, reverted
/// (its new files removed, and the directories they emptied) and applied
/// again, then the files edited in place twice.
#[test]
fn files_rewritten_by_rename_over_are_put_back() {
    let Some(j) = Journalled::new() else { return };
    if !have("patch") || !have("perl") || !have("sed") {
        return;
    }
    std::fs::create_dir(j.t.ws.join("lib")).unwrap();
    for i in 1..=6 {
        std::fs::write(j.t.ws.join(format!("lib/f{i}.txt")), format!("line one\nline two {i}\n")).unwrap();
    }
    std::fs::write(j.t.ws.join("lib/old.txt"), "gone\n").unwrap();
    std::fs::set_permissions(j.t.ws.join("lib/f3.txt"), std::fs::Permissions::from_mode(0o600)).unwrap();
    std::fs::write(j.t.ro.join("change.diff"), change_diff()).unwrap();
    let (journal, before) = j.session_ok(
        r#"set -e
cd "$WS"
patch -s -p1 < "$RO/change.diff"
patch -s -p1 -R < "$RO/change.diff"
patch -s -p1 < "$RO/change.diff"
sed -i 's/one/ONE/' lib/*.txt tests/unit/*.txt
perl -pi -e 's/TWO/2/' lib/*.txt
"#,
    );
    assert_eq!(std::fs::read_to_string(j.t.ws.join("lib/f6.txt")).unwrap(), "line ONE\nline 2 6\n");
    assert!(!j.t.ws.join("lib/old.txt").exists() && j.t.ws.join("tests/unit/n3.txt").exists());
    j.undone_to(&journal, &before);
}

/// A file made, renamed over one that was there, then removed, with new
/// files and directories made and removed between: the file renamed over
/// comes back from the content kept when it lost its last name, not as a
/// link to whatever has its inode number since (on ext4, one of the new
/// objects).
#[test]
fn a_file_made_renamed_over_another_and_removed_in_one_session_is_undone() {
    let Some(j) = Journalled::new() else { return };
    std::fs::write(j.t.ws.join("victim.txt"), "the user's file\n").unwrap();
    std::fs::write(j.t.ws.join("other.txt"), "another\n").unwrap();
    let (journal, before) = j.session_ok(
        r#"set -e
cd "$WS"
echo made > made.txt
mv made.txt victim.txt
for i in $(seq 32); do
    echo $i > tmp$i; ln tmp$i obj$i; rm tmp$i
    mkdir d$i; rmdir d$i
done
rm victim.txt obj*
"#,
    );
    assert!(!j.t.ws.join("victim.txt").exists());
    // Whether the file system gave the victim's inode to a new object
    // (ext4 does): without that, only the plain case is tested.
    let text = std::fs::read_to_string(journal.join("journal.jsonl")).unwrap();
    let victim = text
        .lines()
        .find(|l| l.contains("\"type\":\"rename\""))
        .and_then(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .map(|v| v["victim"]["object"]["ino"].clone())
        .expect("the rename is journalled with its victim");
    let reused = text
        .lines()
        .filter(|l| l.contains("\"type\":\"create\""))
        .any(|l| serde_json::from_str::<serde_json::Value>(l).is_ok_and(|v| v["object"]["ino"] == victim));
    if !reused {
        eprintln!("note: the file system did not give the victim's inode number to a new object");
    }
    j.undone_to(&journal, &before);
}

/// Directories removed, then new ones made with files in them: on ext4 the
/// new directories take the removed objects' inode numbers. They are the
/// session's all the same, so nothing made inside them is journalled (undo
/// removes each whole), and nothing the session made is kept.
#[test]
fn objects_made_where_removed_ones_were_are_the_sessions() {
    let Some(j) = Journalled::new() else { return };
    for i in 1..=8 {
        std::fs::create_dir_all(j.t.ws.join(format!("old{i}/deep"))).unwrap();
        std::fs::write(j.t.ws.join(format!("old{i}/deep/f")), format!("{i}\n")).unwrap();
    }
    let (journal, before) = j.session_ok(
        r#"set -e
cd "$WS"
rm -rf old*
for i in $(seq 8); do mkdir new$i; echo made > new$i/file; echo again > new$i/file; done
"#,
    );
    let text = std::fs::read_to_string(journal.join("journal.jsonl")).unwrap();
    let inside: Vec<&str> = text
        .lines()
        .filter(|l| l.contains("\"type\":\"create\"") || l.contains("\"type\":\"keep\""))
        .filter(|l| l.contains("/new") && l.contains("/file\""))
        .collect();
    assert_eq!(inside, Vec::<&str>::new(), "journalled as if the user's");
    j.undone_to(&journal, &before);
}

/// A file whose other name is outside the journalled trees, removed from
/// them: its content was not kept (it lived on), and undo, which does not
/// look outside the trees, says that it put the name back empty.
#[test]
fn a_name_whose_file_lives_on_outside_the_trees_is_named_when_undone() {
    let Some(j) = Journalled::new() else { return };
    std::fs::write(j.t.outside.join("store"), "in a store elsewhere\n").unwrap();
    std::fs::hard_link(j.t.outside.join("store"), j.t.ws.join("linked")).unwrap();
    let journal = j.journal("journal");
    let o = j.session(&journal, &[], "rm \"$WS/linked\"");
    assert_eq!(o.status.code(), Some(0), "{}{}", stdout(&o), stderr(&o));
    let o = j.undo(&journal, &[]);
    assert_eq!(o.status.code(), Some(1), "{}{}", stdout(&o), stderr(&o));
    assert!(stderr(&o).contains("linked: put back empty"), "{}", stderr(&o));
    assert!(j.t.ws.join("linked").exists());
}
