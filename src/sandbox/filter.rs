//! The seccomp filter, compiled by libseccomp from the syscall table.
//!
//! libseccomp is used as a compiler only: the program is exported as classic
//! BPF and installed by the child itself with `seccomp(2)`, so that interpose
//! chooses the flags (`NEW_LISTENER | WAIT_KILLABLE_RECV`) whatever version
//! of libseccomp the host has.

use crate::syscalls::table::TABLE;
use crate::syscalls::{Action, Trapping, When};
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

/// What a run's filter depends on besides the table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Options {
    /// Which trapped rows go to the supervisor.
    pub trapping: Trapping,
    /// Whether the command has an IPC namespace of its own (the rows whose
    /// action is [`Action::IpcNamespace`] are then allowed).
    pub own_ipc: bool,
}

impl Default for Options {
    fn default() -> Self {
        Options { trapping: Trapping::All, own_ipc: false }
    }
}

fn context() -> Result<ScmpFilterContext, FilterError> {
    context_with(ScmpAction::Notify, Options::default())
}

/// The filter with `notify` in place of every user-notification action, for
/// the rows `options.trapping` sends to the supervisor (the others are
/// allowed).
fn context_with(notify: ScmpAction, options: Options) -> Result<ScmpFilterContext, FilterError> {
    let mut ctx = ScmpFilterContext::new(ScmpAction::Allow)?;
    // The context starts with the native architecture only (x86_64); any
    // other calling convention, including 32-bit `int 0x80` and x32, is
    // killed before it can use syscall numbers the table does not cover.
    ctx.set_act_badarch(ScmpAction::KillProcess)?;
    ctx.set_ctl_optimize(2)?;
    debug_assert!(ctx.is_arch_present(ScmpArch::Native)?);
    for row in TABLE {
        let syscall = ScmpSyscall::from_raw_syscall(row.nr);
        let notify = if options.trapping.traps(row.op) { notify } else { ScmpAction::Allow };
        // A refusal takes precedence over a notification in libseccomp, so
        // this holds whatever the row's own action is.
        if let Some((errno, when)) = row.refuse {
            refuse_when(&mut ctx, syscall, errno, when)?;
        }
        match (row.action, row.when) {
            (Action::Errno(e), None) => ctx.add_rule(ScmpAction::Errno(e), syscall)?,
            (Action::Errno(e), Some(when)) => refuse_when(&mut ctx, syscall, e, when)?,
            (Action::IpcNamespace, _) if options.own_ipc => &mut ctx,
            (Action::IpcNamespace, _) => ctx.add_rule(ScmpAction::Errno(libc::EPERM), syscall)?,
            // Allowing is the default: libseccomp refuses rules that repeat it.
            (Action::Emulate | Action::Continue, _) if notify == ScmpAction::Allow => &mut ctx,
            // With a refusal on the same syscall, the notification must be
            // conditional too (libseccomp lets an unconditional rule replace
            // the conditional ones): notified only when none of the
            // refusal's bits is set.
            // Fast mode with the command's own procfs: a read-only open is
            // Landlock's to decide; one with any bit that writes, creates,
            // truncates or asks for an O_PATH handle is notified (one rule
            // per bit: any set bit notifies).
            (Action::Emulate | Action::Continue, _) if options.trapping.leaves_reads(row.op) => {
                debug_assert!(row.refuse.is_none(), "open rows refuse nothing in the filter");
                let arg = row.flags.expect("open rows name their flags");
                for bit in crate::syscalls::trapping::NOT_READ_ONLY {
                    let set = ScmpArgCompare::new(arg.into(), ScmpCompareOp::MaskedEqual(bit), bit);
                    ctx.add_rule_conditional(notify, syscall, &[set])?;
                }
                &mut ctx
            }
            // Fast mode: access(2) asking only whether the name exists
            // (F_OK, mode 0) is the kernel's, as a stat is; any other mode
            // is notified (the whole register compared: a mode with only
            // high bits set is notified too, and refused by the supervisor).
            (Action::Emulate | Action::Continue, _) if options.trapping.leaves_existence(row.op) => {
                debug_assert!(row.refuse.is_none(), "access rows refuse nothing in the filter");
                let arg = row.extra.expect("access rows name their mode");
                let asks = ScmpArgCompare::new(arg.into(), ScmpCompareOp::NotEqual, 0);
                ctx.add_rule_conditional(notify, syscall, &[asks])?
            }
            // A send with no address (send(2), write on a socket) goes to
            // the peer a decided connect chose: only one naming an address
            // is notified (a register, which the caller cannot change after
            // the filter read it).
            (Action::Emulate | Action::Continue, _) if row.op == crate::syscalls::Op::Sendto => {
                let arg = row.extra.expect("sendto names its address argument");
                let named = ScmpArgCompare::new(arg.into(), ScmpCompareOp::NotEqual, 0);
                ctx.add_rule_conditional(notify, syscall, &[named])?
            }
            (Action::Emulate | Action::Continue, _) => match row.refuse {
                Some((_, When::AnyBit { arg, mask })) => {
                    let clear = ScmpArgCompare::new(arg.into(), ScmpCompareOp::MaskedEqual(mask), 0);
                    ctx.add_rule_conditional(notify, syscall, &[clear])?
                }
                Some((_, When::Equals { .. })) => unreachable!("a trapped row refuses by bits only (codegen checks)"),
                None => ctx.add_rule(notify, syscall)?,
            },
        };
    }
    Ok(ctx)
}

