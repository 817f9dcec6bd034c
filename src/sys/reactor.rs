//! # Safety
//!
//! Registers descriptors with tokio's reactor. `AsyncFd::register` is unsafe
//! because tokio cannot check that the value keeps its descriptor open and
//! unchanged; the only callers pass values that own their descriptor.

use std::os::fd::AsRawFd;
use tokio::io::unix::AsyncFd;

/// Marker for types that own exactly one descriptor for their whole life.
pub trait OwnsFd: AsRawFd {}

impl OwnsFd for nix::sys::signalfd::SignalFd {}
impl OwnsFd for std::os::fd::OwnedFd {}

/// Registers `owner` with the current tokio reactor.
pub fn register<T: OwnsFd>(owner: T) -> std::io::Result<AsyncFd<T>> {
    // SAFETY: `T: OwnsFd` owns its descriptor, which stays open and refers to
    // the same description until `owner` is dropped, i.e. until the AsyncFd is.
    unsafe { AsyncFd::register(owner) }.map_err(|e| e.into_parts().1)
}
