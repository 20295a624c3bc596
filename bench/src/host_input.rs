//! Worst host input: the peak resident set (`VmHWM`) of the product's `clawbridge serve` while a
//! host sends it the inputs that cost the most memory to read (docs/host-protocol.md#limits), against
//! the resident set of the same process idle after `initialize`, measured in the same run.
//!
//! 1. One request of tiny values (`[1,1,1,…]`, 60 MB) that is valid JSON but no valid `attempt/run`.
//! 2. Many `attempt/run`s at once (64), each with a 60 MB unknown member (at the method's cap),
//!    running on the demo harness; one line over the cap; and attempts with 60 MB prompts, which the
//!    input budget admits only while their sum fits (the rest are refused with `-32035`).
//! 3. Every attempt cancelled and ended: the resident set (`VmRSS`) once they are gone.
//!
//! Each phase's peak is its own: the peak is reset between phases (`/proc/<pid>/clear_refs`), or
//! the figure is the peak since start (said in the row's note) where the kernel refuses that.

use std::collections::HashMap;
use std::io::{BufRead, BufReader, BufWriter, Write};
use std::path::Path;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use anyhow::{Context, bail};
use clawbridge_protocol::host::limits;
use serde::Deserialize;

use super::report::{Report, Row, Target};
use super::{Scenario, Setup, sys};

const MIB: f64 = 1024.0 * 1024.0;

/// The bounds the phases are judged against, above the idle anchor (docs/host-protocol.md#limits,
/// BENCHMARKS.md): reading one line holds it in the codec's buffer (which may grow to twice the
/// line while it fills), the line as a string and what its params decode to: four lines' worth.
fn one_line_bound() -> f64 {
    (limits::LINE_READ_COPIES * limits::MAX_LINE_BYTES) as f64
}

/// How many times a running attempt holds its input while its turn starts
/// ([`limits::ATTEMPT_INPUT_COPIES`]: the turn's input, the native request's copy and its line).
const INPUT_COPIES: f64 = limits::ATTEMPT_INPUT_COPIES as f64;

/// Running attempts add at most their inputs (bounded by the input budget), each held
/// [`INPUT_COPIES`] times, and a few MiB each (their pipelines and native sessions) to one line
/// being read.
fn running_bound(attempts: usize) -> f64 {
    one_line_bound() + INPUT_COPIES * limits::ATTEMPT_INPUT_BUDGET_BYTES as f64 + attempts as f64 * 2.0 * MIB
}

/// After the attempts ended: back within one line of idle.
fn after_bound() -> f64 {
    limits::MAX_LINE_BYTES as f64
}

/// Measures the phases on the product's `serve` and adds their rows.
pub async fn run(ctx: &Setup<'_>, report: &mut Report) -> anyhow::Result<()> {
    let product = ctx.product.to_path_buf();
    if !product.is_file() {
        bail!(
            "no clawbridge executable at {}: build it (`cargo build --release -p clawbridge`) or pass --clawbridge",
            product.display()
        );
    }
    let state = ctx.work.join("host-input-state");
    let workspace = ctx.work.to_path_buf();
    let sizes = ctx.sizes;
    let figures = tokio::task::spawn_blocking(move || {
        measure(&product, &state, &workspace, sizes.host_input_bytes, sizes.host_input_attempts)
    })
    .await??;
    let s = Scenario::HostInput;
    let idle = figures.idle_rss as f64 / MIB;
    let reset_note =
        (!figures.peak_reset).then_some("the kernel refused to reset the peak: this is the peak since start");
    let with_reset = |row: Row| match reset_note {
        Some(note) => row.with_note(note),
        None => row,
    };
    report.push(Row::info(s, "serve idle after initialize (RSS, the anchor)", idle, "MiB"));
    let mb = figures.bytes as f64 / 1e6;
    report.push(with_reset(Row::judged(
        s,
        format!("peak RSS reading one {mb:.0} MB request of tiny values"),
        figures.one_request_peak as f64 / MIB,
        "MiB",
        Target::AtMost(idle + one_line_bound() / MIB),
    )));
    report.push(with_reset(
        Row::judged(
            s,
            format!(
                "peak RSS, {} attempts: {} with {mb:.0} MB unknown members, {} with {mb:.0} MB prompts",
                figures.attempts + figures.prompt_admitted + figures.prompt_refused,
                figures.attempts,
                figures.prompt_admitted + figures.prompt_refused
            ),
            figures.running_peak as f64 / MIB,
            "MiB",
            Target::AtMost(idle + running_bound(figures.attempts + figures.prompt_admitted) / MIB),
        )
        .with_note(format!(
            "{} of {} attempts still running when cancelled; {} with big prompts admitted, {} refused by the budget; \
             the line over the cap refused: {}",
            figures.cancelled_running,
            figures.attempts + figures.prompt_admitted,
            figures.prompt_admitted,
            figures.prompt_refused,
            figures.over_cap_refused
        )),
    ));
    report.push(Row::info(
        s,
        "RSS once every attempt was cancelled and ended (VmRSS)",
        figures.after_rss as f64 / MIB,
        "MiB",
    ));
    report.push(Row::info(s, "of which given back lazily (LazyFree)", figures.after_lazy_free as f64 / MIB, "MiB"));
    report.push(Row::judged(
        s,
        "memory held once every attempt was cancelled and ended (VmRSS - LazyFree)",
        figures.after_rss.saturating_sub(figures.after_lazy_free) as f64 / MIB,
        "MiB",
        Target::AtMost(idle + after_bound() / MIB),
    ));
    Ok(())
}