/// Refuses `syscall` with `errno` when `when` holds.
fn refuse_when(
    ctx: &mut ScmpFilterContext,
    syscall: ScmpSyscall,
    errno: i32,
    when: When,
) -> Result<&mut ScmpFilterContext, FilterError> {
    match when {
        // One rule per bit: any set bit refuses.
        When::AnyBit { arg, mask } => {
            for bit in (0..64).map(|b| 1u64 << b).filter(|b| mask & b != 0) {
                let cmp = ScmpArgCompare::new(arg.into(), ScmpCompareOp::MaskedEqual(bit), bit);
                ctx.add_rule_conditional(ScmpAction::Errno(errno), syscall, &[cmp])?;
            }
        }
        // One rule per value, on the low 32 bits (ioctl requests are
        // `unsigned int` to the kernel, whatever the upper half holds).
        When::Equals { arg, values } => {
            for &v in values {
                let cmp = ScmpArgCompare::new(arg.into(), ScmpCompareOp::MaskedEqual(0xffff_ffff), v.into());
                ctx.add_rule_conditional(ScmpAction::Errno(errno), syscall, &[cmp])?;
            }
        }
    }
    Ok(ctx)
}

/// The highest x86_64 syscall number interpose knows (`file_setattr`,
/// Linux 6.17). Anything above it may be a path syscall from a newer kernel
/// that the table cannot decide, so the filter answers `ENOSYS`.
pub const HIGHEST_KNOWN_SYSCALL: u32 = crate::syscalls::table::HIGHEST;

const AUDIT_ARCH_X86_64: u32 = 0xc000_003e;
const X32_SYSCALL_BIT: u32 = 0x4000_0000;

fn stmt(code: u32, k: u32) -> libc::sock_filter {
    libc::sock_filter { code: code as u16, jt: 0, jf: 0, k }
}

fn jump(code: u32, k: u32, jt: u8, jf: u8) -> libc::sock_filter {
    libc::sock_filter { code: code as u16, jt, jf, k }
}

