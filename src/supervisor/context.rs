//! What a handler is given, and all it is given, of the supervisor: the
//! session's [`Ground`] (the surface and how it is enforced, fixed when the
//! supervisor is built), the handlers' [`Memory`] (what one call leaves for
//! later ones: terminals the command made, abstract addresses it bound,
//! whether cached credentials are stale), and whether a notification is
//! still pending. The workers, the trail, the counters and the retry queue
//! stay the supervisor's: a handler decides and answers one call; what
//! happens to the answer is not its business.

use super::procs::Membership;
use super::resolve::Resolver;
use crate::policy::Surface;
use crate::sys::{fs, seccomp};
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::sync::atomic::{AtomicU64, Ordering};

/// How many created terminals are remembered at once.
const MAX_TERMINALS: usize = 1024;

/// How many abstract addresses bound by the sandbox are remembered.
const MAX_BOUND: usize = 4096;

/// What the supervisor decides about IPv4 and IPv6 addresses.
#[derive(Debug, Clone, Default)]
pub enum NetRule {
    /// Nothing: the host's network, or a network namespace of the
    /// command's own (where only loopback, and the proxy, are).
    #[default]
    Open,
    /// `--net connect=`: TCP connects to these ports only (Landlock
    /// enforces the same list; deciding here records the refusals).
    Ports(Vec<u16>),
    /// Only interpose's proxy, at this address on the host's loopback:
    /// the supervisor makes that connect itself, on the caller's socket;
    /// every other IPv4 or IPv6 connect or datagram address is refused.
    /// Each connection is admitted to the proxy by its local port first.
    ProxyOnly(std::net::SocketAddrV4, std::sync::Arc<crate::network::Admission>),
    /// The proxy in a network namespace of the command's own: loopback
    /// addresses (the namespace's own, where the proxy listens) are
    /// continued; any other IPv4 or IPv6 address is refused and recorded
    /// (nothing else is routable there anyway). A connect to one of these
    /// addresses (the host's loopback services the allowlist names, which
    /// interpose forwards) is recorded with the process that made it.
    OwnNamespace(std::sync::Arc<Vec<std::net::SocketAddr>>),
}

impl NetRule {
    /// Whether the network is reached only through the proxy.
    pub fn proxied(&self) -> bool {
        matches!(self, NetRule::ProxyOnly(..) | NetRule::OwnNamespace(_))
    }
}

/// The session as the handlers decide against it: built once, never
/// changed.
pub struct Ground {
    /// The surface every call is decided against.
    pub surface: Surface,
    /// Which processes are inside the sandbox (`/proc/<pid>` decisions).
    pub procs: Membership,
    /// The resolver every path goes through.
    pub resolver: Resolver,
    /// Learning mode: refusals are recorded, not enforced.
    pub learn: bool,
    /// The backstop's proof, without which nothing path-based is continued
    /// ([`super::cover::Cover::backstop`]).
    pub backstop: Option<crate::sandbox::landlock::Sound>,
    /// Per surface rule: whether the kernel also grants what the rule
    /// allows, so an allowed call beneath it can be continued without being
    /// refused there ([`crate::sandbox::landlock::Layout::exact_rules`]).
    pub exact: Vec<bool>,
    /// Where the backstop lets programs run (with a backstop).
    pub exec_roots: Vec<std::path::PathBuf>,
    /// Where the kernel makes names in a held tree: a creating call is
    /// continued only there ([`crate::sandbox::landlock::Making::makes_in`]).
    pub making: crate::sandbox::landlock::Making,
    /// What IPv4 and IPv6 addresses may be reached.
    pub net: NetRule,
    /// With `--isolate`: paths are resolved from the caller's own root.
    pub isolated: bool,
    /// The filter was installed by an OCI runtime: a signal sent to a
    /// caller while its call is handled interrupts that call (its wait is
    /// not killable only), and the call would be restarted.
    pub signals_interrupt: bool,
    /// The command's root, when it has a mount namespace of its own.
    pub command_root: Option<OwnedFd>,
    /// The inode of the supervisor's network namespace, the host's: an
    /// abstract socket address there reaches only what the sandbox bound.
    pub host_netns: u64,
    /// Whether workers set the caller's supplementary groups (not in an
    /// unprivileged user namespace, where setgroups is refused).
    pub set_groups: bool,
    /// Whether decisions go to a trail.
    pub records: bool,
    /// Whether allowed decisions go to the trail too (level `all`).
    pub records_allowed: bool,
    /// The undo journal (`--journal`): every change in the trees it covers
    /// is performed here, after its pre-image is kept.
    pub journal: Option<std::sync::Arc<crate::journal::Journal>>,
}

impl Ground {
    /// Whether the backstop lets the program at the canonical `path` run
    /// (always, without one).
    pub fn backstop_runs(&self, path: &[u8]) -> bool {
        use std::os::unix::ffi::OsStrExt;
        let path = std::path::Path::new(std::ffi::OsStr::from_bytes(path));
        self.backstop.is_none() || self.exec_roots.iter().any(|root| path.starts_with(root))
    }

