//! Test support shared by the integration tests.

pub mod pty;
