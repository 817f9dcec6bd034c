//! Why the kernel may run a call the supervisor decided.
//!
//! An answer of CONTINUE (`SECCOMP_USER_NOTIF_FLAG_CONTINUE`) lets the
//! kernel run the call the caller made, and the kernel then reads the
//! call's arguments from the caller's memory again, after the supervisor's
//! check: another thread, or another process writing a shared page, may
//! have changed them by then. So an answer of CONTINUE can only be built
//! with a [`Cover`], the reason the kernel's own checks refuse, for that
//! call, everything the surface refuses, whatever the caller's memory says
//! by the time the kernel reads it (or, learning, that nothing is
//! refused). There are four, each made by one
//! function here; a handler that has none performs the call itself on the
//! object it checked, or refuses it (docs/syscalls.md lists each
//! syscall's answer).

use crate::policy::Access;
use crate::sandbox::landlock::Sound;

/// The reason a continued call is safe; see the module documentation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Cover(Why);

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Why {
    /// The backstop refuses this access wherever the surface does.
    Backstop(Access),
    /// The call names no object the surface decides.
    Credentials,
    /// The call makes a handle that grants no access by itself.
    Handle,
    /// Learning: nothing is enforced, every decision is recorded.
    Learning,
}

impl Cover {
    /// The kernel looks the call's object up again under the backstop,
    /// which refuses `access` wherever the surface does (its Landlock
    /// ruleset grants nothing the surface refuses, its masks hold the
    /// carve-outs: `sandbox::landlock`). `None` without a backstop (`--no-landlock`,
    /// a runtime's filter), or where it does not cover `access` (creating,
    /// where a carve-out that does not exist yet could be made).
    pub fn backstop(sound: Option<Sound>, access: Access) -> Option<Cover> {
        sound.filter(|s| s.covers(access)).map(|_| Cover(Why::Backstop(access)))
    }

    /// A change of the caller's own credentials (`setuid`, `capset`, ...):
    /// no path and no address; the kernel checks the caller's capabilities
    /// itself, and the supervisor only learns that what it cached about
    /// them is stale.
    pub fn credentials() -> Cover {
        Cover(Why::Credentials)
    }

    /// An `O_PATH` descriptor or a working directory, which grant no access
    /// by themselves: every lookup, open, exec and metadata read made
    /// through one is trapped and decided at the object's real location
    /// (an `fstat` of an `O_PATH` descriptor, `AT_EMPTY_PATH` and the cwd
    /// included), so a path swapped after the check yields a handle on
    /// another object that reveals no more than that it exists. (In fast
    /// mode the metadata reads are untrapped: what they reveal is fast
    /// mode's stated residual risk.)
    pub fn handle() -> Cover {
        Cover(Why::Handle)
    }

    /// Learning (`--learn`), where nothing is enforced: the call was
    /// decided and recorded (as `would_deny` where enforcing would refuse
    /// it), and what the kernel then does is not checked again.
    pub fn learning() -> Cover {
        Cover(Why::Learning)
    }

    /// The access the backstop was shown to refuse, for the trail's
    /// readers; `None` for the other reasons.
    pub fn backstop_access(self) -> Option<Access> {
        match self.0 {
            Why::Backstop(a) => Some(a),
            Why::Credentials | Why::Handle | Why::Learning => None,
        }
    }
}
