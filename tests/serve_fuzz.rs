//! The serve fuzz harness: a running `clawbridge serve` (the real binary, its demo backend as the
//! only runnable one) driven over its stdio with seeded, schema-derived host input
//! (`clawbridge_fixtures::host_fuzz`): valid messages of every method, structured mutations,
//! garbage, bursts, interleavings, and late, duplicated or malformed answers to its `host/*`
//! requests. Each server lives for a seeded number of inputs, then must still serve a final valid
//! request, and exits when its stdin closes.
//!
//! Checked continuously, each a named category that is reported on its own (a run reports every
//! category that failed, with examples): see [`Category`].
//!
//! `CLAWBRIDGE_SERVE_FUZZ_SEED` (printed; random when unset) and `CLAWBRIDGE_SERVE_FUZZ_SECS`
//! (default 10, so the suite's run stays short) choose the run. On failure the seed, the
//! categories and their offending inputs are written under `target/tmp/serve-fuzz/`.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use clawbridge_fixtures::host_fuzz::{self, Class, Expect, HostFuzz, Line, Schema, Want, canonical_id, raw_member};
use clawbridge_protocol::host::limits::HOST_INPUT_MEMORY_BOUND_BYTES;
use serde_json::Value;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::process::Command;
use tokio::sync::mpsc;
use tokio::task::JoinSet;

/// The bound on the server's peak RSS (VmHWM) under any host input: the bound docs/host-protocol.md
/// documents (*Limits*, [`HOST_INPUT_MEMORY_BOUND_BYTES`]: a line at the cap being read and the
/// running attempts' inputs up to the budget, which the harness's huge lines and valid
/// `attempt/run`s can both reach) above the server's idle footprint.
const RSS_BOUND_BYTES: u64 = (HOST_INPUT_MEMORY_BOUND_BYTES + IDLE_RSS_ALLOWANCE_BYTES) as u64;

/// The server's own footprint before any input (BENCHMARKS.md: 11.6 MiB idle in release; a debug
/// build is larger).
const IDLE_RSS_ALLOWANCE_BYTES: usize = 64 << 20;

/// How long the fuzzing runs unless `CLAWBRIDGE_SERVE_FUZZ_SECS` says otherwise: short, for the suite.
const DEFAULT_SECS: u64 = 10;

/// Bytes of huge lines per second of the run (their generation and parsing dominate a run's cost).
const HUGE_BYTES_PER_SEC: usize = 8 << 20;

/// Requests in flight at most before the driver waits for answers (a host that pipelines, not
/// one that floods forever without reading).
const MAX_IN_FLIGHT: usize = 64;

/// With everything sent, how long the bridge may stay silent before what is unanswered counts as
/// never answered (longer than the turn idle limit the server runs with).
const QUIET: Duration = Duration::from_secs(4);

/// The server's turn idle limit: an attempt whose fuzzed input stalls its turn ends soon.
const TURN_IDLE_MS: &str = "2500";

/// The longest any wait on the server may take before the run counts it as hung.
const HANG: Duration = Duration::from_secs(60);

/// One check of the run; each is reported separately.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Category {
    /// stderr and the log file never say "panicked".
    NoPanic,
    /// The process is alive until its stdin closes, keeps reading its input, then exits successfully.
    ProcessAlive,
    /// Every request with an id is answered, exactly once.
    AnsweredOnce,
    /// Each answer echoes its request's id byte for byte as sent.
    ExactIdEcho,
    /// A request with `id: null` is answered with `id: null`.
    NullIdAnswered,
    /// A line that cannot be parsed is answered with `-32700` and `id: null`.
    ParseErrorAnswered,
    /// JSON that is no JSON-RPC request (or has an id of the wrong type) is answered `-32600`.
    InvalidRequestAnswered,
    /// A request without `"jsonrpc":"2.0"` is refused with `-32600`.
    JsonRpcVersionEnforced,
    /// A known method with positional params is refused with `-32602`.
    PositionalParamsRefused,
    /// An unknown method is refused with `-32601`.
    UnknownMethodRefused,
    /// No answer is an internal error (`-32603`).
    NoInternalError,
    /// Every line the bridge writes is one JSON-RPC 2.0 message.
    WellFormedOutput,
    /// After all of it, a valid `harness/list` (and `shutdown`) on the same connection is served.
    FinalRequestServed,
    /// The server's VmHWM stays under [`RSS_BOUND_BYTES`].
    RssBounded,
}

