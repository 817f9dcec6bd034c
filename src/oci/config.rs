//! `interpose oci-config`: the `linux.seccomp` section of an OCI bundle's
//! `config.json` that sends the calls interpose decides to its agent: the
//! same table as `interpose run`'s filter, in the runtime's terms.

use crate::syscalls::row::Action;
use crate::syscalls::table::{ALLOWED, TABLE};
use serde_json::{json, Value};
use std::path::Path;

/// The section: calls the supervisor decides go to the listener
/// (`SCMP_ACT_NOTIFY`), calls interpose refuses get their errno, the rest of
/// the table is allowed, and any other number (a syscall newer than the
/// table) fails with `ENOSYS`, as under `interpose run`.
pub fn seccomp_section(listener: &Path, metadata: Option<&str>) -> Value {
    let mut notify = Vec::new();
    let mut allow: Vec<&str> = ALLOWED.to_vec();
    let mut refused: std::collections::BTreeMap<i32, Vec<&str>> = std::collections::BTreeMap::new();
    for row in TABLE {
        match row.action {
            Action::Emulate | Action::Continue => notify.push(row.name),
            // Refusals that depend on the arguments (namespace flags of
            // clone/unshare, a nested listener, terminal ioctls) are left
            // to the runtime's own profile: allowed here.
            Action::Errno(_) if row.when.is_some() => allow.push(row.name),
            Action::Errno(e) => refused.entry(e).or_default().push(row.name),
            // A runtime gives the container an IPC namespace of its own.
            Action::IpcNamespace => allow.push(row.name),
        }
    }
    let mut syscalls = vec![
        json!({ "names": allow, "action": "SCMP_ACT_ALLOW" }),
        json!({ "names": notify, "action": "SCMP_ACT_NOTIFY" }),
    ];
    for (errno, names) in refused {
        syscalls.push(json!({ "names": names, "action": "SCMP_ACT_ERRNO", "errnoRet": errno }));
    }
    let mut section = json!({
        "defaultAction": "SCMP_ACT_ERRNO",
        "defaultErrnoRet": libc::ENOSYS,
        "architectures": ["SCMP_ARCH_X86_64"],
        "listenerPath": listener.to_string_lossy(),
        "syscalls": syscalls,
    });
    if let Some(m) = metadata {
        section["listenerMetadata"] = json!(m);
    }
    section
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_row_has_one_action_and_opens_are_notified() {
        let s = seccomp_section(Path::new("/run/interpose.sock"), Some("p.toml"));
        assert_eq!(s["listenerPath"], "/run/interpose.sock");
        assert_eq!(s["listenerMetadata"], "p.toml");
        let names = |action: &str| -> Vec<String> {
            s["syscalls"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|r| r["action"] == action)
                .flat_map(|r| r["names"].as_array().unwrap().iter().map(|n| n.as_str().unwrap().to_string()))
                .collect()
        };
        let notify = names("SCMP_ACT_NOTIFY");
        for call in ["openat", "openat2", "execve", "newfstatat", "connect", "unlinkat"] {
            assert!(notify.iter().any(|n| n == call), "{call} not notified");
        }
        assert!(names("SCMP_ACT_ALLOW").iter().any(|n| n == "read"));
        assert!(names("SCMP_ACT_ERRNO").iter().any(|n| n == "userfaultfd"));
        let total = notify.len() + names("SCMP_ACT_ALLOW").len() + names("SCMP_ACT_ERRNO").len();
        assert_eq!(total, TABLE.len() + ALLOWED.len(), "every row in exactly one list");
        assert_eq!(s["defaultAction"], "SCMP_ACT_ERRNO", "a syscall the table does not name fails");
    }
}
