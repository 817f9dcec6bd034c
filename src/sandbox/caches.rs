//! Package caches private to the session.
//!
//! Installing dependencies is an agent's daily work, but a cache shared with
//! the host and writable from the sandbox is a way out: a poisoned
//! `~/.cargo/registry/src`, pip wheel or npm tarball is run by the user's
//! next build outside the sandbox. So the command writes to its own copy of
//! every cache (`caches` in a policy; the tooling profile lists cargo's,
//! npm's, pip's, uv's, yarn's and Go's), and the host's stays unchanged:
//!
//! - **overlay** (where the session has a mount namespace, see
//!   `namespace.rs`): an overlay on the cache directory, the host's copy as
//!   the lower layer and a directory of the session as the upper one. The command and the
//!   supervisor see the same merged tree, so what is already cached is
//!   used and what is downloaded lands in the session. Names the cache
//!   hides (`credentials.toml`) are whiteouts there: they do not exist.
//! - **moved** (no mount namespace, or a cache that does not exist yet):
//!   the cache's variable (`CARGO_HOME`, `npm_config_cache`, ...) points the
//!   tool at an empty directory of the session, seeded with the tool's own
//!   configuration files; the host's copy stays readable, never writable.
//!   One the host does not have is not made: the tool makes it when it
//!   first writes, as on a fresh machine, in a directory of the session
//!   granted for all such caches.
//! - **read-only**: a cache that can be neither (no variable names it).
//!
//! Everything made here is removed with the session directory.

use super::namespace::Namespace;
use crate::policy::{Cache, Surface};
use crate::sys::{fs, process, Errno};
use std::ffi::{CString, OsString};
use std::os::fd::AsFd;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

/// How one cache was kept private.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Kept {
    /// An overlay on the cache directory, its upper layer in the session.
    Overlay,
    /// Moved by an environment variable to a directory of the session.
    Moved {
        /// The variable.
        env: String,
        /// The private directory it points to.
        dir: PathBuf,
    },
    /// Readable, not writable: neither an overlay nor a variable could
    /// keep it private.
    ReadOnly(String),
}

impl std::fmt::Display for Kept {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Kept::Overlay => f.write_str("overlay (writes go to the session, the host's copy is unchanged)"),
            Kept::Moved { env, dir } => write!(f, "moved: ${env}={} (starts empty)", dir.display()),
            Kept::ReadOnly(why) => write!(f, "read-only ({why})"),
        }
    }
}

/// The session's caches: what became of each and the variables to set for
/// the command. Their overlays are never taken down: they live in the
/// session's own mount namespace, which ends with interpose, and a detach
/// would wait for an RCU grace period (10 ms to 200 ms of every session's
/// end on the test machine, docs/performance.md). The session directory
/// holding their upper layers is removed under them, which overlayfs
/// allows.
#[derive(Debug, Default)]
pub struct Caches {
    /// Each cache and how it was kept.
    pub kept: Vec<(PathBuf, Kept)>,
    /// Variables to set in the command's environment.
    pub env: Vec<(OsString, OsString)>,
}