impl Category {
    fn name(self) -> &'static str {
        match self {
            Self::NoPanic => "no-panic",
            Self::ProcessAlive => "process-alive",
            Self::AnsweredOnce => "answered-once",
            Self::ExactIdEcho => "exact-id-echo",
            Self::NullIdAnswered => "null-id-answered",
            Self::ParseErrorAnswered => "parse-error-answered",
            Self::InvalidRequestAnswered => "invalid-request-answered",
            Self::JsonRpcVersionEnforced => "jsonrpc-version-enforced",
            Self::PositionalParamsRefused => "positional-params-refused",
            Self::UnknownMethodRefused => "unknown-method-refused",
            Self::NoInternalError => "no-internal-error",
            Self::WellFormedOutput => "well-formed-output",
            Self::FinalRequestServed => "final-request-served",
            Self::RssBounded => "rss-bounded",
        }
    }

    /// The check a wrong answer to a line of `class` breaks.
    fn for_class(class: Class) -> Self {
        match class {
            Class::BadVersion => Self::JsonRpcVersionEnforced,
            Class::Positional => Self::PositionalParamsRefused,
            Class::UnknownMethod => Self::UnknownMethodRefused,
            Class::InvalidId | Class::NotRpc => Self::InvalidRequestAnswered,
            Class::Unparseable => Self::ParseErrorAnswered,
            Class::NullId => Self::NullIdAnswered,
            Class::Final => Self::FinalRequestServed,
            _ => Self::AnsweredOnce,
        }
    }
}

/// One failure: what happened, and the input that caused it when one line did.
struct Example {
    /// What was wrong.
    what: String,
    /// The offending input line.
    input: Option<Arc<[u8]>>,
}

/// The run's counts and failures, across every server it started.
#[derive(Default)]
struct Report {
    /// Servers started.
    servers: u32,
    /// Lines written to the servers.
    inputs: u64,
    /// Bytes written.
    input_bytes: u64,
    /// Lines that must be answered.
    requests: u64,
    /// Answers read (lines with an `id` and a result or error).
    answers: u64,
    /// The bridge's own requests (`host/*`), which the fuzzed host answered.
    bridge_requests: u64,
    /// Notifications read (`attempt/event`).
    notifications: u64,
    /// Every error code seen in an answer, with how often.
    error_codes: BTreeMap<i64, u64>,
    /// The highest VmHWM seen, in bytes.
    peak_rss: u64,
    /// Failures by category (the first few examples of each) and how many there were.
    failures: BTreeMap<Category, (u64, Vec<Example>)>,
}

impl Report {
    fn fail(&mut self, category: Category, what: String, input: Option<Arc<[u8]>>) {
        let (count, examples) = self.failures.entry(category).or_default();
        *count += 1;
        if examples.len() < 3 {
            examples.push(Example { what, input });
        }
    }
}

/// A line sent that still waits for its answer.
struct Pending {
    /// The id as written.
    raw: String,
    /// What the answer must hold.
    want: Want,
    /// The input's kind.
    class: Class,
    /// Whether an answer with `id: null` also settles it (its id may be unreadable).
    null_settles: bool,
    /// The line, for the report.
    input: Arc<[u8]>,
}

/// The answers a server owes, by canonical id (ids equal as values share a bucket, so an answer
/// whose id is equal but not byte-identical is told apart from one never sent).
#[derive(Default)]
struct Ledger {
    /// Requests with an id, not answered yet.
    by_id: HashMap<String, Vec<Pending>>,
    /// Lines owed an `id: null` answer.
    null_owed: Vec<Pending>,
    /// `id: null` answers received: their error code, `None` for a result.
    null_received: Vec<Option<i64>>,
}

impl Ledger {
    fn owe(&mut self, line: &Line, input: &Arc<[u8]>) {
        let pending = |raw: &str, want: Want, null_settles: bool| Pending {
            raw: raw.to_string(),
            want,
            class: line.class,
            null_settles,
            input: input.clone(),
        };
        match &line.expect {
            Expect::Answer { id, want } | Expect::AnswerOrNull { id, want } => {
                let null_settles = matches!(line.expect, Expect::AnswerOrNull { .. });
                let key = canonical_id(id).unwrap_or_else(|| id.clone());
                self.by_id.entry(key).or_default().push(pending(id, *want, null_settles));
            }
            Expect::NullAnswer { want } => self.null_owed.push(pending("null", *want, false)),
            Expect::Nothing => {}
        }
    }

    /// Requests still waiting, less those an `id: null` answer beyond the ones owed may have settled.
    fn in_flight(&self) -> usize {
        let spare_nulls = self.null_received.len().saturating_sub(self.null_owed.len());
        self.by_id.values().map(Vec::len).sum::<usize>().saturating_sub(spare_nulls)
    }

    fn settled(&self) -> bool {
        self.by_id.is_empty() && self.null_received.len() >= self.null_owed.len()
    }

    /// Whether a request whose id is readable still waits: its answer must come, however long the
    /// attempt takes (what `id: null` answers settle cannot be told apart, so they only get [`QUIET`]).
    fn owes_by_id(&self) -> bool {
        self.by_id.values().flatten().any(|p| !p.null_settles)
    }

