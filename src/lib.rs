//! `clawbridge`: run native coding-agent runtimes under OpenClaw. The binary (`src/main.rs`) is a
//! thin shell around this library, so tests and the benchmark harness drive the very same `run`
//! and `serve` with a registry of their own.

pub mod bench;
pub mod cli;
pub mod demo;
pub mod run;
pub mod serve;