/// Sets up every private cache of `surface` under `dir` (a directory of the
/// session, not in the command's surface), in the session's namespace `ns`,
/// changing `surface` where a cache had to be made read-only. `owner` is the
/// command's user under `--user`.
pub fn set_up(surface: &mut Surface, dir: &Path, ns: &Namespace, owner: Option<(u32, u32)>) -> Caches {
    let mut caches = Caches::default();
    // A cache that does not exist is moved only if its variable is not set
    // already: then the tool uses that other place (an existing cache of
    // the same tool, say `$CARGO_HOME` instead of `~/.cargo`).
    let all: Vec<Cache> = surface
        .caches()
        .filter(|c| c.rule.is_some() || c.env.as_ref().is_some_and(|e| std::env::var_os(e).is_none()))
        .cloned()
        .collect();
    if all.is_empty() {
        return caches;
    }
    // Each cache's directories sit directly in `dir` (`N` when moved,
    // `N-upper` and `N-work` for an overlay): every directory made here is
    // removed at the end, and on this kind of host a directory costs
    // ~0.1 ms to make and as much to remove, an overlay ~0.4 ms of
    // overlayfs's own probes of its upper layer (docs/performance.md).
    // This thread and one more take the caches one at a time, overlays
    // first (nothing else runs then), and the surface is changed after, in
    // order.
    // Caches the host does not have start empty: each tool makes its own
    // directory when it first writes, as on a fresh machine, inside one
    // directory of the session made here for all of them.
    let fresh = all.iter().any(|c| c.rule.is_none()).then(|| fresh_dir(dir, owner));
    let make = |n: usize| made(&all[n], dir, n, (ns, owner), fresh.as_ref());
    let mut order: Vec<usize> = (0..all.len()).collect();
    order.sort_by_key(|&n| all[n].rule.is_none());
    let mut made: Vec<Option<Made>> = (0..all.len()).map(|_| None).collect();
    for (n, m) in crate::parallel::on_two_threads(&order, || (), |&n, _, out| out.push((n, make(n)))) {
        made[n] = Some(m);
    }
    if let Some(Ok(fresh)) = &fresh {
        surface.add(crate::policy::Rule {
            path: fresh.clone(),
            mode: crate::policy::Mode::Rw,
            origin: crate::policy::Origin::SessionCache("every cache the host does not have".into()),
        });
    }
    for (cache, m) in all.iter().zip(made) {
        let kept = match m.expect("every cache was made") {
            Made::Overlay => {
                surface.set_overlaid(cache.path.clone());
                Kept::Overlay
            }
            Made::Moved(env, Ok(moved)) => {
                surface.share_read_only(cache);
                surface.grant_moved(cache, moved.clone());
                caches.env.push((env.clone().into(), moved.clone().into_os_string()));
                Kept::Moved { env, dir: moved }
            }
            Made::Moved(_, Err(e)) => {
                surface.share_read_only(cache);
                Kept::ReadOnly(format!("no private directory: {e}"))
            }
            Made::Neither(why) => {
                surface.share_read_only(cache);
                Kept::ReadOnly(match why {
                    Errno::EPERM => format!("no overlay: {ns}"),
                    e => format!("no overlay: {e}"),
                })
            }
        };
        tracing::debug!("cache {}: {kept}", cache.path.display());
        caches.kept.push((cache.path.clone(), kept));
    }
    caches
}

/// What was made on the file system for one cache.
enum Made {
    /// Its overlay is mounted.
    Overlay,
    /// Moved by this variable to a private directory (or why not).
    Moved(String, std::io::Result<PathBuf>),
    /// No overlay (why) and no variable to move it with.
    Neither(Errno),
}

/// Mounts the overlay of `cache`, the `n`-th, or makes the private directory
/// it is moved to (one the host does not have is named in `fresh`, the
/// tool makes it); changes nothing else.
fn made(
    cache: &Cache,
    dir: &Path,
    n: usize,
    (ns, owner): (&Namespace, Option<(u32, u32)>),
    fresh: Option<&std::io::Result<PathBuf>>,
) -> Made {
    let overlay = match cache.rule {
        Some(_) if ns.can_mount() => mount_overlay(cache, dir, n),
        Some(_) => Err(Errno::EPERM),
        None => Err(Errno::ENOENT),
    };
    match (overlay, &cache.env, fresh) {
        (Ok(()), _, _) => Made::Overlay,
        (Err(_), Some(env), Some(fresh)) if cache.rule.is_none() => Made::Moved(
            env.clone(),
            fresh.as_ref().map(|f| f.join(n.to_string())).map_err(|e| std::io::Error::new(e.kind(), e.to_string())),
        ),
        (Err(_), Some(env), _) => Made::Moved(env.clone(), move_to(cache, &dir.join(n.to_string()), owner)),
        (Err(why), None, _) => Made::Neither(why),
    }
}