/// What one run measured.
#[derive(Debug)]
struct Figures {
    /// The size of each big member, in bytes.
    bytes: usize,
    /// How many attempts carried an unknown member (the others a big prompt).
    attempts: usize,
    /// `VmRSS` idle after `initialize`.
    idle_rss: u64,
    /// `VmHWM` while the one request of tiny values was read and answered.
    one_request_peak: u64,
    /// `VmHWM` while the attempts were sent and ran.
    running_peak: u64,
    /// `VmRSS` after every attempt ended.
    after_rss: u64,
    /// What of `after_rss` was given back lazily ([`lazy_free`]): the kernel's to take, not held.
    after_lazy_free: u64,
    /// Whether the peak could be reset between phases.
    peak_reset: bool,
    /// Attempts the cancels found running.
    cancelled_running: usize,
    /// Attempts with big prompts the budget admitted.
    prompt_admitted: usize,
    /// Attempts with big prompts it refused (`-32035`).
    prompt_refused: usize,
    /// Whether the line over the cap was refused.
    over_cap_refused: bool,
}

/// The part of an answer the probe reads (everything else of the line is skipped).
#[derive(Deserialize)]
struct Answer {
    /// The request it answers (`None` for notifications).
    #[serde(default)]
    id: Option<serde_json::Value>,
    /// Present on a notification.
    #[serde(default)]
    method: Option<String>,
    /// The error, if it is one.
    #[serde(default)]
    error: Option<AnswerError>,
    /// A cancel's status, or an attempt's result.
    #[serde(default)]
    result: Option<AnswerResult>,
}

#[derive(Deserialize)]
struct AnswerError {
    /// Its code.
    code: i64,
}

#[derive(Deserialize)]
struct AnswerResult {
    /// `attempt/cancel`'s status.
    #[serde(default)]
    status: Option<String>,
}

/// What the reader thread reports of each answer: its id (as JSON text) and error code.
type Seen = (String, Option<i64>, Option<String>);

/// The running `serve`, its input and the answers its reader thread saw.
struct Serve {
    /// The process.
    child: Child,
    /// Its stdin.
    input: BufWriter<ChildStdin>,
    /// Answers as they arrive.
    answers: mpsc::Receiver<Seen>,
    /// Answers read while waiting for others, by id.
    early: HashMap<String, Seen>,
}

impl Serve {
    fn start(product: &Path, state: &Path) -> anyhow::Result<Serve> {
        let mut child = Command::new(product)
            .arg("serve")
            .env_clear()
            .env("CLAWBRIDGE_STATE_DIR", state)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .context("spawning clawbridge serve")?;
        let input = BufWriter::with_capacity(1 << 20, child.stdin.take().context("no stdin")?);
        let output = BufReader::new(child.stdout.take().context("no stdout")?);
        let (tx, answers) = mpsc::channel();
        std::thread::spawn(move || {
            for line in output.lines() {
                let Ok(line) = line else { break };
                let Ok(answer) = serde_json::from_str::<Answer>(&line) else { continue };
                if answer.method.is_some() {
                    continue;
                }
                let id = answer.id.map(|id| id.to_string()).unwrap_or_else(|| "null".into());
                let status = answer.result.and_then(|r| r.status);
                if tx.send((id, answer.error.map(|e| e.code), status)).is_err() {
                    break;
                }
            }
        });
        Ok(Serve { child, input, answers, early: HashMap::new() })
    }