    /// Takes the answer `raw_id` with `outcome` (its error code, `None` for a result).
    fn answered(&mut self, raw_id: &str, outcome: Option<i64>, answer: &str, report: &mut Report) {
        if raw_id == "null" {
            self.null_received.push(outcome);
            return;
        }
        let key = canonical_id(raw_id).unwrap_or_else(|| raw_id.to_string());
        let Some(bucket) = self.by_id.get_mut(&key) else {
            report.fail(
                Category::AnsweredOnce,
                format!("an answer to an id never sent or already answered: {}", clip(answer)),
                None,
            );
            return;
        };
        // Which of the equal ids it answers: the same text first, then one that only an answer by id
        // settles (a request whose id may be unreadable may also have had its `id: null` answer),
        // each preferring a request the answer satisfies.
        let exact = |p: &Pending| p.raw == raw_id;
        let by_id_only = |p: &Pending| !p.null_settles;
        let fits = |p: &Pending| satisfies(p.want, outcome);
        let index = [
            bucket.iter().position(|p| exact(p) && fits(p)),
            bucket.iter().position(exact),
            bucket.iter().position(|p| by_id_only(p) && fits(p)),
            bucket.iter().position(by_id_only),
        ]
        .into_iter()
        .flatten()
        .next()
        .unwrap_or(0);
        let pending = bucket.remove(index);
        if bucket.is_empty() {
            self.by_id.remove(&key);
        }
        if pending.raw != raw_id {
            report.fail(
                Category::ExactIdEcho,
                format!("sent id {} and got {raw_id} back: {}", pending.raw, clip(answer)),
                Some(pending.input.clone()),
            );
        }
        if !satisfies(pending.want, outcome) {
            report.fail(
                Category::for_class(pending.class),
                format!("{:?} input wants {:?}, got {}", pending.class, pending.want, clip(answer)),
                Some(pending.input),
            );
        }
    }

    /// Once the server is gone: whatever is still owed was never answered.
    fn close(mut self, report: &mut Report) {
        let mut received = std::mem::take(&mut self.null_received);
        // `id: null` answers cannot be told apart, so the strictest expectations take theirs first:
        // those that need one error code, then unanswered requests whose id may be unreadable,
        // then those that take any answer.
        let (strict, loose): (Vec<Pending>, Vec<Pending>) =
            std::mem::take(&mut self.null_owed).into_iter().partition(|p| !matches!(p.want, Want::Any));
        let mut take = |owed: Pending, received: &mut Vec<Option<i64>>| match received
            .iter()
            .position(|&outcome| satisfies(owed.want, outcome))
        {
            Some(at) => drop(received.swap_remove(at)),
            None => report.fail(
                Category::for_class(owed.class),
                format!("{:?} input got no `id: null` answer that is {:?}", owed.class, owed.want),
                Some(owed.input),
            ),
        };
        for owed in strict {
            take(owed, &mut received);
        }
        let mut unanswered = Vec::new();
        let mut by_id: Vec<Pending> = self.by_id.into_values().flatten().collect();
        by_id.sort_by_key(|p| matches!(p.want, Want::Any));
        for pending in by_id {
            match received.iter().position(|&outcome| pending.null_settles && satisfies(pending.want, outcome)) {
                Some(at) => drop(received.swap_remove(at)),
                None => unanswered.push(pending),
            }
        }
        for owed in loose {
            take(owed, &mut received);
        }
        for pending in unanswered {
            let category =
                if pending.class == Class::Final { Category::FinalRequestServed } else { Category::AnsweredOnce };
            report.fail(
                category,
                format!("{:?} request with id {} never answered", pending.class, pending.raw),
                Some(pending.input),
            );
        }
        for outcome in received {
            report.fail(Category::AnsweredOnce, format!("an extra `id: null` answer ({outcome:?})"), None);
        }
    }
}

fn satisfies(want: Want, outcome: Option<i64>) -> bool {
    match (want, outcome) {
        (Want::Any, _) | (Want::Result, None) => true,
        (Want::Error(codes), Some(code)) => codes.is_empty() || codes.contains(&code),
        _ => false,
    }
}

/// The first 300 characters of `text`.
fn clip(text: &str) -> String {
    match text.char_indices().nth(300) {
        Some((at, _)) => format!("{}… ({} bytes)", &text[..at], text.len()),
        None => text.to_string(),
    }
}

/// The run's settings.
struct Settings {
    /// What every input derives from: printed, so a failing run can be replayed.
    seed: u64,
    /// How long to keep sending inputs (each server then still gets its final requests and EOF).
    secs: u64,
}

impl Settings {
    fn from_env() -> Self {
        let number = |name: &str| {
            std::env::var(name)
                .ok()
                .map(|v| v.trim().parse::<u64>().unwrap_or_else(|_| panic!("{name}={v} is not a number")))
        };
        Self {
            seed: number("CLAWBRIDGE_SERVE_FUZZ_SEED").unwrap_or_else(host_fuzz::random_seed),
            secs: number("CLAWBRIDGE_SERVE_FUZZ_SECS").unwrap_or(DEFAULT_SECS),
        }
    }
}

