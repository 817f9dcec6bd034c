//! Real projects' own test suites, as a developer's agent runs them: the
//! source as the registry ships it (a PyPI sdist, an `npm pack` tarball,
//! crates from `cargo vendor`, an autoconf project), its dependencies
//! installed from the registries inside the run, then its tests. Each runs
//! natively and under the example policy with `--audit` in a home with
//! planted credentials, and must print the same pass and fail counts, write
//! the same files (nothing silently dropped), leak no credential, and keep
//! its trail small. The row's `suite` columns time the test suite alone
//! (installs take the registry's time).
//!
//! Sources are fetched once, natively, into
//! `/var/tmp/interpose-workloads/sources` (`cargo xtask projects` runs these
//! alone).

use super::Workload;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

/// Where fetched sources are kept between runs.
fn sources() -> PathBuf {
    let dir = Path::new("/var/tmp/interpose-workloads/sources");
    std::fs::create_dir_all(dir).unwrap();
    dir.to_path_buf()
}

/// Runs `script` natively in `dir` (fetching a source).
fn fetch(dir: &Path, script: &str) {
    let o = Command::new("/bin/sh").args(["-c", script]).current_dir(dir).output().unwrap();
    assert!(o.status.success(), "fetching `{script}` failed: {}", String::from_utf8_lossy(&o.stderr));
}

/// A PyPI sdist, checked against the digest the simple index lists.
fn sdist(name: &str, version: &str) -> PathBuf {
    let file = sources().join(format!("{name}-{version}.tar.gz"));
    if !file.exists() {
        let script = format!(
            r#"python3 - <<'EOF'
import hashlib, json, os, urllib.request
index = urllib.request.Request("https://pypi.org/simple/{name}/", headers={{"Accept": "application/vnd.pypi.simple.v1+json"}})
files = json.load(urllib.request.urlopen(index, timeout=60))["files"]
[url] = [f for f in files if f["filename"] == "{name}-{version}.tar.gz"]
data = urllib.request.urlopen(url["url"], timeout=120).read()
assert hashlib.sha256(data).hexdigest() == url["hashes"]["sha256"], "digest"
with open("{tmp}", "wb") as f:
    f.write(data)
os.rename("{tmp}", "{file}")
EOF"#,
            tmp = file.with_extension("part").display(),
            file = file.display()
        );
        fetch(&sources(), &script);
    }
    file
}

/// An npm package as `npm pack` makes it.
fn npm_pack(spec: &str, file: &str) -> PathBuf {
    let path = sources().join(file);
    if !path.exists() {
        fetch(&sources(), &format!("npm pack -q {spec} > /dev/null"));
    }
    path
}

/// Crates as `cargo vendor` unpacks them.
fn vendored(crates: &[(&str, &str)]) -> PathBuf {
    let dir = sources().join("vendor");
    if crates.iter().any(|(c, _)| !dir.join(c).exists()) {
        let project = sources().join("vendor-project");
        let deps: String = crates.iter().map(|(c, v)| format!("{c} = \"={v}\"\n")).collect();
        std::fs::create_dir_all(project.join("src")).unwrap();
        std::fs::write(
            project.join("Cargo.toml"),
            format!("[package]\nname = \"vendor-project\"\nversion = \"0.0.0\"\nedition = \"2021\"\n\n[dependencies]\n{deps}"),
        )
        .unwrap();
        std::fs::write(project.join("src/lib.rs"), "").unwrap();
        fetch(&project, &format!("cargo vendor -q {} > /dev/null", dir.display()));
    }
    dir
}

/// Times the test suite between the two markers: the script's last line
/// on stderr says how long it took.
const TIME_SUITE: &str = "t0=$(date +%s%N)";
const SUITE_TOOK: &str = "echo \"suite-ms $(( ($(date +%s%N) - t0) / 1000000 ))\" >&2";

/// Paths whose names differ between two runs of the same thing: caches of
/// compiled bytecode and build products named by hashes of the absolute
/// path, coverage data named by a random id, pip's and npm's records of
/// where they ran.
fn volatile(path: &str) -> bool {
    ["/target/", "/.nyc_output/", "/autom4te.cache/", "/.hypothesis/"].iter().any(|d| path.contains(d))
        || path.ends_with("/.package-lock.json")
        || path.contains("/__pycache__/")
}

