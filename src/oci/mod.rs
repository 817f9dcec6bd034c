//! Containers: interpose as the seccomp agent of OCI runtimes (runc,
//! crun). [`config`] renders the `linux.seccomp` section a bundle needs;
//! [`agent`] takes each container's listener from the runtime and
//! supervises it with the same supervisor as `interpose run`.

pub mod agent;
pub mod config;
