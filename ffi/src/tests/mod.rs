//! Tests of the extern "C" functions, called from Rust as C would call them.

mod header;
mod support;
mod vectors;
