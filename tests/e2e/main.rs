//! End-to-end tests: the real `interpose` binary on real files, against the
//! real kernel. One test binary; every test gets its own temporary tree.

mod allowed;
mod approvals;
mod attacks;
mod carveouts;
mod common;
mod coverage;
mod denied;
mod fast;
mod fidelity;
mod flips;
mod forensics;
mod isolate;
mod layers;
mod library;
mod lifecycle;
mod livable;
mod network;
mod oci;
mod policy;
mod proxy;
mod routes;
mod undo;
