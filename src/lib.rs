//! `clawbridge`: run native coding-agent runtimes under OpenClaw. The binary (`src/main.rs`) is a
//! thin shell around this library, so tests and the benchmarks (`clawbridge-bench`, in `bench/`)
//! drive the very same `run`, `serve` and serve's pipeline with a registry of their own.

pub mod acp_cli;
pub mod cli;
pub mod config;
pub mod demo;
pub mod docs_gen;
pub mod doctor;
pub mod interrupt;
pub mod logfile;
pub mod run;
pub mod serve;
pub mod shell;
pub mod view;