    /// Whether the kernel also grants what surface rule `rule` allows.
    pub fn landlock_exact(&self, rule: u32) -> bool {
        self.exact.get(rule as usize).copied().unwrap_or(false)
    }

    /// The command's root, when it differs from the supervisor's.
    pub fn command_root(&self) -> Option<BorrowedFd<'_>> {
        self.command_root.as_ref().map(AsFd::as_fd)
    }
}

/// What one call leaves for later ones.
#[derive(Default)]
pub struct Memory {
    /// Bumped at every allowed exec and change of credentials: cached
    /// process names and credentials go stale then.
    generation: AtomicU64,
    /// The sandboxed threads' supplementary groups, while they are all the
    /// same.
    pub groups: super::identity::SessionGroups,
    /// The terminals the command created through `/dev/ptmx`: number ->
    /// an `O_PATH` handle on the slave's inode. When the terminal goes, that
    /// inode loses its link (a later terminal of the same number gets
    /// another), so a live handle names the terminal the command made.
    terminals: std::sync::Mutex<std::collections::HashMap<u32, OwnedFd>>,
    /// The abstract addresses the sandbox bound in the host's network
    /// namespace (`sockaddr_un` bytes), which it may reach again.
    bound: std::sync::Mutex<std::collections::HashSet<Vec<u8>>>,
}

impl Memory {
    /// Which generation of cached process names and credentials is
    /// current.
    pub fn generation(&self) -> u64 {
        self.generation.load(Ordering::SeqCst)
    }

    /// Cached process names and credentials may be stale from now on (an
    /// exec was allowed, or a sandboxed thread is about to change its own
    /// credentials).
    pub fn credentials_change(&self) {
        self.generation.fetch_add(1, Ordering::SeqCst);
    }

    /// A sandboxed thread is about to change its own credentials (the
    /// setuid family): [`Memory::credentials_change`]; with `groups` (only
    /// `setgroups` changes them) its supplementary groups may differ from
    /// the others' from now on. GNU make's children each call `setresgid`
    /// and `setresuid` (to the ids they have), which must not send every
    /// later read of credentials through the status file.
    pub fn caller_changes_credentials(&self, groups: bool) {
        if groups {
            self.groups.change();
        }
        self.credentials_change();
    }

    /// Records that the command created terminal `n`, whose slave `slave`
    /// is a handle on.
    pub fn terminal_created(&self, n: u32, slave: OwnedFd) {
        let mut t = self.terminals.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if t.len() >= MAX_TERMINALS {
            t.retain(|_, fd| fs::fstat(fd.as_fd()).is_ok_and(|st| st.st_nlink > 0));
        }
        if t.len() < MAX_TERMINALS {
            // Beyond the bound, a terminal is not remembered: an open of its
            // slave by name is then refused, never more allowed.
            t.insert(n, slave);
        }
    }

    /// Whether `slave` (the `/dev/pts/N` an open resolved to) is a terminal
    /// the command created and that is still there.
    pub fn created_terminal(&self, slave: &libc::stat) -> bool {
        let n = (libc::major(slave.st_rdev) - 136) * 256 + libc::minor(slave.st_rdev);
        let t = self.terminals.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        t.get(&n).and_then(|fd| fs::fstat(fd.as_fd()).ok()).is_some_and(|held| {
            held.st_nlink > 0
                && held.st_rdev == slave.st_rdev
                && held.st_ino == slave.st_ino
                && held.st_dev == slave.st_dev
        })
    }

    /// Remembers an abstract address the sandbox bound in the host's
    /// network namespace.
    pub fn remember_bound(&self, address: Vec<u8>) {
        let mut bound = self.bound.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        // Beyond the bound nothing more is remembered: a later connect to a
        // name not remembered is refused, never more allowed.
        if bound.len() < MAX_BOUND {
            bound.insert(address);
        }
    }

    /// Whether the sandbox bound the abstract address `address` in the
    /// host's network namespace.
    pub fn bound_by_sandbox(&self, address: &[u8]) -> bool {
        self.bound.lock().unwrap_or_else(std::sync::PoisonError::into_inner).contains(address)
    }
}

/// What a handler is given for one call.
#[derive(Clone, Copy)]
pub struct Context<'a> {
    /// The session as decided against.
    pub ground: &'a Ground,
    /// What calls leave for later ones.
    pub memory: &'a Memory,
    /// The listener, to ask whether a notification is still pending.
    listener: BorrowedFd<'a>,
    /// With `--ask`: answers already given, and where a call is held.
    pub ask: Option<&'a super::ask::Answers>,
}

impl<'a> Context<'a> {
    /// A context over these parts.
    pub fn new(
        ground: &'a Ground,
        memory: &'a Memory,
        listener: BorrowedFd<'a>,
        ask: Option<&'a super::ask::Answers>,
    ) -> Context<'a> {
        Context { ground, memory, listener, ask }
    }

    /// Whether notification `id` is still pending (its caller still waits).
    pub fn still_pending(&self, id: u64) -> bool {
        seccomp::id_valid(self.listener, id)
    }
}
