//! The trail's anchor key: 32 random bytes in a file only interpose reads
//! (mode 0600, carved out of every surface and masked in the command's
//! mount namespace), from which each session's own key is derived to sign
//! the last hash of its trail. The chain alone shows that no line was edited or
//! removed after the fact, but a program that can write the trail can also
//! write a whole new, self-consistent chain; it cannot make the anchor.

use super::chain::hex;
use super::schema::Anchor;
use hmac::{KeyInit, Mac};
use std::path::{Path, PathBuf};

type HmacSha256 = hmac::Hmac<sha2::Sha256>;

/// A loaded key.
#[derive(Clone)]
pub struct TrailKey {
    key: Vec<u8>,
    /// The first 16 hex digits of the key's SHA-256.
    pub id: String,
    /// Where it was read from.
    pub path: PathBuf,
}

/// Where the key lives unless `--audit-key` says otherwise:
/// `$XDG_STATE_HOME/interpose/audit.key`, else
/// `~/.local/state/interpose/audit.key`.
pub fn default_path() -> Option<PathBuf> {
    Some(state_dir()?.join("audit.key"))
}

/// interpose's state directory: `$XDG_STATE_HOME/interpose` (absolute
/// only), else `~/.local/state/interpose`.
pub fn state_dir() -> Option<PathBuf> {
    let state = std::env::var_os("XDG_STATE_HOME")
        .map(PathBuf::from)
        .filter(|p| p.is_absolute())
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".local/state")))?;
    Some(state.join("interpose"))
}

impl TrailKey {
    /// Reads the key at `path`.
    pub fn load(path: &Path) -> std::io::Result<TrailKey> {
        use std::io::Read;
        use std::os::unix::fs::OpenOptionsExt;
        let mut f = std::fs::OpenOptions::new().read(true).custom_flags(libc::O_NOFOLLOW).open(path)?;
        let mut key = Vec::new();
        f.by_ref().take(4097).read_to_end(&mut key)?;
        if !(32..=4096).contains(&key.len()) {
            return Err(std::io::Error::other("not an interpose trail key (32 to 4096 bytes)"));
        }
        use sha2::Digest;
        let id = hex(&sha2::Sha256::digest(&key)[..8]);
        Ok(TrailKey { key, id, path: path.to_path_buf() })
    }

    /// Reads the key at `path`, first making one (32 random bytes, mode
    /// 0600, its directory 0700) if there is none.
    pub fn load_or_create(path: &Path) -> std::io::Result<TrailKey> {
        use std::io::{Read, Write};
        use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
        if let Some(dir) = path.parent() {
            std::fs::DirBuilder::new().recursive(true).mode(0o700).create(dir)?;
        }
        if std::fs::symlink_metadata(path).is_err() {
            // Written whole under another name, then linked into place: a
            // second interpose starting at the same time reads either no
            // key or a whole one, and one of the two keys wins.
            let mut key = [0u8; 32];
            std::fs::File::open("/dev/urandom")?.read_exact(&mut key)?;
            let tmp = path.with_extension(format!("new.{}.{}", std::process::id(), super::now_ns()));
            let mut f = std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .mode(0o600)
                .custom_flags(libc::O_NOFOLLOW)
                .open(&tmp)?;
            let linked = f.write_all(&key).and_then(|()| f.sync_all()).and_then(|()| std::fs::hard_link(&tmp, path));
            let _ = std::fs::remove_file(&tmp);
            match linked {
                Err(e) if e.kind() != std::io::ErrorKind::AlreadyExists => return Err(e),
                _ => {}
            }
        }
        TrailKey::load(path)
    }

    /// The key of one session, whose `session_start` line hashes to
    /// `session`: HMAC-SHA-256(key, "interpose session key\0" + session).
    /// A trail is anchored with its session's key, never the key itself, so
    /// the key that signs one trail signs no other.
    fn session_mac(&self, session: &str) -> HmacSha256 {
        let mut derive = <HmacSha256 as KeyInit>::new_from_slice(&self.key).expect("HMAC takes a key of any length");
        derive.update(b"interpose session key\0");
        derive.update(session.as_bytes());
        let key = derive.finalize().into_bytes();
        <HmacSha256 as KeyInit>::new_from_slice(&key).expect("HMAC takes a key of any length")
    }

    /// The anchor for the trail of the session whose first line hashes to
    /// `session` and whose last line hashes to `prev`.
    pub fn anchor(&self, session: &str, prev: &str) -> Anchor {
        let mut mac = self.session_mac(session);
        mac.update(prev.as_bytes());
        Anchor { key_id: self.id.clone(), mac: hex(&mac.finalize().into_bytes()) }
    }

    /// Whether `anchor` was made with this key for the trail of the session
    /// whose first line hashes to `session` and whose last line before the
    /// anchor hashes to `prev` (compared in constant time).
    pub fn verifies(&self, anchor: &Anchor, session: &str, prev: &str) -> bool {
        let Some(tag) = unhex(&anchor.mac) else { return false };
        let mut mac = self.session_mac(session);
        mac.update(prev.as_bytes());
        mac.verify_slice(&tag).is_ok()
    }
}

fn unhex(s: &str) -> Option<Vec<u8>> {
    if s.len() % 2 != 0 {
        return None;
    }
    (0..s.len()).step_by(2).map(|i| u8::from_str_radix(s.get(i..i + 2)?, 16).ok()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_key_is_made_once_and_its_anchors_verify_only_with_it() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("state/interpose/audit.key");
        let key = TrailKey::load_or_create(&path).unwrap();
        use std::os::unix::fs::PermissionsExt;
        assert_eq!(std::fs::metadata(&path).unwrap().permissions().mode() & 0o777, 0o600);
        let again = TrailKey::load_or_create(&path).unwrap();
        assert_eq!(key.id, again.id, "an existing key is kept");
        let anchor = key.anchor("s1", "abc");
        assert!(again.verifies(&anchor, "s1", "abc"));
        assert!(!again.verifies(&anchor, "s1", "abd"), "another chain");
        assert!(!again.verifies(&anchor, "s2", "abc"), "another session's key");
        let other = TrailKey::load_or_create(&dir.path().join("other.key")).unwrap();
        assert!(!other.verifies(&anchor, "s1", "abc"), "another key");
        let mut forged = anchor.clone();
        forged.mac.replace_range(0..1, if forged.mac.starts_with('0') { "1" } else { "0" });
        assert!(!key.verifies(&forged, "s1", "abc"));
        std::fs::write(dir.path().join("short.key"), b"x").unwrap();
        assert!(TrailKey::load(&dir.path().join("short.key")).is_err());
    }
}