    fn pid(&self) -> u32 {
        self.child.id()
    }

    fn write(&mut self, parts: &[&[u8]]) -> anyhow::Result<()> {
        for part in parts {
            self.input.write_all(part).context("writing to serve")?;
        }
        self.input.write_all(b"\n")?;
        Ok(())
    }

    fn flush(&mut self) -> anyhow::Result<()> {
        self.input.flush().context("writing to serve")
    }

    /// Waits for the answer to `id` (its JSON text).
    fn answer(&mut self, id: &str) -> anyhow::Result<Seen> {
        self.flush()?;
        if let Some(seen) = self.early.remove(id) {
            return Ok(seen);
        }
        loop {
            let seen = self.answers.recv_timeout(Duration::from_secs(600)).context("serve stopped answering")?;
            if seen.0 == id {
                return Ok(seen);
            }
            self.early.insert(seen.0.clone(), seen);
        }
    }
}

fn request(id: u64, method: &str, params: &serde_json::Value) -> String {
    serde_json::json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}).to_string()
}

/// The `attempt/run` params of attempt `n`, as the text of an object without its closing brace.
fn attempt_head(n: usize, workspace: &Path, prompt: &str) -> String {
    let params = serde_json::json!({"attemptId": format!("worst-{n}"), "harnessId": "clawbridge-demo",
        "sessionId": format!("worst-s-{n}"), "prompt": prompt, "workspaceDir": workspace.display().to_string()});
    let text = params.to_string();
    text[..text.len() - 1].to_string()
}

/// Resets the process's peak resident set; whether the kernel allowed it.
fn reset_peak(pid: u32) -> bool {
    std::fs::write(format!("/proc/{pid}/clear_refs"), "5").is_ok()
}

fn hwm(pid: u32) -> u64 {
    sys::status_bytes(Some(pid), "VmHWM").unwrap_or(0)
}

fn rss(pid: u32) -> u64 {
    sys::status_bytes(Some(pid), "VmRSS").unwrap_or(0)
}

/// The process's resident memory it has given back with `MADV_FREE` (`LazyFree` in
/// `/proc/<pid>/smaps_rollup`): still counted in `VmRSS` until the kernel needs it, then taken
/// without a write. mimalloc frees a huge block (a big line) this way when a thread other than the
/// one that allocated it frees it; only the owner's next collection returns it for good.
fn lazy_free(pid: u32) -> u64 {
    let Ok(text) = std::fs::read_to_string(format!("/proc/{pid}/smaps_rollup")) else { return 0 };
    let Some(line) = text.lines().find(|l| l.starts_with("LazyFree:")) else { return 0 };
    line["LazyFree:".len()..].trim().trim_end_matches("kB").trim().parse::<u64>().map_or(0, |kb| kb * 1024)
}

