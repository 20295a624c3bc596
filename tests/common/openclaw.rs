//! The setup every live OpenClaw test (tests/openclaw_*.rs) repeats: find Node 24 and OpenClaw's
//! CLI (or skip), lay an [`OpenClawHome`] out that runs this build's `clawbridge`, and check that
//! an `openclaw agent exec` turn succeeded, saying what the mock model saw when it did not.

use std::path::{Path, PathBuf};

use clawbridge_fixtures::mock_model::MockModel;
use clawbridge_fixtures::peers::openclaw::{Harness, OpenClawHome};
use clawbridge_fixtures::peers::{Sandbox, describe_requests, peer_or_skip};
use serde_json::Value;

/// Node 24 and OpenClaw's CLI entry (`openclaw.mjs`): what runs OpenClaw, whatever the harness.
#[derive(Debug)]
pub struct OpenClawPeers {
    /// Node 24.
    pub node: PathBuf,
    /// OpenClaw's CLI entry.
    pub openclaw: PathBuf,
}

impl OpenClawPeers {
    /// Both peers, or `None` after a printed skip ([`peer_or_skip`]: a panic instead under
    /// `CLAWBRIDGE_REQUIRE_PEERS=1`). Node is looked up first, as the tests always did.
    pub fn or_skip() -> Option<Self> {
        let node = peer_or_skip("node")?;
        let openclaw = peer_or_skip("openclaw")?;
        Some(Self { node, openclaw })
    }

    /// The harness's own peer binary (`codex`, `claude`) and both OpenClaw peers, looked up in that
    /// order, or `None` as [`or_skip`](Self::or_skip) says.
    pub fn with_peer(name: &str) -> Option<(PathBuf, Self)> {
        let binary = peer_or_skip(name)?;
        Some((binary, Self::or_skip()?))
    }

    /// [`OpenClawHome::new`] in `sandbox` for `harness` against `mock`, whose plugin starts the
    /// `clawbridge` this test target was built with (not one found on PATH).
    pub fn home<'a>(&self, sandbox: &'a Sandbox, harness: Harness, mock: &MockModel) -> OpenClawHome<'a> {
        OpenClawHome::new(&self.node, &self.openclaw, bridge_bin(), sandbox, harness, mock)
    }
}

/// This test target's `clawbridge` executable.
pub fn bridge_bin() -> &'static Path {
    Path::new(env!("CARGO_BIN_EXE_clawbridge"))
}

/// An `agent exec` answer and every request the mock got, for a failure message.
pub fn describe_exec(exec: &Value, mock: &MockModel) -> String {
    format!("exec: {exec:#}\nmock saw:\n{}", describe_requests(&mock.requests()))
}

/// Asserts that an `agent exec` answer says `ok: true`; otherwise fails with
/// [`describe_exec`], at the caller's line.
#[track_caller]
pub fn assert_exec_ok(exec: &Value, mock: &MockModel) {
    assert_eq!(exec["ok"], true, "{}", describe_exec(exec, mock));
}