fn repo_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serve_survives_fuzzed_host_input() {
    let settings = Settings::from_env();
    println!(
        "serve fuzz: seed {} for {} s (CLAWBRIDGE_SERVE_FUZZ_SEED={} CLAWBRIDGE_SERVE_FUZZ_SECS={} replays it)",
        settings.seed, settings.secs, settings.seed, settings.secs
    );
    let schema = Schema::load(&repo_root().join("docs/host-protocol.schema.json")).expect("the protocol's schema");
    let workspace = tempfile::tempdir().unwrap();
    let huge_budget =
        HUGE_BYTES_PER_SEC.saturating_mul(usize::try_from(settings.secs).unwrap_or(usize::MAX)).max(64 << 20);
    let mut fuzz = HostFuzz::new(settings.seed, schema, workspace.path().display().to_string(), huge_budget);
    let mut report = Report::default();
    let codex = fake_codex(workspace.path());
    let started = Instant::now();
    let deadline = started + Duration::from_secs(settings.secs);
    while report.servers == 0 || Instant::now() < deadline {
        run_server(&mut fuzz, &mut report, deadline, &codex).await;
    }
    let elapsed = started.elapsed();

    let codes: Vec<String> = report.error_codes.iter().map(|(code, n)| format!("{code}×{n}")).collect();
    let failed: Vec<String> = report.failures.iter().map(|(c, (n, _))| format!("{} ({n})", c.name())).collect();
    let summary = format!(
        "serve fuzz summary: seed {}, {:.1} s, {} servers, {} inputs ({:.1} MiB), {} requests, {} answers, \
         {} bridge requests answered, {} notifications, {} distinct error codes [{}], peak VmHWM {:.1} MiB \
         (bound {} MiB), failed: [{}]",
        settings.seed,
        elapsed.as_secs_f64(),
        report.servers,
        report.inputs,
        report.input_bytes as f64 / f64::from(1 << 20),
        report.requests,
        report.answers,
        report.bridge_requests,
        report.notifications,
        report.error_codes.len(),
        codes.join(", "),
        report.peak_rss as f64 / f64::from(1 << 20),
        RSS_BOUND_BYTES >> 20,
        failed.join(", ")
    );
    println!("{summary}");
    if !report.failures.is_empty() {
        let file = write_failures(&settings, &summary, &report);
        let mut message = format!("{summary}\nfailures written to {}\n", file.display());
        for (category, (count, examples)) in &report.failures {
            message.push_str(&format!("- {} ({count}):\n", category.name()));
            for example in examples {
                message.push_str(&format!("    {}\n", example.what));
            }
        }
        panic!("{message}");
    }
}

/// Writes the seed, the summary and every category's examples to `target/tmp/serve-fuzz/`, each
/// category's first offending input beside it in full (a line to feed `clawbridge serve`).
fn write_failures(settings: &Settings, summary: &str, report: &Report) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("serve-fuzz");
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join(format!("failure-{}.txt", settings.seed));
    let mut text = format!(
        "seed {seed}; replay: CLAWBRIDGE_SERVE_FUZZ_SEED={seed} CLAWBRIDGE_SERVE_FUZZ_SECS={secs} cargo test --test serve_fuzz\n{summary}\n",
        seed = settings.seed,
        secs = settings.secs
    );
    for (category, (count, examples)) in &report.failures {
        text.push_str(&format!("\n## {} ({count})\n", category.name()));
        for (i, example) in examples.iter().enumerate() {
            text.push_str(&format!("- {}\n", example.what));
            if let Some(input) = &example.input {
                text.push_str(&format!("  input ({} bytes): {}\n", input.len(), clip(&String::from_utf8_lossy(input))));
                if i == 0 {
                    let path = dir.join(format!("failure-{}-{}.input", settings.seed, category.name()));
                    std::fs::write(&path, input).unwrap();
                    text.push_str(&format!("  whole input: {}\n", path.display()));
                }
            }
        }
    }
    std::fs::write(&file, text).unwrap();
    file
}

/// The server under test and the driver's ends of its pipes.
struct Server {
    /// The `clawbridge serve` process: alive until its stdin closes, then it must exit 0.
    child: tokio::process::Child,
    /// Chunks for its stdin (one write each); closing every sender closes stdin.
    input: mpsc::Sender<Vec<u8>>,
    /// Its stdout, one line at a time; ends at EOF.
    output: mpsc::Receiver<Vec<u8>>,
    /// The first stderr lines that mention a panic.
    panics: Arc<Mutex<Vec<String>>>,
    /// The stderr reader, done at EOF.
    stderr: tokio::task::JoinHandle<()>,
    /// Answers written after a delay.
    delayed: JoinSet<()>,
    /// What it owes.
    ledger: Ledger,
    /// The largest line sent, the likely culprit of a high RSS.
    largest: Option<Arc<[u8]>>,
    /// Its VmHWM, sampled until it exits (the peak of a line it parses after the last input is
    /// seen too).
    peak_rss: Arc<std::sync::atomic::AtomicU64>,
    /// Its state dir (and log file).
    state: tempfile::TempDir,
    /// Where every line both ways goes when `CLAWBRIDGE_SERVE_FUZZ_TRANSCRIPT` names a file (each
    /// clipped to 2 KiB): what a failure needs to be understood.
    transcript: Option<Arc<Mutex<std::fs::File>>>,
}

