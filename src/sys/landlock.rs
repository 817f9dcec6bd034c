//! # Safety
//!
//! The Landlock calls interpose makes itself: the ABI probe, and in the
//! child after `fork`, where the `landlock` crate's allocation-using API is
//! out of place, `landlock_add_rule(2)` for the procfs the child mounts and
//! `landlock_restrict_self(2)`. Rulesets are built with the crate in the
//! parent.
//!
//! Man page: <https://man7.org/linux/man-pages/man7/landlock.7.html>

use super::{cvt, Errno};
use std::os::fd::{AsRawFd, BorrowedFd};

const CREATE_RULESET_VERSION: libc::c_uint = 1;

/// `landlock_create_ruleset(NULL, 0, LANDLOCK_CREATE_RULESET_VERSION)`: the
/// highest Landlock ABI this kernel offers, or the errno that says why none.
pub fn abi_version() -> Result<i32, Errno> {
    // SAFETY: with the VERSION flag the kernel reads no attribute structure.
    let v = cvt(unsafe {
        libc::syscall(libc::SYS_landlock_create_ruleset, std::ptr::null::<u8>(), 0usize, CREATE_RULESET_VERSION)
    })?;
    Ok(v as i32)
}

/// `landlock_restrict_self(ruleset, 0)`. Async-signal-safe.
pub fn restrict_self(ruleset: BorrowedFd<'_>) -> Result<(), Errno> {
    // SAFETY: the syscall only takes an fd and flags.
    cvt(unsafe { libc::syscall(libc::SYS_landlock_restrict_self, ruleset.as_raw_fd(), 0u32) }).map(drop)
}

const RULE_PATH_BENEATH: libc::c_uint = 1;

/// `struct landlock_path_beneath_attr`, packed as the kernel declares it.
#[repr(C, packed)]
struct PathBeneathAttr {
    allowed_access: u64,
    parent_fd: i32,
}

/// `landlock_add_rule(ruleset, LANDLOCK_RULE_PATH_BENEATH, {access, dir}, 0)`:
/// grants `access` beneath `dir`. Async-signal-safe.
pub fn add_path_rule(ruleset: BorrowedFd<'_>, access: u64, dir: BorrowedFd<'_>) -> Result<(), Errno> {
    let attr = PathBeneathAttr { allowed_access: access, parent_fd: dir.as_raw_fd() };
    // SAFETY: the attribute is a valid packed structure on the stack, read
    // by the kernel during the call only.
    cvt(unsafe {
        libc::syscall(
            libc::SYS_landlock_add_rule,
            ruleset.as_raw_fd(),
            RULE_PATH_BENEATH,
            std::ptr::from_ref(&attr),
            0u32,
        )
    })
    .map(drop)
}
