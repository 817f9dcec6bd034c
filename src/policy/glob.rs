//! Glob rules: write grants and carve-outs that name files by pattern
//! (`src/**`, `*.lock`, `~/.claude.json.*`), matched when a call is decided,
//! so that files created after start are covered too.
//!
//! Patterns are validated before anything runs (docs/design.md): a pattern
//! that points outside where it may point is an [`GlobError::Escape`]; one
//! that is not a pattern we accept is [`GlobError::Malformed`]. The two are
//! distinct so that callers (and people reading the error) can tell an
//! escape attempt from a typo.

use globset::{GlobBuilder, GlobMatcher};
use std::path::{Component, Path, PathBuf};

/// Why a pattern was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum GlobError {
    /// The pattern points outside the tree it is anchored to (absolute, `~`,
    /// or `..`).
    #[error("escape: {0}")]
    Escape(&'static str),
    /// The pattern is not one we accept.
    #[error("malformed pattern: {0}")]
    Malformed(&'static str),
}

/// Where a pattern is anchored.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Anchor {
    /// Relative to the workspace and confined to it: absolute paths, `~` and
    /// `..` are escapes.
    Workspace,
    /// Anywhere: absolute, `~/`-prefixed or workspace-relative, but never
    /// through `..`, and `~` only as the first component.
    Anywhere,
}

/// Whether `s` contains glob syntax.
pub fn is_glob(s: &str) -> bool {
    s.contains(['*', '?', '['])
}

/// Checks the shape of `pattern` (after template expansion).
pub fn validate(pattern: &str, anchor: Anchor) -> Result<(), GlobError> {
    if pattern.is_empty() {
        return Err(GlobError::Malformed("empty pattern"));
    }
    if pattern.contains(['{', '}']) {
        return Err(GlobError::Malformed("brace alternatives are not supported; write one entry per alternative"));
    }
    let tilde = pattern.starts_with('~');
    if tilde && !(pattern == "~" || pattern.starts_with("~/")) {
        return Err(GlobError::Escape("`~` is only allowed as `~/` at the start (no `~user`)"));
    }
    if anchor == Anchor::Workspace {
        if pattern.starts_with('/') {
            return Err(GlobError::Escape("absolute pattern outside the workspace; workspace patterns are relative"));
        }
        if tilde {
            return Err(GlobError::Escape("`~` points outside the workspace; workspace patterns are relative"));
        }
    }
    let components: Vec<&str> = pattern.split('/').collect();
    if components.contains(&"..") {
        return Err(GlobError::Escape("`..` leaves the tree the pattern is anchored to"));
    }
    let mut double = 0;
    for c in &components {
        if c.contains("**") {
            if *c != "**" {
                return Err(GlobError::Malformed("`**` must be a whole path component (`a/**/b`, not `a**`)"));
            }
            double += 1;
        }
    }
    if double > 1 {
        return Err(GlobError::Malformed("at most one `**` per pattern"));
    }
    let mut depth = 0i32;
    for ch in pattern.chars() {
        match ch {
            '[' => depth += 1,
            ']' if depth > 0 => depth -= 1,
            _ => {}
        }
        if depth > 1 {
            return Err(GlobError::Malformed("nested `[` in a character class"));
        }
    }
    if depth != 0 {
        return Err(GlobError::Malformed("unbalanced `[` in a character class"));
    }
    Ok(())
}

/// The literal directory a pattern starts with: every component before the
/// first one with glob syntax (`src/**` -> `src`, `~/.claude.json.*` -> `~`).
pub fn static_prefix(pattern: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    let components: Vec<Component<'_>> = pattern.components().collect();
    for (i, c) in components.iter().enumerate() {
        let literal = !is_glob(&c.as_os_str().to_string_lossy());
        // The last component is a name to match, never the base.
        if !literal || i + 1 == components.len() {
            break;
        }
        out.push(c);
    }
    out
}

/// Compiles an absolute, validated pattern: `*`, `?` and `[...]` stay within
/// one component; `**` spans any number of them.
pub fn compile(absolute: &Path) -> Result<GlobMatcher, GlobError> {
    let text = absolute.to_str().ok_or(GlobError::Malformed("pattern is not UTF-8"))?;
    GlobBuilder::new(text)
        .literal_separator(true)
        .backslash_escape(true)
        .build()
        .map(|g| g.compile_matcher())
        .map_err(|_| GlobError::Malformed("not a valid glob"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_and_malformed_patterns_are_told_apart() {
        use Anchor::*;
        for (p, a) in [("/etc/**", Workspace), ("~/x", Workspace), ("../x/**", Workspace), ("a/../../b", Anywhere)] {
            assert!(matches!(validate(p, a), Err(GlobError::Escape(_))), "{p}");
        }
        assert!(matches!(validate("~root/.ssh/*", Anywhere), Err(GlobError::Escape(_))));
        for p in ["", "src/{a,b}", "a/**/b/**", "a**", "**b/c", "[abc", "a/[[x]]"] {
            assert!(matches!(validate(p, Workspace), Err(GlobError::Malformed(_))), "{p:?}");
        }
        for p in ["src/**", "*.lock", "src/**/*.rs", ".git/hooks/**", "a/b[0-9].txt", "x~"] {
            assert_eq!(validate(p, Workspace), Ok(()), "{p}");
        }
        for p in ["~/.claude.json.*", "/tmp/*.sock", "~"] {
            assert_eq!(validate(p, Anywhere), Ok(()), "{p}");
        }
        // A wildcard component, then everything beneath it: a tool's
        // scratch directories (nyc's ~/.node-spawn-wrap-<pid>-<hex>).
        for p in ["~/.node-spawn-wrap-*/**", "*/x/**", "build-*/**/*.o"] {
            assert_eq!(validate(p, Anywhere), Ok(()), "{p}");
        }
    }

    #[test]
    fn a_wildcard_directory_then_everything_beneath_it() {
        let m = compile(Path::new("/root/.node-spawn-wrap-*/**")).unwrap();
        assert!(m.is_match("/root/.node-spawn-wrap-123-abcdef/node"));
        assert!(m.is_match("/root/.node-spawn-wrap-1-a/deep/er/file"));
        assert!(!m.is_match("/root/.node-spawn-wrapx/a"));
        assert!(!m.is_match("/root/.ssh/id_rsa"));
        assert_eq!(static_prefix(Path::new("/root/.node-spawn-wrap-*/**")), Path::new("/root"));
    }

    #[test]
    fn the_base_is_the_literal_directory_before_the_first_wildcard() {
        assert_eq!(static_prefix(Path::new("/w/src/**")), Path::new("/w/src"));
        assert_eq!(static_prefix(Path::new("/root/.claude.json.*")), Path::new("/root"));
        assert_eq!(static_prefix(Path::new("/w/a/*/b/c")), Path::new("/w/a"));
    }

    #[test]
    fn stars_stay_in_one_component() {
        let m = compile(Path::new("/root/.claude.json.*")).unwrap();
        assert!(m.is_match("/root/.claude.json.tmp.123.abc"));
        assert!(m.is_match("/root/.claude.json.lock"));
        assert!(!m.is_match("/root/.claude.json.bak/x"));
        assert!(!m.is_match("/root/.claude.json"));
        let m = compile(Path::new("/w/src/**")).unwrap();
        assert!(m.is_match("/w/src/a/b/c.rs"));
        assert!(!m.is_match("/w/srcx/a"));
        let m = compile(Path::new("/w/**/.env")).unwrap();
        assert!(m.is_match("/w/.env") && m.is_match("/w/a/b/.env"));
    }
}