/// Appends one line to the transcript, if one is kept.
fn note(transcript: Option<&Arc<Mutex<std::fs::File>>>, direction: &str, bytes: &[u8]) {
    use std::io::Write;
    if let Some(file) = transcript {
        let text = String::from_utf8_lossy(bytes);
        let _ = writeln!(file.lock().unwrap(), "{direction} {}", clip(text.trim_end()));
    }
}

/// A launcher for `CLAWBRIDGE_CODEX_BIN`: the scripted fake agent playing the recorded Codex turn
/// that calls the host tool `lookup_weather` (fixtures/recordings/codex/dynamic-tool.jsonl), so
/// attempts on `clawbridge-codex` send `host/tool/execute` too. It answers the bridge's
/// `--version` probe and sets the fake's variables itself (the bridge scrubs Codex's environment).
fn fake_codex(dir: &Path) -> PathBuf {
    let recording = std::fs::read_to_string(repo_root().join("fixtures/recordings/codex/dynamic-tool.jsonl")).unwrap();
    let entries: Vec<Value> = recording.lines().skip(1).map(|l| serde_json::from_str(l).unwrap()).collect();
    let mut answers = serde_json::Map::new();
    let mut after_turn_start = Vec::new();
    let mut turn_started = false;
    for (i, entry) in entries.iter().enumerate() {
        let (dir, message) = (entry["dir"].as_str().unwrap_or(""), &entry["json"]);
        let method = message["method"].as_str();
        if dir == "to_agent" && message.get("id").is_some() {
            if let Some(method) = method.filter(|m| *m != "initialize") {
                let answer = entries[i + 1..].iter().find(|e| {
                    e["dir"] == "from_agent" && e["json"]["id"] == message["id"] && e["json"].get("result").is_some()
                });
                if let Some(answer) = answer {
                    answers.insert(method.to_string(), answer["json"]["result"].clone());
                }
            }
            turn_started |= method == Some("turn/start");
        } else if turn_started && dir == "from_agent" && method.is_some() {
            // Its notifications and its host tool call, in order; the tool's answer is not waited for.
            after_turn_start.push(serde_json::json!({"send": message}));
        }
    }
    let script = dir.join("turn.json");
    let after = serde_json::json!({"turn/start": after_turn_start});
    std::fs::write(&script, serde_json::json!({"answers": answers, "after": after}).to_string()).unwrap();
    clawbridge_fixtures::peers::codex::fake_codex_launcher(dir, "codex", &script)
}

fn start_server(codex: &Path) -> Server {
    let state = tempfile::tempdir().unwrap();
    // Another build (a release binary, another checkout's) can be fuzzed in its place.
    let program =
        std::env::var_os("CLAWBRIDGE_SERVE_FUZZ_BIN").unwrap_or_else(|| env!("CARGO_BIN_EXE_clawbridge").into());
    let mut child = Command::new(program)
        .envs(clawbridge_fixtures::no_user_config())
        .arg("serve")
        .env("CLAWBRIDGE_STATE_DIR", state.path())
        // The demo and a scripted Codex run, Claude cannot: no model, no network, the same on
        // every machine.
        .env("CLAWBRIDGE_CODEX_BIN", codex)
        // The scripted agent plays one thread per process.
        .env("CLAWBRIDGE_CODEX_SERVER", "per-attempt")
        .env("CLAWBRIDGE_CLAUDE_BIN", "/nonexistent/clawbridge-fuzz/claude")
        .env("CLAWBRIDGE_TURN_IDLE_TIMEOUT_MS", TURN_IDLE_MS)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("clawbridge serve starts");
    let pid = child.id().expect("it runs");
    let mut stdin = child.stdin.take().unwrap();
    let (input, mut chunks) = mpsc::channel::<Vec<u8>>(4);
    tokio::spawn(async move {
        while let Some(chunk) = chunks.recv().await {
            if stdin.write_all(&chunk).await.is_err() {
                break;
            }
        }
        // Dropping stdin closes it: the host left.
    });
    let (lines, output) = mpsc::channel(1024);
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    tokio::spawn(async move {
        loop {
            let mut line = Vec::new();
            match stdout.read_until(b'\n', &mut line).await {
                Ok(0) | Err(_) => break,
                Ok(_) => {
                    if lines.send(line).await.is_err() {
                        break;
                    }
                }
            }
        }
    });
    let panics = Arc::new(Mutex::new(Vec::new()));
    let seen = panics.clone();
    let mut stderr = BufReader::new(child.stderr.take().unwrap()).lines();
    let stderr = tokio::spawn(async move {
        while let Ok(Some(line)) = stderr.next_line().await {
            if line.contains("panicked") {
                let mut seen = seen.lock().unwrap();
                if seen.len() < 5 {
                    seen.push(line);
                }
            }
        }
    });
    Server {
        child,
        input,
        output,
        panics,
        stderr,
        delayed: JoinSet::new(),
        ledger: Ledger::default(),
        largest: None,
        peak_rss: sample_vm_hwm(pid),
        state,
        transcript: std::env::var_os("CLAWBRIDGE_SERVE_FUZZ_TRANSCRIPT").map(|path| {
            let file = std::fs::OpenOptions::new().create(true).append(true).open(path).expect("the transcript opens");
            Arc::new(Mutex::new(file))
        }),
    }
}

