//! The full path through the product's real `clawbridge serve` process: this bench is the host on
//! its stdio, as the OpenClaw plugin is. It sends `initialize` and one `attempt/run` on the
//! backend's harness, reads every line serve writes (each `attempt/event` notification parsed), and
//! acknowledges every `host/transcript/append` as appended; serve runs the replay peer as the
//! backend's executable. Timed from spawning serve to the `attempt/run` answer: the process start,
//! the handshake and the peer's spawn are in it, as they are in `clawbridge run`'s rows.

use std::io::{BufRead, BufReader, BufWriter, Write};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, anyhow, bail};
use serde::Deserialize;
use serde_json::value::RawValue;

use super::Setup;
use super::generate::Generated;
use super::session;

/// One line serve writes, as a host reads it.
#[derive(Deserialize)]
struct Line<'a> {
    #[serde(default, borrow)]
    id: Option<&'a RawValue>,
    #[serde(default, borrow)]
    method: Option<&'a str>,
    #[serde(default, borrow)]
    params: Option<&'a RawValue>,
    #[serde(default, borrow)]
    result: Option<&'a RawValue>,
    #[serde(default, borrow)]
    error: Option<&'a RawValue>,
}

/// The part of an append a host answers with.
#[derive(Deserialize)]
struct Append<'a> {
    #[serde(borrow)]
    messages: Vec<AppendMessage<'a>>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct AppendMessage<'a> {
    #[serde(borrow)]
    idempotency_key: std::borrow::Cow<'a, str>,
}

/// The harness serve runs `backend` as.
fn harness(backend: &str) -> anyhow::Result<(&'static str, &'static str)> {
    match backend {
        "codex" => Ok(("clawbridge-codex", "CLAWBRIDGE_CODEX_BIN")),
        "claude" => Ok(("clawbridge-claude", "CLAWBRIDGE_CLAUDE_BIN")),
        other => Err(anyhow!("no serve-process row for the `{other}` backend")),
    }
}

/// One attempt of `generated` on `backend` through a `clawbridge serve` process; its time and the
/// `attempt/event` notifications the host read.
pub fn run(ctx: &Setup<'_>, backend: &str, generated: &Generated) -> anyhow::Result<(Duration, u64)> {
    let (harness_id, bin_variable) = harness(backend)?;
    let role = [std::ffi::OsStr::new("replay"), generated.recording.as_os_str()];
    let program = session::peer_program(ctx.work, &format!("serve-{backend}"), ctx.me, &role)?;
    let state = tempfile::Builder::new().prefix("serve-state-").tempdir_in(ctx.work)?;
    let config = ctx.work.join("serve-empty-config.toml");
    std::fs::write(&config, "")?;
    let started = Instant::now();
    let mut child = Command::new(ctx.product)
        .arg("serve")
        .env("CLAWBRIDGE_STATE_DIR", state.path())
        .env("CLAWBRIDGE_CONFIG", &config)
        .env(bin_variable, &program)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .with_context(|| format!("spawning {} serve", ctx.product.display()))?;
    let mut input = BufWriter::new(child.stdin.take().ok_or_else(|| anyhow!("no stdin pipe"))?);
    let mut output = BufReader::with_capacity(1 << 16, child.stdout.take().ok_or_else(|| anyhow!("no stdout pipe"))?);
    let attempt = serde_json::json!({"jsonrpc": "2.0", "id": 2, "method": "attempt/run", "params": {
        "attemptId": format!("bench-serve-{backend}"), "harnessId": harness_id, "sessionId": "bench-serve",
        "prompt": "bench the stream", "workspaceDir": ctx.work.display().to_string()}});
    writeln!(
        input,
        r#"{{"jsonrpc":"2.0","id":1,"method":"initialize","params":{{"protocolVersion":{version},"host":{{"name":"bench","version":"0"}},"capabilities":{{"approvals":true,"toolTerminals":true,"transcriptAppend":true}}}}}}"#,
        version = clawbridge_protocol::host::PROTOCOL_VERSION
    )?;
    writeln!(input, "{attempt}")?;
    input.flush()?;
    let mut line = String::new();
    let mut events = 0u64;
    let mut appended = 0u64;
    let outcome = loop {
        line.clear();
        if output.read_line(&mut line)? == 0 {
            break Err(anyhow!("serve closed its stdout before answering attempt/run"));
        }
        let seen: Line<'_> = serde_json::from_str(&line).context("serve wrote a line that is not JSON-RPC")?;
        match (seen.method, seen.id) {
            (Some("attempt/event"), None) => events += 1,
            (Some("host/transcript/append"), Some(id)) => {
                let params = seen.params.ok_or_else(|| anyhow!("an append without params"))?;
                let append: Append<'_> = serde_json::from_str(params.get()).context("an append's messages")?;
                let entries: Vec<serde_json::Value> = append
                    .messages
                    .iter()
                    .map(|m| {
                        appended += 1;
                        serde_json::json!({"idempotencyKey": m.idempotency_key, "appended": true, "messageId": format!("e{appended}")})
                    })
                    .collect();
                let answer = serde_json::json!({"jsonrpc": "2.0", "id": serde_json::from_str::<serde_json::Value>(id.get())?, "result": {"entries": entries}});
                writeln!(input, "{answer}")?;
                input.flush()?;
            }
            // What the plugin answers when no observer is registered: nothing to resolve.
            (Some("host/toolTerminal/observe"), Some(id)) => {
                writeln!(input, r#"{{"jsonrpc":"2.0","id":{},"result":{{}}}}"#, id.get())?;
                input.flush()?;
            }
            (Some(method), Some(id)) => {
                writeln!(
                    input,
                    r#"{{"jsonrpc":"2.0","id":{},"error":{{"code":-32601,"message":"the bench host has no {method}"}}}}"#,
                    id.get()
                )?;
                input.flush()?;
            }
            (Some(_), None) => {}
            (None, Some(id)) if id.get() == "2" => break Ok(seen.result.map(|r| r.get().to_string())),
            (None, _) => {
                if let Some(error) = seen.error {
                    bail!("serve answered with an error: {}", error.get());
                }
            }
        }
    };
    let elapsed = started.elapsed();
    drop(input);
    let _ = child.wait();
    let result = outcome?.ok_or_else(|| anyhow!("attempt/run was answered without a result"))?;
    let result: serde_json::Value = serde_json::from_str(&result)?;
    if result["terminal"]["kind"] != "ok" {
        bail!("the serve attempt on {backend} did not end ok: {}", result["terminal"]);
    }
    if appended < generated.tool_calls * 2 {
        bail!("the host acknowledged {appended} transcript rows for {} tool calls", generated.tool_calls);
    }
    Ok((elapsed, events))
}
