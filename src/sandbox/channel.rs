//! The set-up channel between the forked child and interpose: a
//! `SOCK_SEQPACKET` pair carrying typed messages in frames of one fixed
//! size, encoded and decoded here and nowhere else. The child's side
//! allocates nothing (it runs between fork and exec).
//!
//! The exchange: the child sends [`FromChild::Ready`] with the numbers of
//! the descriptors the parent takes with `pidfd_getfd` (the seccomp
//! listener, the proxy's socket, the forwarded services' sockets), or
//! [`FromChild::Failed`] naming the stage that failed; the parent answers
//! [`GO`]; the child closes its copies and execs. A failed `execve` is a
//! last [`FromChild::Failed`] at [`Stage::Exec`]; a successful one closes
//! the channel (close-on-exec), which the parent reads as success.

use super::Stage;
use crate::sys::process;
use crate::sys::Errno;
use std::os::fd::{BorrowedFd, RawFd};

/// The most loopback services (and credential endpoints) one session
/// listens for in the command's network namespace.
pub const MAX_FORWARDS: usize = 16;

/// Every frame's size: tag, listener, proxy, the forwarded sockets.
const FRAME: usize = 12 + 4 * MAX_FORWARDS;

const TAG_READY: u8 = b'L';
const TAG_FAILED: u8 = b'E';
/// The parent's go-ahead, one byte.
pub const GO: u8 = b'G';

/// The descriptors the child hands over, by their numbers in the child.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Handover {
    /// The seccomp listener.
    pub listener: RawFd,
    /// The proxy's listening socket, in the command's network namespace.
    pub proxy: Option<RawFd>,
    /// The forwarded services' and credential endpoints' sockets, in the
    /// order of the plan; `count` of them.
    pub forwards: [RawFd; MAX_FORWARDS],
    /// How many of `forwards` are used.
    pub count: usize,
}

/// What the child says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FromChild {
    /// Set up; the descriptors to take.
    Ready(Handover),
    /// A stage failed with an errno.
    Failed {
        /// Which.
        stage: Stage,
        /// Why.
        errno: Errno,
    },
}

impl FromChild {
    /// The frame (no allocation).
    pub fn encode(&self) -> [u8; FRAME] {
        let mut frame = [0u8; FRAME];
        let mut put = |at: usize, v: i32| frame[at..at + 4].copy_from_slice(&v.to_ne_bytes());
        match *self {
            FromChild::Ready(h) => {
                put(4, h.listener);
                put(8, h.proxy.unwrap_or(-1));
                for (i, fd) in h.forwards.iter().enumerate() {
                    put(12 + 4 * i, if i < h.count { *fd } else { -1 });
                }
                frame[0] = TAG_READY;
                frame[1] = h.count as u8;
            }
            FromChild::Failed { stage, errno } => {
                put(4, errno as i32);
                frame[0] = TAG_FAILED;
                frame[1] = stage as u8;
            }
        }
        frame
    }

    /// The message a frame holds; `None` for anything else.
    pub fn decode(frame: &[u8]) -> Option<FromChild> {
        if frame.len() != FRAME {
            return None;
        }
        let get = |at: usize| i32::from_ne_bytes(frame[at..at + 4].try_into().expect("4 bytes"));
        match frame[0] {
            TAG_READY => {
                let count = usize::from(frame[1]);
                if count > MAX_FORWARDS {
                    return None;
                }
                let mut forwards = [-1; MAX_FORWARDS];
                for (i, fd) in forwards.iter_mut().enumerate().take(count) {
                    *fd = get(12 + 4 * i);
                }
                let proxy = Some(get(8)).filter(|fd| *fd >= 0);
                Some(FromChild::Ready(Handover { listener: get(4), proxy, forwards, count }))
            }
            TAG_FAILED => Some(FromChild::Failed { stage: Stage::from_u8(frame[1])?, errno: Errno::from_raw(get(4)) }),
            _ => None,
        }
    }
}

/// The child's side: sends `message` (async-signal-safe).
pub fn send(channel: BorrowedFd<'_>, message: &FromChild) -> Result<(), Errno> {
    process::write_all(channel, &message.encode())
}

/// The child's side: waits for the parent's [`GO`].
pub fn await_go(channel: BorrowedFd<'_>) -> Result<(), Errno> {
    match process::read_byte(channel)? {
        Some(GO) => Ok(()),
        _ => Err(Errno::EPIPE),
    }
}

/// The parent's side: the child's next message; `None` when the channel
/// ended (the command exec'd, or the child died) or held no message.
pub fn receive(channel: BorrowedFd<'_>) -> Option<FromChild> {
    let mut frame = [0u8; FRAME];
    match process::recv_with_fds(channel, &mut frame) {
        Ok((FRAME, _, _)) => FromChild::decode(&frame),
        _ => None,
    }
}

/// The parent's side: lets the child go on to exec.
pub fn go(channel: BorrowedFd<'_>) -> Result<(), Errno> {
    process::write_all(channel, &[GO])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_round_trip_and_nothing_else_decodes() {
        let mut forwards = [-1; MAX_FORWARDS];
        forwards[0] = 7;
        forwards[1] = 9;
        let ready = FromChild::Ready(Handover { listener: 5, proxy: Some(6), forwards, count: 2 });
        assert_eq!(FromChild::decode(&ready.encode()), Some(ready));
        let bare = FromChild::Ready(Handover { listener: 3, proxy: None, forwards: [-1; MAX_FORWARDS], count: 0 });
        assert_eq!(FromChild::decode(&bare.encode()), Some(bare));
        let failed = FromChild::Failed { stage: Stage::Landlock, errno: Errno::EPERM };
        assert_eq!(FromChild::decode(&failed.encode()), Some(failed));
        assert_eq!(FromChild::decode(&[0u8; FRAME]), None, "an unknown tag");
        assert_eq!(FromChild::decode(&failed.encode()[..8]), None, "a short frame");
        let mut bad = ready.encode();
        bad[1] = (MAX_FORWARDS + 1) as u8;
        assert_eq!(FromChild::decode(&bad), None, "more sockets than a frame holds");
        let mut stage = failed.encode();
        stage[1] = 250;
        assert_eq!(FromChild::decode(&stage), None, "an unknown stage");
    }
}