/// One server's life: its opening, a seeded number of fuzzed inputs (or until `deadline`), the
/// final requests, an optional `shutdown` and torn last line, then EOF and its exit.
async fn run_server(fuzz: &mut HostFuzz, report: &mut Report, deadline: Instant, codex: &Path) {
    report.servers += 1;
    let mut server = start_server(codex);
    let steps = fuzz.life_steps();
    let opening = fuzz.opening();
    let mut alive = server.send(fuzz, report, opening).await;
    let mut step = 0;
    while alive && step < steps && Instant::now() < deadline {
        step += 1;
        if !server.wait_for_room(fuzz, report).await {
            break;
        }
        let lines = fuzz.step();
        alive = server.send(fuzz, report, lines).await;
        if step % 16 == 0 {
            alive &= server.check_alive_and_rss(report);
        }
    }
    if alive {
        let lines = fuzz.final_requests();
        alive = server.send(fuzz, report, lines).await && server.drain(fuzz, report).await;
    }
    if alive && let Some(shutdown) = fuzz.shutdown() {
        alive = server.send(fuzz, report, vec![shutdown]).await && server.drain(fuzz, report).await;
    }
    if alive {
        alive = server.check_alive_and_rss(report);
    }
    while server.delayed.join_next().await.is_some() {}
    if alive && let Some(tail) = fuzz.torn_tail() {
        let _ = server.input.send(tail).await;
    }
    server.close(fuzz, report, alive).await;
}

impl Server {
    /// Writes `lines` in one write, owing their answers first; reads output meanwhile, so a bridge
    /// that waits for its stdout never deadlocks with the driver. False when the server stopped
    /// taking input.
    async fn send(&mut self, fuzz: &mut HostFuzz, report: &mut Report, lines: Vec<Line>) -> bool {
        if lines.is_empty() {
            return true;
        }
        let mut chunk = Vec::new();
        for line in &lines {
            let input: Arc<[u8]> = Arc::from(line.bytes.as_slice());
            self.ledger.owe(line, &input);
            report.inputs += 1;
            report.input_bytes += input.len() as u64;
            if !matches!(line.expect, Expect::Nothing) {
                report.requests += 1;
            }
            if self.largest.as_ref().is_none_or(|l| l.len() < input.len()) {
                self.largest = Some(input);
            }
            note(self.transcript.as_ref(), &format!("-> {:?}", line.class), &line.bytes);
            chunk.extend_from_slice(&line.bytes);
        }
        let sender = self.input.clone();
        let write = tokio::time::timeout(HANG, sender.send(chunk));
        tokio::pin!(write);
        loop {
            tokio::select! {
                sent = &mut write => {
                    let why = match sent {
                        Ok(Ok(())) => return true,
                        Ok(Err(_)) => "its stdin broke (the server went away)".to_string(),
                        Err(_) => format!("the server stopped reading its input for {HANG:?}"),
                    };
                    report.fail(Category::ProcessAlive, why, self.largest.clone());
                    return false;
                }
                Some(line) = self.output.recv() => self.on_output(fuzz, report, &line),
            }
        }
    }

    /// Reads output until fewer than [`MAX_IN_FLIGHT`] requests wait for their answer.
    async fn wait_for_room(&mut self, fuzz: &mut HostFuzz, report: &mut Report) -> bool {
        while self.ledger.in_flight() >= MAX_IN_FLIGHT {
            match tokio::time::timeout(HANG, self.output.recv()).await {
                Ok(Some(line)) => self.on_output(fuzz, report, &line),
                _ => {
                    report.fail(
                        Category::AnsweredOnce,
                        format!("{} requests waited {HANG:?} for an answer", self.ledger.in_flight()),
                        None,
                    );
                    return false;
                }
            }
        }
        true
    }

    /// Reads output until everything owed is answered, or the server was quiet for [`QUIET`].
    async fn drain(&mut self, fuzz: &mut HostFuzz, report: &mut Report) -> bool {
        let give_up = Instant::now() + HANG;
        while !self.ledger.settled() && Instant::now() < give_up {
            let patience = if self.ledger.owes_by_id() { HANG } else { QUIET };
            match tokio::time::timeout(patience, self.output.recv()).await {
                Ok(Some(line)) => self.on_output(fuzz, report, &line),
                Ok(None) => return false,
                Err(_) => break,
            }
        }
        true
    }

    fn check_alive_and_rss(&mut self, report: &mut Report) -> bool {
        if let Ok(Some(status)) = self.child.try_wait() {
            report.fail(
                Category::ProcessAlive,
                format!("the server exited on its own ({status})"),
                self.largest.clone(),
            );
            return false;
        }
        self.check_rss(report);
        true
    }