/// The directory in `dir` that holds the caches the host does not have,
/// each made by its tool: nothing to seed them with, and a directory made
/// and removed here for each (five in the tooling profile) costs ~0.1 ms
/// apiece on this kind of host (docs/performance.md).
fn fresh_dir(dir: &Path, owner: Option<(u32, u32)>) -> std::io::Result<PathBuf> {
    use std::os::unix::fs::DirBuilderExt;
    let fresh = dir.join("fresh");
    std::fs::DirBuilder::new().mode(0o700).create(&fresh)?;
    if let Some((uid, gid)) = owner {
        std::os::unix::fs::chown(&fresh, Some(uid), Some(gid))?;
    }
    Ok(fresh)
}

fn c(p: &Path) -> CString {
    CString::new(p.as_os_str().as_bytes()).expect("paths from the file system have no NUL")
}

/// An overlay option value: `\`, `,` and `:` are escaped with `\`.
fn option_path(p: &Path) -> String {
    let mut out = String::new();
    for ch in p.to_string_lossy().chars() {
        if matches!(ch, '\\' | ',' | ':') {
            out.push('\\');
        }
        out.push(ch);
    }
    out
}

fn mkdir(path: &Path) -> Result<(), Errno> {
    process::mkdir_existing_ok(&c(path), 0o700)
}

/// Mounts the overlay for `cache`, the `n`-th, with its layers in `dir`.
fn mount_overlay(cache: &Cache, dir: &Path, n: usize) -> Result<(), Errno> {
    let (upper, work) = (dir.join(format!("{n}-upper")), dir.join(format!("{n}-work")));
    for d in [&upper, &work] {
        mkdir(d)?;
    }
    let upper_fd = fs::openat(fs::Dir::Cwd, &c(&upper), libc::O_PATH | libc::O_DIRECTORY, 0)?;
    for (name, _) in &cache.hide {
        let name = CString::new(name.as_bytes()).map_err(|_| Errno::EINVAL)?;
        fs::make_whiteout(upper_fd.as_fd(), &name)?;
    }
    // The upper layer's root takes the owner and mode of the host's copy, so
    // the merged directory looks exactly like it.
    if let Ok(md) = std::fs::metadata(&cache.path) {
        use std::os::unix::fs::{MetadataExt, PermissionsExt};
        let _ = std::os::unix::fs::chown(&upper, Some(md.uid()), Some(md.gid()));
        let _ = std::fs::set_permissions(&upper, std::fs::Permissions::from_mode(md.mode() & 0o7777));
    }
    let data = format!(
        "lowerdir={},upperdir={},workdir={}",
        option_path(&cache.path),
        option_path(&upper),
        option_path(&work)
    );
    let target = c(&cache.path);
    let data = CString::new(data).map_err(|_| Errno::EINVAL)?;
    process::mount(Some(c"interpose-cache"), &target, Some(c"overlay"), libc::MS_NOSUID | libc::MS_NODEV, Some(&data))
}

/// Makes the private directory a moved cache points to, seeded with the
/// tool's configuration files from the host's copy.
fn move_to(cache: &Cache, dir: &Path, owner: Option<(u32, u32)>) -> std::io::Result<PathBuf> {
    use std::os::unix::fs::DirBuilderExt;
    std::fs::DirBuilder::new().recursive(true).mode(0o700).create(dir)?;
    for name in &cache.seed {
        let from = cache.path.join(name);
        if from.symlink_metadata().is_ok_and(|m| m.is_file()) {
            std::fs::copy(&from, dir.join(name))?;
        }
    }
    if let Some((uid, gid)) = owner {
        for entry in std::fs::read_dir(dir)?.flatten() {
            std::os::unix::fs::chown(entry.path(), Some(uid), Some(gid))?;
        }
        std::os::unix::fs::chown(dir, Some(uid), Some(gid))?;
    }
    Ok(dir.to_path_buf())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn overlay_options_escape_separators() {
        assert_eq!(option_path(Path::new("/a,b:c\\d")), "/a\\,b\\:c\\\\d");
        assert_eq!(option_path(Path::new("/root/.npm")), "/root/.npm");
    }
}
