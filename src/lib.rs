//! interpose: a seccomp user-notification syscall interposer that confines a
//! program (above all an AI coding agent) to a read/write filesystem surface.
//!
//! The data flows through the modules in this order: [`cli`] parses flags,
//! [`policy`] turns them into a [`policy::Surface`] (a prefix trie of
//! read-only and read-write entries), [`sandbox`] forks the command and
//! confines it (Landlock backstop, seccomp filter with a listener),
//! [`supervisor`] answers every trapped syscall, and [`audit`] records each
//! decision.
//!
//! # Threat model
//!
//! The sandboxed program is adversarial: it has many threads, forks, execs,
//! creates symlinks, races, uses `/proc`, old and new syscall variants and
//! 32-bit entry points. A check a second thread can invalidate is not a
//! check, so allowed opens are performed by the supervisor on the object it
//! checked and the descriptor injected (`SECCOMP_IOCTL_NOTIF_ADDFD`); other
//! calls are answered with CONTINUE only where the Landlock ruleset, built
//! from the same surface, enforces the same answer on whatever the kernel
//! resolves. Every failure denies: if the supervisor dies, trapped calls
//! fail and the command is killed; a missing kernel feature refuses to run.
//!
//! # Compatibility
//!
//! Linux x86_64, 5.19 or newer (user notification with `ADDFD_FLAG_SEND` and
//! `WAIT_KILLABLE_RECV`), with Landlock enabled. `interpose check` says what
//! the running kernel offers.
//!
//! # Test strategy
//!
//! The pure core ([`policy`]) is unit-tested without privileges. Everything
//! else is tested against the real kernel: `tests/` runs the real binary on
//! real files and writes the attacks (path-buffer races, `/proc` tricks,
//! 32-bit syscalls) as programs that must fail under interpose.
#![deny(unsafe_code)]
#![deny(missing_docs)]

pub mod approvals;
pub mod audit;
pub mod bench;
pub mod cli;
pub mod forensics;
pub mod journal;
pub mod layers;
pub mod library;
pub mod network;
pub mod oci;
mod parallel;
pub mod policy;
pub mod sandbox;
pub mod session;
pub mod supervisor;
pub mod sys;
pub mod syscalls;