/// Instructions run before libseccomp's program: on x86_64, a syscall
/// number above [`HIGHEST_KNOWN_SYSCALL`] (but below the x32 range, which
/// libseccomp kills) returns `ENOSYS`. Every jump lands inside this prefix
/// or on the first instruction after it, so libseccomp's own jumps are
/// untouched.
fn unknown_syscall_prefix() -> Vec<libc::sock_filter> {
    use libc::{BPF_ABS, BPF_JEQ, BPF_JGE, BPF_JGT, BPF_JMP, BPF_K, BPF_LD, BPF_RET, BPF_W};
    let ld = BPF_LD | BPF_W | BPF_ABS;
    vec![
        /* 0 */ stmt(ld, 4), // seccomp_data.arch
        /* 1 */ jump(BPF_JMP | BPF_JEQ | BPF_K, AUDIT_ARCH_X86_64, 0, 4), // else: to libseccomp
        /* 2 */ stmt(ld, 0), // seccomp_data.nr
        /* 3 */ jump(BPF_JMP | BPF_JGE | BPF_K, X32_SYSCALL_BIT, 2, 0), // x32: to libseccomp
        /* 4 */ jump(BPF_JMP | BPF_JGT | BPF_K, HIGHEST_KNOWN_SYSCALL, 0, 1),
        /* 5 */ stmt(BPF_RET | BPF_K, libc::SECCOMP_RET_ERRNO | libc::ENOSYS as u32),
    ]
}

/// The classic BPF program for the filter.
pub fn program() -> Result<Vec<libc::sock_filter>, FilterError> {
    program_for(Options::default())
}

/// The program for a run's `options`: libseccomp's, compiled when the
/// table changed (`cargo xtask codegen`, `src/sandbox/programs.rs`), not at
/// every start, where compiling took ~1 ms of CPU beside the rest of the
/// set-up (docs/performance.md). A test holds each equal to what
/// libseccomp compiles now.
pub fn program_for(options: Options) -> Result<Vec<libc::sock_filter>, FilterError> {
    let compiled = super::programs::PROGRAMS[slot(options)];
    let mut prog = unknown_syscall_prefix();
    prog.extend(compiled.iter().map(|&(code, jt, jf, k)| libc::sock_filter { code, jt, jf, k }));
    Ok(prog)
}

/// Every `Options` a run can have, in the order of
/// [`super::programs::PROGRAMS`].
pub fn variants() -> impl Iterator<Item = Options> {
    let fast = [false, true].into_iter().flat_map(|exact| {
        [(false, false), (true, false), (true, true)].map(|(reads, links)| Trapping::Fast { exact, reads, links })
    });
    std::iter::once(Trapping::All)
        .chain(fast)
        .flat_map(|trapping| [false, true].map(|own_ipc| Options { trapping, own_ipc }))
}

fn slot(options: Options) -> usize {
    let trapping = match options.trapping {
        Trapping::All => 0,
        // `links` only with `reads` ([`variants`]): without, it leaves
        // nothing more to the kernel than the variant that traps readlink.
        Trapping::Fast { exact, reads, links } => {
            1 + 3 * usize::from(exact) + usize::from(reads) + usize::from(links && reads)
        }
    };
    2 * trapping + usize::from(options.own_ipc)
}

/// libseccomp's program for `options`, compiled now.
fn compile(options: Options) -> Result<Vec<libc::sock_filter>, FilterError> {
    let mut prog = export(context_with(ScmpAction::Notify, options)?)?;
    prog.drain(..unknown_syscall_prefix().len());
    Ok(prog)
}

/// The text of `src/sandbox/programs.rs`: every variant compiled by
/// libseccomp now (`interpose debug filter-programs`, which `cargo xtask
/// codegen` writes out).
pub fn programs_source() -> Result<String, FilterError> {
    use std::fmt::Write;
    let mut out = format!(
        "//! Generated by `cargo xtask codegen` (`interpose debug filter-programs`):\n\
         //! libseccomp's program for every filter option, from `bpf/syscalls.tsv`.\n\
         //! Do not edit.\n\n\
         /// Each option's program (`filter::variants` order), as `(code, jt, jf, k)`.\n\
         #[rustfmt::skip]\n\
         pub(super) const PROGRAMS: [&[(u16, u8, u8, u32)]; {}] = [\n",
        variants().count()
    );
    for options in variants() {
        let _ = writeln!(out, "    // {:?}, own_ipc: {}", options.trapping, options.own_ipc);
        out.push_str("    &[");
        for (i, insn) in compile(options)?.iter().enumerate() {
            out.push_str(if i % 6 == 0 { "\n        " } else { " " });
            let _ = write!(out, "({:#06x}, {}, {}, {:#x}),", insn.code, insn.jt, insn.jf, insn.k);
        }
        out.push_str("\n    ],\n");
    }
    out.push_str("];\n");
    Ok(out)
}

