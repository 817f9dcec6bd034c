//! Thin wrappers over the kernel interfaces interpose needs.
//!
//! # Safety
//!
//! This is the only module tree allowed to use `unsafe`. Each submodule wraps
//! one kernel interface; every `unsafe` block names the kernel contract it
//! relies on in a `// SAFETY:` comment. Wrappers return `Result<_, Errno>` and
//! turn raw descriptors into `OwnedFd` as soon as the kernel hands them out.
#![allow(unsafe_code)]

pub mod fs;
pub mod keeper;
pub mod landlock;
pub mod mem;
pub mod process;
pub mod procfs;
pub mod ptrace;
pub mod reactor;
pub mod seccomp;
pub mod socket;

pub use nix::errno::Errno;

/// Converts a raw `-1`/`errno` return into a `Result`.
pub(crate) fn cvt(ret: libc::c_long) -> Result<libc::c_long, Errno> {
    if ret < 0 {
        Err(Errno::last())
    } else {
        Ok(ret)
    }
}