    fn check_rss(&self, report: &mut Report) {
        let peak = self.peak_rss.load(std::sync::atomic::Ordering::Relaxed);
        if peak > RSS_BOUND_BYTES && report.peak_rss <= RSS_BOUND_BYTES {
            report.fail(
                Category::RssBounded,
                format!(
                    "VmHWM {} MiB, over the {} MiB bound (the largest input so far attached)",
                    peak >> 20,
                    RSS_BOUND_BYTES >> 20
                ),
                self.largest.clone(),
            );
        }
        report.peak_rss = report.peak_rss.max(peak);
    }

    /// One line the server wrote.
    fn on_output(&mut self, fuzz: &mut HostFuzz, report: &mut Report, bytes: &[u8]) {
        let malformed = |report: &mut Report, why: &str| {
            report.fail(Category::WellFormedOutput, format!("{why}: {}", clip(&String::from_utf8_lossy(bytes))), None);
        };
        let Ok(text) = std::str::from_utf8(bytes) else {
            return malformed(report, "not UTF-8");
        };
        let text = text.strip_suffix('\n').unwrap_or(text);
        note(self.transcript.as_ref(), "<-", text.as_bytes());
        let Ok(Value::Object(message)) = serde_json::from_str::<Value>(text) else {
            return malformed(report, "not a JSON object");
        };
        if message.get("jsonrpc").and_then(Value::as_str) != Some("2.0") {
            malformed(report, "no \"jsonrpc\":\"2.0\"");
        }
        if let Some(method) = message.get("method").and_then(Value::as_str) {
            let Some(raw_id) = raw_member(text, "id") else {
                report.notifications += 1;
                return;
            };
            report.bridge_requests += 1;
            for reply in fuzz.answer(method, raw_id) {
                let input: Arc<[u8]> = Arc::from(reply.line.bytes.as_slice());
                self.ledger.owe(&reply.line, &input);
                report.inputs += 1;
                report.input_bytes += input.len() as u64;
                let sender = self.input.clone();
                let bytes = reply.line.bytes;
                let delay = Duration::from_millis(reply.delay_ms);
                let transcript = self.transcript.clone();
                let direction = format!("-> {:?}", reply.line.class);
                self.delayed.spawn(async move {
                    tokio::time::sleep(delay).await;
                    note(transcript.as_ref(), &direction, &bytes);
                    let _ = sender.send(bytes).await;
                });
            }
            return;
        }
        report.answers += 1;
        let Some(raw_id) = raw_member(text, "id") else {
            return malformed(report, "an answer without an id");
        };
        let outcome = match (message.get("result"), message.get("error")) {
            (Some(_), None) => None,
            (None, Some(error)) => match error.get("code").and_then(Value::as_i64) {
                Some(code) => Some(code),
                None => return malformed(report, "an error without an integer code"),
            },
            _ => return malformed(report, "not exactly one of result and error"),
        };
        if let Some(code) = outcome {
            *report.error_codes.entry(code).or_default() += 1;
            if code == -32603 {
                report.fail(Category::NoInternalError, format!("an internal error: {}", clip(text)), None);
            }
        }
        if raw_id == "\"final-list\"" && outcome.is_none() && !message["result"]["harnesses"].is_array() {
            report.fail(Category::FinalRequestServed, format!("harness/list without harnesses: {}", clip(text)), None);
        }
        self.ledger.answered(raw_id, outcome, text, report);
    }

    /// Closes stdin, reads what is left, waits for the exit and settles the ledger.
    async fn close(mut self, fuzz: &mut HostFuzz, report: &mut Report, alive: bool) {
        // The host is gone: stdin closes, and the bridge's late requests get no answer.
        let (gone, _) = mpsc::channel(1);
        drop(std::mem::replace(&mut self.input, gone));
        let give_up = Instant::now() + HANG;
        loop {
            match tokio::time::timeout_at(give_up.into(), self.output.recv()).await {
                Ok(Some(line)) => self.on_output(fuzz, report, &line),
                Ok(None) => break,
                Err(_) => {
                    report.fail(Category::ProcessAlive, format!("stdout still open {HANG:?} after stdin closed"), None);
                    break;
                }
            }
        }
        match tokio::time::timeout(HANG, self.child.wait()).await {
            Ok(Ok(status)) if status.success() || !alive => {}
            Ok(status) => report.fail(Category::ProcessAlive, format!("exit after stdin closed: {status:?}"), None),
            Err(_) => report.fail(Category::ProcessAlive, format!("still running {HANG:?} after stdin closed"), None),
        }
        self.check_rss(report);
        let _ = tokio::time::timeout(HANG, self.stderr).await;
        for line in self.panics.lock().unwrap().iter() {
            report.fail(Category::NoPanic, format!("stderr: {}", clip(line)), self.largest.clone());
        }
        if let Some(line) = panic_in_log(&self.state.path().join("logs")) {
            report.fail(Category::NoPanic, format!("log: {}", clip(&line)), self.largest.clone());
        }
        self.ledger.close(report);
    }
}

/// The first line that mentions a panic in the server's log files.
fn panic_in_log(dir: &Path) -> Option<String> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir).ok()?.flatten().map(|e| e.path()).collect();
    files.sort();
    files.iter().find_map(|file| {
        let text = std::fs::read(file).ok()?;
        String::from_utf8_lossy(&text).lines().find(|l| l.contains("panicked")).map(str::to_string)
    })
}