fn measure(product: &Path, state: &Path, workspace: &Path, bytes: usize, attempts: usize) -> anyhow::Result<Figures> {
    let mut serve = Serve::start(product, state)?;
    let pid = serve.pid();
    // Approvals served but never answered: the demo's attempts wait for one and keep running until
    // they are cancelled, so every attempt holds what it keeps at once.
    let init = format!(
        r#"{{"jsonrpc":"2.0","id":1,"method":"initialize","params":{{"protocolVersion":{},"host":{{"name":"bench","version":"0"}},"capabilities":{{"approvals":true}}}}}}"#,
        clawbridge_protocol::host::PROTOCOL_VERSION
    );
    serve.write(&[init.as_bytes()])?;
    if serve.answer("1")?.1.is_some() {
        bail!("serve refused initialize");
    }
    std::thread::sleep(Duration::from_millis(300));
    let idle_rss = rss(pid);

    // 1. One request of tiny values.
    let mut peak_reset = reset_peak(pid);
    let tiny = "1,".repeat(bytes / 2);
    let head = r#"{"jsonrpc":"2.0","id":2,"method":"attempt/run","params":{"attemptId":"tiny","unknown":["#;
    serve.write(&[head.as_bytes(), tiny.as_bytes(), b"1]}}"])?;
    let (_, code, _) = serve.answer("2")?;
    if code.is_none() {
        bail!("serve accepted an attempt without its fields");
    }
    serve.write(&[request(3, "harness/list", &serde_json::json!({})).as_bytes()])?;
    serve.answer("3")?;
    let one_request_peak = hwm(pid);

    // 2. The attempts, each with an unknown member at the cap; one line over the cap; big prompts.
    peak_reset &= reset_peak(pid);
    let unknown = [br#","unknown":["#.as_slice(), tiny.as_bytes(), b"1]}"].concat();
    // Enough attempts with big prompts to fill the budget and go past it; with the others they are
    // `attempts` in all, so the concurrency limit never refuses one.
    let with_prompt = ((limits::ATTEMPT_INPUT_BUDGET_BYTES / bytes.max(1)) + 4).min(attempts / 2);
    let with_unknown = attempts - with_prompt;
    let mut next_id = 100u64;
    let mut runs = Vec::new();
    for n in 0..with_unknown {
        let head = format!(r#"{{"jsonrpc":"2.0","id":{next_id},"method":"attempt/run","params":"#);
        serve.write(&[head.as_bytes(), attempt_head(n, workspace, "Run echo hi").as_bytes(), &unknown, b"}"])?;
        runs.push((next_id, format!("worst-{n}")));
        next_id += 1;
    }
    let over = "1,".repeat(limits::MAX_LINE_BYTES / 2 + 1024);
    let over_id = next_id;
    next_id += 1;
    serve.write(&[
        format!(r#"{{"jsonrpc":"2.0","id":{over_id},"method":"attempt/run","params":{{"unknown":["#).as_bytes(),
        over.as_bytes(),
        b"1]}}",
    ])?;
    drop(over);
    let prompt = "p".repeat(bytes);
    let mut prompt_runs = Vec::new();
    for n in with_unknown..attempts {
        let line = request(next_id, "attempt/run", &serde_json::json!({}));
        let head = &line[..line.len() - 3];
        serve.write(&[head.as_bytes(), attempt_head(n, workspace, &prompt).as_bytes(), b"}}"])?;
        prompt_runs.push((next_id, format!("worst-{n}")));
        next_id += 1;
    }
    drop(prompt);
    serve.flush()?;
    // A `-32600` with `id: null` answers the line over the cap (its id was never read).
    let (_, over_code, _) = serve.answer("null")?;
    let over_cap_refused = over_code == Some(-32600);
    // Let the attempts get going; the refused ones are answered by then.
    std::thread::sleep(Duration::from_secs(2));
    while let Ok(seen) = serve.answers.try_recv() {
        serve.early.insert(seen.0.clone(), seen);
    }
    let refused = |id: &u64, serve: &Serve| matches!(serve.early.get(&id.to_string()), Some((_, Some(-32035), _)));
    let prompt_refused = prompt_runs.iter().filter(|(id, _)| refused(id, &serve)).count();
    let prompt_admitted = prompt_runs.len() - prompt_refused;
    let still_admitted: Vec<(u64, String)> =
        runs.into_iter().chain(prompt_runs).filter(|(id, _)| !refused(id, &serve)).collect();
    for (id, _) in &still_admitted {
        if let Some((_, Some(code), _)) = serve.early.get(&id.to_string()) {
            bail!("attempt/run {id} was refused with {code}, not by the budget");
        }
    }
    let mut cancels = Vec::new();
    for (_, attempt) in &still_admitted {
        let line = request(next_id, "attempt/cancel", &serde_json::json!({"attemptId": attempt}));
        serve.write(&[line.as_bytes()])?;
        cancels.push(next_id);
        next_id += 1;
    }
    let mut cancelled_running = 0;
    for id in cancels {
        if serve.answer(&id.to_string())?.2.as_deref() == Some("cancelling") {
            cancelled_running += 1;
        }
    }
    let running_peak = hwm(pid);

    // 3. Every attempt ended.
    for (id, _) in &still_admitted {
        serve.answer(&id.to_string())?;
    }
    std::thread::sleep(Duration::from_secs(1));
    let after_rss = rss(pid);
    let after_lazy_free = lazy_free(pid);

    serve.write(&[request(next_id, "shutdown", &serde_json::json!({})).as_bytes()])?;
    serve.answer(&next_id.to_string())?;
    drop(serve.input);
    let _ = serve.child.wait();
    Ok(Figures {
        bytes,
        attempts: with_unknown,
        idle_rss,
        one_request_peak,
        running_peak,
        after_rss,
        after_lazy_free,
        peak_reset,
        cancelled_running,
        prompt_admitted,
        prompt_refused,
        over_cap_refused,
    })
}
