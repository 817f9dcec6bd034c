//! The surface a session enforces, assembled in one order for every entry
//! point (`run`, the policy verbs, the hooks, the library): the policy file
//! (or the defaults: the system surface and the tooling profile), less what
//! is left out, then every `--ro`, `--rw` and `--deny`; the user's own
//! grants win over the built-in entries beneath them.

use std::path::PathBuf;

/// What a surface is made of, as given (flags or a library caller).
#[derive(Debug, Clone, Default)]
pub struct SurfaceSpec {
    /// A policy file; without one, the defaults.
    pub policy: Option<PathBuf>,
    /// Read-write trees.
    pub rw: Vec<PathBuf>,
    /// Read-only trees.
    pub ro: Vec<PathBuf>,
    /// Carve-outs.
    pub deny: Vec<PathBuf>,
    /// Leave out the built-in system surface.
    pub no_system: bool,
    /// Leave out the built-in tooling profile.
    pub no_tooling: bool,
}

/// A path flag that names nothing usable.
#[derive(Debug, thiserror::Error)]
#[error("{flag} {path}: {source}")]
pub struct BadPathFlag {
    /// The flag (`--rw`, `--ro`).
    pub flag: &'static str,
    /// Its value.
    pub path: String,
    /// Why it cannot be used.
    pub source: std::io::Error,
}

/// The surface cannot be built.
#[derive(Debug, thiserror::Error)]
pub enum SurfaceError {
    /// A path flag names nothing usable.
    #[error(transparent)]
    Flag(#[from] BadPathFlag),
    /// The policy file is invalid.
    #[error(transparent)]
    Policy(#[from] crate::policy::file::PolicyError),
    /// The current directory is gone.
    #[error("the current directory: {0}")]
    Cwd(std::io::Error),
}

/// A policy (the file given, or the defaults of the flags) and what it
/// resolved to on this host.
pub type LoadedPolicy = (crate::policy::file::Policy, crate::policy::file::Resolution);

/// The environment as UTF-8 pairs, for template expansion.
pub fn env_vars() -> std::collections::HashMap<String, String> {
    std::env::vars_os().filter_map(|(k, v)| Some((k.into_string().ok()?, v.into_string().ok()?))).collect()
}

impl SurfaceSpec {
    /// The surface this describes, changing nothing on the host.
    pub fn build(&self) -> Result<crate::policy::Surface, SurfaceError> {
        self.build_with_policy(crate::policy::file::Effects::None).map(|(s, _)| s)
    }

    /// The surface this describes: the policy file (or, without one,
    /// the defaults: the system surface and the tooling profile), less what
    /// `--no-system` and `--no-tooling` leave out, then every `--ro`, `--rw`
    /// and `--deny`; the user's own grants win over the built-in entries
    /// beneath them. With [`Effects::Create`](crate::policy::file::Effects)
    /// the directories `run` needs are made.
    pub fn build_with_policy(
        &self,
        effects: crate::policy::file::Effects,
    ) -> Result<(crate::policy::Surface, LoadedPolicy), SurfaceError> {
        use crate::policy::file::Policy;
        use crate::policy::{Mode, Origin};
        let mut policy = match &self.policy {
            Some(file) => Policy::load_or_profile(file)?,
            None => Policy::defaults(),
        };
        if self.no_system {
            policy.without_system();
        }
        if self.no_tooling {
            policy.without_tooling();
        }
        let cwd = std::env::current_dir().map_err(SurfaceError::Cwd)?;
        let (mut surface, resolved) = policy.surface(&env_vars(), &cwd, effects)?;
        for (flag, paths, mode) in
            [("--ro", &self.ro, Mode::Ro), ("--rw", &self.rw, Mode::Rw), ("--deny", &self.deny, Mode::Deny)]
        {
            for p in paths {
                let origin = Origin::Flag(format!("{flag} {}", p.display()));
                let added = match mode {
                    // A carve-out holds whether or not the path exists yet
                    // (`--deny .env` before the file is made).
                    Mode::Deny => crate::policy::canonical_lenient(p)
                        .map(|path| surface.add(crate::policy::Rule { path, mode, origin })),
                    _ => surface.add_path(p, mode, origin),
                };
                added.map_err(|source| BadPathFlag { flag, path: p.display().to_string(), source })?;
            }
        }
        surface.prefer_user_grants();
        // Carve-out patterns name what exists now: the kernel holds those
        // (crate::policy::settle); what the session makes later is its own.
        // Each tree's walk is kept for the next session where the listings
        // of /etc are (carved out of every session); written back only by
        // a session that runs.
        let kept_dir = crate::policy::listings::kept_dir();
        let kept = kept_dir.as_deref().map(|dir| crate::policy::settle::KeptWalks {
            dir,
            remember: effects == crate::policy::file::Effects::Create,
        });
        let now = crate::policy::listings::now();
        let started = std::time::Instant::now();
        let settled = surface.settle_patterns_kept(kept, now);
        tracing::debug!("carve-out patterns settled in {} us: {settled:?}", started.elapsed().as_micros());
        Ok((surface, (policy, resolved)))
    }
}
