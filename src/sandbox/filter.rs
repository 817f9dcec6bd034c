//! The seccomp filter, compiled by libseccomp from the syscall table.
//!
//! libseccomp is used as a compiler only: the program is exported as classic
//! BPF and installed by the child itself with `seccomp(2)`, so that interpose
//! chooses the flags (`NEW_LISTENER | WAIT_KILLABLE_RECV`) whatever version
//! of libseccomp the host has.

use crate::policy::syscalls::Action;
use crate::policy::table::TABLE;
use libseccomp::{ScmpAction, ScmpArch, ScmpArgCompare, ScmpCompareOp, ScmpFilterContext, ScmpSyscall};
use std::io::{Read, Seek};

/// Errors building the filter.
#[derive(Debug, thiserror::Error)]
pub enum FilterError {
    /// A libseccomp call failed.
    #[error("libseccomp: {0}")]
    Seccomp(#[from] libseccomp::error::SeccompError),
    /// Reading the exported program back failed.
    #[error("reading the exported filter: {0}")]
    Export(#[from] std::io::Error),
}

fn context() -> Result<ScmpFilterContext, FilterError> {
    let mut ctx = ScmpFilterContext::new(ScmpAction::Allow)?;
    // The context starts with the native architecture only (x86_64); any
    // other calling convention, including 32-bit `int 0x80` and x32, is
    // killed before it can use syscall numbers the table does not cover.
    ctx.set_act_badarch(ScmpAction::KillProcess)?;
    debug_assert!(ctx.is_arch_present(ScmpArch::Native)?);
    for row in TABLE {
        let syscall = ScmpSyscall::from_raw_syscall(row.nr);
        match (row.action, row.when) {
            (Action::Errno(e), None) => ctx.add_rule(ScmpAction::Errno(e), syscall)?,
            // One rule per bit: any set bit refuses.
            (Action::Errno(e), Some(when)) => {
                for bit in (0..64).map(|b| 1u64 << b).filter(|b| when.mask & b != 0) {
                    let cmp = ScmpArgCompare::new(when.arg.into(), ScmpCompareOp::MaskedEqual(bit), bit);
                    ctx.add_rule_conditional(ScmpAction::Errno(e), syscall, &[cmp])?;
                }
                &mut ctx
            }
            (Action::ContinueUnlessEmptyPath, _) => {
                let flags = row.flags.expect("rows that skip AT_EMPTY_PATH name their flags").into();
                let empty = libc::AT_EMPTY_PATH as u64;
                let cmp = ScmpArgCompare::new(flags, ScmpCompareOp::MaskedEqual(empty), 0);
                ctx.add_rule_conditional(ScmpAction::Notify, syscall, &[cmp])?
            }
            (Action::Emulate | Action::Continue, _) => ctx.add_rule(ScmpAction::Notify, syscall)?,
        };
    }
    Ok(ctx)
}

/// The classic BPF program for the filter.
pub fn program() -> Result<Vec<libc::sock_filter>, FilterError> {
    let ctx = context()?;
    let mut file = tempfile_in_memory()?;
    ctx.export_bpf(&file)?;
    let mut bytes = Vec::new();
    file.rewind()?;
    file.read_to_end(&mut bytes)?;
    let insn = std::mem::size_of::<libc::sock_filter>();
    Ok(bytes
        .chunks_exact(insn)
        .map(|c| libc::sock_filter {
            code: u16::from_ne_bytes([c[0], c[1]]),
            jt: c[2],
            jf: c[3],
            k: u32::from_ne_bytes([c[4], c[5], c[6], c[7]]),
        })
        .collect())
}

/// libseccomp's human-readable dump of the filter (the golden file
/// `bpf/filter.pfc`).
pub fn pfc() -> Result<String, FilterError> {
    let ctx = context()?;
    let mut file = tempfile_in_memory()?;
    ctx.export_pfc(&file)?;
    let mut s = String::new();
    file.rewind()?;
    file.read_to_string(&mut s)?;
    Ok(s)
}

fn tempfile_in_memory() -> std::io::Result<std::fs::File> {
    let fd = nix::sys::memfd::memfd_create(c"interpose-filter", nix::sys::memfd::MFdFlags::MFD_CLOEXEC)?;
    Ok(std::fs::File::from(fd))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn program_checks_the_architecture_first() {
        let prog = program().unwrap();
        // ld [4] (seccomp_data.arch), then compare with AUDIT_ARCH_X86_64.
        assert_eq!(prog[0].code, (libc::BPF_LD | libc::BPF_W | libc::BPF_ABS) as u16);
        assert_eq!(prog[0].k, 4);
        assert_eq!(prog[1].k, 0xc000_003e, "AUDIT_ARCH_X86_64");
        // x32 syscalls share the x86_64 audit arch but have bit 30 set in
        // their number; libseccomp sends them to the bad-arch action.
        let x32 = prog.iter().position(|i| i.k == 0x4000_0000).expect("an x32 check");
        assert!(x32 < 6, "the x32 check comes before any syscall dispatch");
        let pfc = pfc().unwrap();
        assert!(pfc.contains("invalid architecture action\naction KILL_PROCESS"), "{pfc}");
    }
}