/// The same program with every trapped syscall allowed instead: the cost of
/// the BPF alone, for `interpose bench`'s `seccomp-allow` floor. (libseccomp
/// folds the now-redundant rules away, as it would for any allow-all
/// filter with the same refusals.)
pub fn program_allowing_all() -> Result<Vec<libc::sock_filter>, FilterError> {
    export(context_with(ScmpAction::Allow, Options::default())?)
}

fn export(ctx: ScmpFilterContext) -> Result<Vec<libc::sock_filter>, FilterError> {
    let mut file = tempfile_in_memory()?;
    ctx.export_bpf(&file)?;
    let mut bytes = Vec::new();
    file.rewind()?;
    file.read_to_end(&mut bytes)?;
    let insn = std::mem::size_of::<libc::sock_filter>();
    let mut prog = unknown_syscall_prefix();
    prog.extend(bytes.chunks_exact(insn).map(|c| libc::sock_filter {
        code: u16::from_ne_bytes([c[0], c[1]]),
        jt: c[2],
        jf: c[3],
        k: u32::from_ne_bytes([c[4], c[5], c[6], c[7]]),
    }));
    Ok(prog)
}

/// libseccomp's human-readable dump of the filter (the golden file
/// `bpf/filter.pfc`), after a description of interpose's own prefix.
pub fn pfc() -> Result<String, FilterError> {
    let ctx = context()?;
    let mut file = tempfile_in_memory()?;
    ctx.export_pfc(&file)?;
    let mut s = format!(
        "#\n# interpose prefix (src/sandbox/filter.rs), run before the program below:\n\
         # if ($arch == {AUDIT_ARCH_X86_64} && $syscall < {X32_SYSCALL_BIT:#x} && $syscall > {HIGHEST_KNOWN_SYSCALL})\n\
         #   action ERRNO({});\n",
        libc::ENOSYS
    );
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
    fn the_programs_kept_are_what_libseccomp_compiles_now() {
        let options: Vec<Options> = variants().collect();
        assert_eq!(options.len(), super::super::programs::PROGRAMS.len());
        for (n, o) in options.iter().enumerate() {
            assert_eq!(slot(*o), n, "{o:?}");
            let kept: Vec<_> = program_for(*o).unwrap().iter().map(|i| (i.code, i.jt, i.jf, i.k)).collect();
            let mut now: Vec<_> = unknown_syscall_prefix().iter().map(|i| (i.code, i.jt, i.jf, i.k)).collect();
            now.extend(compile(*o).unwrap().iter().map(|i| (i.code, i.jt, i.jf, i.k)));
            assert_eq!(kept, now, "{o:?}: src/sandbox/programs.rs is stale; run `cargo xtask codegen`");
        }
        // Options that trap differently get different programs.
        assert_ne!(super::super::programs::PROGRAMS[0], super::super::programs::PROGRAMS[8]);
    }

    #[test]
    fn program_checks_the_architecture_first() {
        let prefix = unknown_syscall_prefix().len();
        let prog = program().unwrap();
        assert_eq!(prog[0].k, 4, "the prefix loads the arch first");
        assert_eq!(prog[1].jf as usize, prefix - 2, "a foreign arch jumps straight to libseccomp's program");
        let prog = &prog[prefix..];
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