/// Samples `pid`'s VmHWM every 20 ms until the process is gone; the latest value is the peak.
fn sample_vm_hwm(pid: u32) -> Arc<std::sync::atomic::AtomicU64> {
    let peak = Arc::new(std::sync::atomic::AtomicU64::new(0));
    let sampled = peak.clone();
    tokio::spawn(async move {
        while let Some(hwm) = vm_hwm(pid) {
            sampled.fetch_max(hwm, std::sync::atomic::Ordering::Relaxed);
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    });
    peak
}

/// The peak resident set size of `pid` (`VmHWM` in /proc/PID/status), in bytes.
fn vm_hwm(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kib: u64 = line.trim_start_matches("VmHWM:").trim().trim_end_matches("kB").trim().parse().ok()?;
    Some(kib * 1024)
}

/// The driver's own checks, on answers made up here: each failure lands in its category.
mod ledger {
    use super::*;

    fn owe(ledger: &mut Ledger, expect: Expect, class: Class) {
        let line = Line { bytes: b"{}\n".to_vec(), expect, class };
        ledger.owe(&line, &Arc::from(line.bytes.as_slice()));
    }

    fn failed(report: &Report) -> Vec<Category> {
        report.failures.keys().copied().collect()
    }

    #[test]
    fn a_rewritten_id_is_told_from_a_missing_or_unexpected_answer() {
        let (mut ledger, mut report) = (Ledger::default(), Report::default());
        owe(&mut ledger, Expect::Answer { id: "1e2".into(), want: Want::Any }, Class::Valid);
        ledger.answered("100.0", None, "{}", &mut report);
        assert_eq!(failed(&report), [Category::ExactIdEcho]);

        let (mut ledger, mut report) = (Ledger::default(), Report::default());
        owe(&mut ledger, Expect::Answer { id: "7".into(), want: Want::Any }, Class::Valid);
        owe(&mut ledger, Expect::Answer { id: "\"a\"".into(), want: Want::Any }, Class::Valid);
        ledger.answered("\"a\"", None, "{}", &mut report);
        ledger.answered("\"a\"", None, "{}", &mut report);
        ledger.close(&mut report);
        assert_eq!(report.failures[&Category::AnsweredOnce].0, 2, "a second answer and a missing one");
        assert_eq!(failed(&report), [Category::AnsweredOnce]);
    }

    #[test]
    fn null_answers_go_to_the_strictest_expectation_first() {
        let (mut ledger, mut report) = (Ledger::default(), Report::default());
        owe(&mut ledger, Expect::NullAnswer { want: Want::Any }, Class::NullId);
        owe(&mut ledger, Expect::NullAnswer { want: Want::Error(&[-32700]) }, Class::Unparseable);
        owe(&mut ledger, Expect::AnswerOrNull { id: "{}".into(), want: Want::Error(&[-32600]) }, Class::InvalidId);
        ledger.answered("null", Some(-32600), "{}", &mut report);
        ledger.answered("null", Some(-32700), "{}", &mut report);
        ledger.close(&mut report);
        assert_eq!(failed(&report), [Category::NullIdAnswered], "the request with id null went unanswered");

        // Requests whose id may be unreadable: the one that needs `-32600` gets it, however the
        // ledger happens to order them, and a loose one takes what is left.
        let (mut ledger, mut report) = (Ledger::default(), Report::default());
        for i in 0..8 {
            owe(
                &mut ledger,
                Expect::AnswerOrNull { id: format!("[{i}]"), want: Want::Error(&[-32600]) },
                Class::InvalidId,
            );
            owe(&mut ledger, Expect::AnswerOrNull { id: format!("{i}"), want: Want::Any }, Class::Deep);
        }
        for _ in 0..8 {
            ledger.answered("null", Some(-32600), "{}", &mut report);
        }
        for _ in 0..8 {
            ledger.answered("null", Some(-32700), "{}", &mut report);
        }
        ledger.close(&mut report);
        assert_eq!(failed(&report), [], "each got its answer");
    }

    #[test]
    fn a_wrong_answer_fails_the_check_of_its_input_class() {
        let (mut ledger, mut report) = (Ledger::default(), Report::default());
        owe(&mut ledger, Expect::Answer { id: "1".into(), want: Want::Error(&[-32600]) }, Class::BadVersion);
        owe(&mut ledger, Expect::Answer { id: "2".into(), want: Want::Error(&[-32602]) }, Class::Positional);
        owe(&mut ledger, Expect::Answer { id: "3".into(), want: Want::Result }, Class::Final);
        ledger.answered("1", None, "{}", &mut report);
        ledger.answered("2", Some(-32602), "{}", &mut report);
        ledger.answered("3", Some(-32011), "{}", &mut report);
        ledger.close(&mut report);
        assert_eq!(failed(&report), [Category::JsonRpcVersionEnforced, Category::FinalRequestServed]);
    }
}
