//! The x86_64 syscall table: every syscall number with its disposition
//! (trapped, refused, allowed untrapped), generated from `bpf/syscalls.tsv`.
//! The sandbox builds its filter from it and the supervisor dispatches on
//! it; the row types ([`row`]) know nothing of the table, the table
//! ([`table`]) only of the row types, and [`trapping`] of both.

pub mod decode;
pub mod row;
pub mod table;
pub mod trapping;

pub use decode::{Args, OpArgs, PathAt};
pub use row::{Action, Follow, Op, Syscall, When};
pub use trapping::Trapping;
