//! The kernel features enforcement needs, probed on the running kernel
//! (`interpose check` prints them; the session record lists them).

use crate::sys::seccomp;

/// One feature and whether it is present.
#[derive(Debug, Clone)]
pub struct Feature {
    /// Name as the kernel documentation spells it.
    pub name: &'static str,
    /// Whether this kernel has it.
    pub present: bool,
    /// Whether enforcement is impossible without it.
    pub required: bool,
    /// Detail (a version, or how to get it).
    pub detail: String,
}

/// Probes the running kernel.
pub fn probe() -> Vec<Feature> {
    let notify = seccomp::action_available(seccomp::RET_USER_NOTIF);
    let sizes = seccomp::notif_sizes();
    let listener = seccomp::filter_flags_supported(seccomp::FILTER_FLAG_NEW_LISTENER);
    let killable =
        seccomp::filter_flags_supported(seccomp::FILTER_FLAG_NEW_LISTENER | seccomp::FILTER_FLAG_WAIT_KILLABLE_RECV);
    let (release, version) = running_kernel();
    let landlock = crate::sys::landlock::abi_version();
    vec![
        Feature {
            name: "seccomp user notification (SECCOMP_RET_USER_NOTIF)",
            present: notify && listener,
            required: true,
            detail: match sizes {
                Ok(s) => {
                    format!("notif {} B, resp {} B, data {} B", s.seccomp_notif, s.seccomp_notif_resp, s.seccomp_data)
                }
                Err(e) => format!("SECCOMP_GET_NOTIF_SIZES: {e}; needs Linux 5.0+"),
            },
        },
        Feature {
            name: "SECCOMP_ADDFD_FLAG_SEND",
            present: version >= (5, 14),
            required: true,
            detail: format!("kernel {release}; needs Linux 5.14+"),
        },
        Feature {
            name: "SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV",
            present: killable,
            required: true,
            detail: "needs Linux 5.19+".into(),
        },
        Feature {
            name: "SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP",
            present: version >= (6, 6),
            required: false,
            detail: "faster wake-ups; needs Linux 6.6+".into(),
        },
        Feature {
            name: "Landlock",
            present: landlock.is_ok(),
            required: true,
            detail: match landlock {
                Ok(abi) if abi >= 6 => format!("ABI {abi} (with signal and abstract-socket scopes)"),
                Ok(abi) => format!("ABI {abi} (no scopes: needs ABI 6, Linux 6.12+)"),
                Err(e) => format!("{e}; enable it with lsm=landlock (Linux 5.13+)"),
            },
        },
        Feature {
            name: "pid_max per PID namespace (the default task limit)",
            present: version >= PID_MAX_PER_NAMESPACE,
            required: false,
            detail: "needs Linux 6.14+; otherwise a pids cgroup, whose cgroup v1 migration adds ~10 ms to start-up"
                .into(),
        },
        Feature {
            name: "Landlock TCP port rules (--net connect=)",
            present: landlock.as_ref().is_ok_and(|abi| *abi >= 4),
            required: false,
            detail: "needs Landlock ABI 4, Linux 6.7+".into(),
        },
        Feature {
            name: "unprivileged user namespaces (--isolate without root)",
            present: std::fs::read_to_string("/proc/sys/user/max_user_namespaces")
                .is_ok_and(|v| v.trim().parse::<u64>().is_ok_and(|n| n > 0))
                && std::fs::read_to_string("/proc/sys/kernel/unprivileged_userns_clone")
                    .map_or(true, |v| v.trim() != "0"),
            required: false,
            detail: "user.max_user_namespaces > 0 (and kernel.unprivileged_userns_clone where it exists)".into(),
        },
    ]
}

/// Whether each PID namespace has a `pid_max` of its own (Linux 6.14);
/// before, writing it from inside one changes the whole system's.
pub fn pid_max_per_namespace() -> bool {
    running_kernel().1 >= PID_MAX_PER_NAMESPACE
}

/// The running kernel's release string and its (major, minor).
fn running_kernel() -> (String, (u32, u32)) {
    let release = nix::sys::utsname::uname().map(|u| u.release().to_string_lossy().into_owned()).unwrap_or_default();
    let version = kernel_version(&release);
    (release, version)
}

/// The first kernel with a `pid_max` per PID namespace.
const PID_MAX_PER_NAMESPACE: (u32, u32) = (6, 14);

fn kernel_version(release: &str) -> (u32, u32) {
    let mut it = release.split(|c: char| !c.is_ascii_digit()).filter_map(|p| p.parse().ok());
    (it.next().unwrap_or(0), it.next().unwrap_or(0))
}

#[cfg(test)]
mod tests {
    #[test]
    fn parses_kernel_releases() {
        assert_eq!(super::kernel_version("6.18.44-fc-v669"), (6, 18));
        assert_eq!(super::kernel_version("5.4.0"), (5, 4));
        assert_eq!(super::kernel_version(""), (0, 0));
    }
}