/// A project's workload; its trail may be at most `trail_mib` MiB (about
/// half again what it measured: an install's every file is an object of
/// its own, each recorded once, repeats counted).
fn project(name: &str, trail_mib: u64, script: String) -> Workload {
    let mut w = super::list::workload(name, move |_| script.clone());
    w.network = true;
    w.timeout = Duration::from_secs(900);
    w.files = Some(volatile);
    w.trail_budget = Some(trail_mib << 20);
    w
}

/// The projects.
pub fn all() -> Vec<Workload> {
    let mut packaging = project(
        "project-pypi-packaging",
        14,
        format!(
            "tar xzf packaging-24.2.tar.gz && cd packaging-24.2 && python3 -m venv .venv \
             && .venv/bin/pip install -q . pytest pretend && {TIME_SUITE} \
             && .venv/bin/python -m pytest -q -p no:cacheprovider tests | tail -1 | sed 's/ in [0-9.]*s.*//'; {SUITE_TOOK}"
        ),
    );
    packaging.setup = Box::new(|env| copy(&sdist("packaging", "24.2"), &env.ws));
    packaging.unchanged = vec![".cache/pip"];
    let mut attrs = project(
        "project-pypi-attrs",
        22,
        format!(
            "tar xzf attrs-24.2.0.tar.gz && cd attrs-24.2.0 && python3 -m venv .venv \
             && .venv/bin/pip install -q . pytest hypothesis cloudpickle pympler && {TIME_SUITE} \
             && .venv/bin/python -m pytest -q -p no:cacheprovider --hypothesis-seed=0 tests \
                | tail -1 | sed 's/ in [0-9.]*s.*//'; {SUITE_TOOK}"
        ),
    );
    attrs.setup = Box::new(|env| copy(&sdist("attrs", "24.2.0"), &env.ws));
    attrs.unchanged = vec![".cache/pip"];
    // Its 532 dev dependencies include a test key (node-gyp's
    // test/fixtures/server.key). The tests run under tape, as `npm run
    // tests-only` runs them but without nyc 10's coverage: that execs a
    // program it writes to `~/.node-spawn-wrap-PID-HEX` at run time, which
    // the Landlock backstop cannot let run (refused, and said so;
    // docs/policy.md). nyc 15 preloads instead and needs no such program.
    let mut minimist = project(
        "project-npm-minimist",
        32,
        format!(
            "tar xzf minimist-1.2.8.tgz && cd package && npm install -q > /dev/null 2>&1 \
             && ls node_modules/node-gyp/test/fixtures/server.key && {TIME_SUITE} \
             && ./node_modules/.bin/tape 'test/**/*.js' 2>&1 | grep -E '^# (tests|pass|fail)'; {SUITE_TOOK}"
        ),
    );
    minimist.setup = Box::new(|env| copy(&npm_pack("minimist@1.2.8", "minimist-1.2.8.tgz"), &env.ws));
    minimist.unchanged = vec![".npm"];
    let mut crates = project(
        "project-crates-semver-itoa",
        5,
        format!(
            "export CARGO_TARGET_DIR=$PWD/target && {TIME_SUITE} \
             && for c in semver itoa; do (cd $c && rm -f .cargo-checksum.json && cargo test -q 2>&1 \
                | grep '^test result' | sed 's/; finished in.*//'); done; {SUITE_TOOK}"
        ),
    );
    crates.setup = Box::new(|env| {
        let vendor = vendored(&[("semver", "1.0.23"), ("itoa", "1.0.11")]);
        for c in ["semver", "itoa"] {
            copy(&vendor.join(c), &env.ws);
        }
    });
    crates.unchanged = vec![".cargo"];
    let mut autoconf = project(
        "project-autoconf",
        4,
        format!(
            "{TIME_SUITE} && autoreconf -fi 2> /dev/null && ./configure -q && make -s \
             && make -s check && make -s install DESTDIR=$PWD/stage && find stage -type f; {SUITE_TOOK}"
        ),
    );
    autoconf.network = false;
    autoconf.setup = Box::new(|env| {
        let tree = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/workloads/autoconf");
        for entry in std::fs::read_dir(tree).unwrap() {
            copy(&entry.unwrap().path(), &env.ws);
        }
    });
    vec![packaging, attrs, minimist, crates, autoconf]
}

/// `cp -r FROM DIR/`.
fn copy(from: &Path, dir: &Path) {
    let status = Command::new("cp").arg("-r").arg(from).arg(dir).status().unwrap();
    assert!(status.success(), "cp -r {} {}", from.display(), dir.display());
}
