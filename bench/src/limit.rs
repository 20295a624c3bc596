//! The typed parse limit: what the fastest honest consumer of a native stream spends on a line.
//!
//! Written here, not borrowed from the product's decoders, so the limit does not move when they do
//! and is not the product's own two-step decode (text → `Value` → typed). Per stream, one flat
//! `#[derive(Deserialize)]` struct with borrowed fields for what a consumer reads (kind or method,
//! ids, the text of a delta, a tool's name and command) and `&RawValue` for the members it passes on
//! unread; every other member is skipped by serde without being built. One `serde_json::from_str`
//! per line, on the line's own bytes.
//!
//! [`line_sizes`] measures the size distribution of a stream's peer lines, so each figure can say
//! what kind of lines it was measured on (and the generated stream can be held against the real
//! recordings of the same peer).

use std::borrow::Cow;
use std::fs::File;
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::{Context, anyhow};
use serde::Deserialize;
use serde_json::value::RawValue;

/// A Claude CLI stdout line, as a consumer reads it.
#[derive(Deserialize)]
struct ClaudeLine<'a> {
    #[serde(rename = "type", borrow)]
    kind: Cow<'a, str>,
    #[serde(default, borrow)]
    subtype: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    session_id: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    event: Option<ClaudeEvent<'a>>,
    #[serde(default, borrow)]
    message: Option<ClaudeMessage<'a>>,
    /// The final `result` line's text (the whole answer, long in real turns).
    #[serde(default, borrow)]
    result: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    usage: Option<&'a RawValue>,
}

#[derive(Deserialize)]
struct ClaudeEvent<'a> {
    #[serde(rename = "type", borrow)]
    kind: Cow<'a, str>,
    #[serde(default)]
    index: Option<u64>,
    #[serde(default, borrow)]
    delta: Option<ClaudeDelta<'a>>,
    #[serde(default, borrow)]
    content_block: Option<&'a RawValue>,
}

#[derive(Deserialize)]
struct ClaudeDelta<'a> {
    #[serde(rename = "type", default, borrow)]
    kind: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    text: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    thinking: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    partial_json: Option<Cow<'a, str>>,
}

#[derive(Deserialize)]
struct ClaudeMessage<'a> {
    #[serde(default, borrow)]
    id: Option<Cow<'a, str>>,
    /// Blocks, or (a user's prompt) one string: kept raw, then read as whichever it is (serde's
    /// untagged enums buffer the whole member and cannot hand out `&RawValue`s, so this is faster).
    #[serde(default, borrow)]
    content: Option<&'a RawValue>,
}

#[derive(Deserialize)]
struct ClaudeBlock<'a> {
    #[serde(rename = "type", borrow)]
    kind: Cow<'a, str>,
    #[serde(default, borrow)]
    id: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    name: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    text: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    thinking: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    tool_use_id: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    input: Option<&'a RawValue>,
    #[serde(default, borrow)]
    content: Option<&'a RawValue>,
}

/// A JSON-RPC line of Codex's app-server, as a consumer reads it.
#[derive(Deserialize)]
struct CodexLine<'a> {
    #[serde(default, borrow)]
    id: Option<&'a RawValue>,
    #[serde(default, borrow)]
    method: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    params: Option<CodexParams<'a>>,
    #[serde(default, borrow)]
    result: Option<&'a RawValue>,
    #[serde(default, borrow)]
    error: Option<&'a RawValue>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct CodexParams<'a> {
    #[serde(default, borrow)]
    thread_id: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    turn_id: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    item_id: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    delta: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    item: Option<CodexItem<'a>>,
    #[serde(default, borrow)]
    turn: Option<&'a RawValue>,
    #[serde(default, borrow)]
    status: Option<&'a RawValue>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct CodexItem<'a> {
    #[serde(rename = "type", borrow)]
    kind: Cow<'a, str>,
    #[serde(default, borrow)]
    id: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    text: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    command: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    aggregated_output: Option<Cow<'a, str>>,
    #[serde(default)]
    exit_code: Option<i64>,
    #[serde(default, borrow)]
    summary: Option<&'a RawValue>,
}

/// A JSON-RPC line of an ACP agent, as a consumer reads it.
#[derive(Deserialize)]
struct AcpLine<'a> {
    #[serde(default, borrow)]
    id: Option<&'a RawValue>,
    #[serde(default, borrow)]
    method: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    params: Option<AcpParams<'a>>,
    #[serde(default, borrow)]
    result: Option<&'a RawValue>,
    #[serde(default, borrow)]
    error: Option<&'a RawValue>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct AcpParams<'a> {
    #[serde(default, borrow)]
    session_id: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    update: Option<AcpUpdate<'a>>,
    #[serde(default, borrow)]
    tool_call: Option<&'a RawValue>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct AcpUpdate<'a> {
    #[serde(default, borrow)]
    session_update: Option<Cow<'a, str>>,
    /// A chunk's `{type, text}`, or a tool call's content list: kept raw, read only for chunks.
    #[serde(default, borrow)]
    content: Option<&'a RawValue>,
    #[serde(default, borrow)]
    tool_call_id: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    title: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    kind: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    status: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    raw_input: Option<&'a RawValue>,
    #[serde(default, borrow)]
    raw_output: Option<&'a RawValue>,
}

/// The text of an ACP chunk's content.
#[derive(Deserialize)]
struct AcpChunk<'a> {
    #[serde(default, borrow)]
    text: Option<Cow<'a, str>>,
}

/// Which stream a line comes from.
#[derive(Clone, Copy, Debug)]
pub enum Kind {
    /// Codex app-server.
    Codex,
    /// Claude CLI stream-json.
    Claude,
    /// An ACP agent.
    Acp,
}

impl Kind {
    /// The kind of the registry's backend `name`.
    pub fn of(name: &str) -> anyhow::Result<Kind> {
        match name {
            "codex" => Ok(Kind::Codex),
            "claude" => Ok(Kind::Claude),
            "acp" => Ok(Kind::Acp),
            other => Err(anyhow!("no typed parse for the `{other}` stream")),
        }
    }
}

/// Parses one line the typed way; a number derived from what was read, so nothing is optimised away.
pub fn parse_line(kind: Kind, line: &str) -> anyhow::Result<usize> {
    let len = |s: &Option<Cow<'_, str>>| s.as_ref().map_or(0, |s| s.len());
    let raw = |r: Option<&RawValue>| r.map_or(0, |r| r.get().len());
    Ok(match kind {
        Kind::Claude => {
            let l: ClaudeLine<'_> = serde_json::from_str(line).context("a Claude line the typed parse refuses")?;
            let mut n = l.kind.len() + len(&l.subtype) + len(&l.session_id) + len(&l.result) + raw(l.usage);
            if let Some(e) = &l.event {
                n += e.kind.len() + e.index.unwrap_or(0) as usize + raw(e.content_block);
                if let Some(d) = &e.delta {
                    n += len(&d.kind) + len(&d.text) + len(&d.thinking) + len(&d.partial_json);
                }
            }
            if let Some(m) = &l.message {
                n += len(&m.id);
                match m.content.map(RawValue::get) {
                    Some(content) if content.starts_with('[') => {
                        let blocks: Vec<ClaudeBlock<'_>> =
                            serde_json::from_str(content).context("a Claude message's blocks")?;
                        for b in &blocks {
                            n += b.kind.len() + len(&b.id) + len(&b.name) + len(&b.text) + len(&b.thinking);
                            n += len(&b.tool_use_id) + raw(b.input) + raw(b.content);
                        }
                    }
                    Some(content) => {
                        let text: Cow<'_, str> = serde_json::from_str(content).context("a Claude message's text")?;
                        n += text.len();
                    }
                    None => {}
                }
            }
            n
        }
        Kind::Codex => {
            let l: CodexLine<'_> = serde_json::from_str(line).context("a Codex line the typed parse refuses")?;
            let mut n = raw(l.id) + len(&l.method) + raw(l.result) + raw(l.error);
            if let Some(p) = &l.params {
                n += len(&p.thread_id) + len(&p.turn_id) + len(&p.item_id) + len(&p.delta);
                n += raw(p.turn) + raw(p.status);
                if let Some(i) = &p.item {
                    n += i.kind.len() + len(&i.id) + len(&i.text) + len(&i.command) + len(&i.aggregated_output);
                    n += i.exit_code.unwrap_or(0) as usize + raw(i.summary);
                }
            }
            n
        }
        Kind::Acp => {
            let l: AcpLine<'_> = serde_json::from_str(line).context("an ACP line the typed parse refuses")?;
            let mut n = raw(l.id) + len(&l.method) + raw(l.result) + raw(l.error);
            if let Some(p) = &l.params {
                n += len(&p.session_id) + raw(p.tool_call);
                if let Some(u) = &p.update {
                    n += len(&u.session_update) + len(&u.tool_call_id) + len(&u.title) + len(&u.kind);
                    n += len(&u.status) + raw(u.raw_input) + raw(u.raw_output);
                    let chunk = u.session_update.as_deref().is_some_and(|s| s.ends_with("_chunk"));
                    match u.content {
                        Some(content) if chunk => {
                            let c: AcpChunk<'_> = serde_json::from_str(content.get()).context("an ACP chunk")?;
                            n += len(&c.text);
                        }
                        content => n += raw(content),
                    }
                }
            }
            n
        }
    })
}

/// Reads `native` and parses every line once the typed way.
pub fn typed_parse(native: &Path, kind: Kind) -> anyhow::Result<Duration> {
    let started = Instant::now();
    let file = File::open(native).with_context(|| format!("opening {}", native.display()))?;
    let mut reader = BufReader::with_capacity(64 * 1024, file);
    let mut line = String::new();
    let mut read = 0usize;
    loop {
        line.clear();
        if reader.read_line(&mut line)? == 0 {
            break;
        }
        read = read.wrapping_add(parse_line(kind, line.trim_end_matches('\n'))?);
    }
    std::hint::black_box(read);
    Ok(started.elapsed())
}

/// The size distribution of some peer lines (newline included).
#[derive(Clone, Copy, Debug, Default)]
pub struct LineSizes {
    /// How many lines.
    pub lines: usize,
    /// Their mean size, in bytes.
    pub avg: f64,
    /// Their 99th percentile size, in bytes.
    pub p99: usize,
}

impl LineSizes {
    /// The distribution of `sizes`.
    pub fn of(mut sizes: Vec<usize>) -> LineSizes {
        if sizes.is_empty() {
            return LineSizes::default();
        }
        sizes.sort_unstable();
        let p99 = sizes[(sizes.len() * 99 / 100).min(sizes.len() - 1)];
        let avg = sizes.iter().sum::<usize>() as f64 / sizes.len() as f64;
        LineSizes { lines: sizes.len(), avg, p99 }
    }

    /// `avg N B, p99 N B`.
    pub fn describe(&self) -> String {
        format!("avg {:.0} B, p99 {} B over {} lines", self.avg, self.p99, self.lines)
    }
}

/// The sizes of the lines of a native stream file.
pub fn line_sizes(native: &Path) -> anyhow::Result<LineSizes> {
    let file = File::open(native).with_context(|| format!("opening {}", native.display()))?;
    let mut sizes = Vec::new();
    for line in BufReader::new(file).split(b'\n') {
        sizes.push(line?.len() + 1);
    }
    Ok(LineSizes::of(sizes))
}

/// The recordings (`*.jsonl`, not the `.model.jsonl` expectations) under `dir`, recursively.
pub fn recordings(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut found = Vec::new();
    let Ok(entries) = std::fs::read_dir(dir) else { return found };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            found.extend(recordings(&path));
        } else if path.to_str().is_some_and(|p| p.ends_with(".jsonl") && !p.ends_with(".model.jsonl")) {
            found.push(path);
        }
    }
    found.sort();
    found
}

/// The peer lines' size distribution of the checked-in recordings of `stream` (`codex`, `claude`,
/// `acp`), re-serialised compactly as the peers write them; `None` when the repository's
/// recordings are not beside this build.
pub fn recorded_sizes(stream: &str) -> Option<LineSizes> {
    use clawbridge_fixtures::recording::{Direction, Recording};
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../fixtures/recordings").join(stream);
    let mut sizes = Vec::new();
    for path in recordings(&root) {
        let Ok(text) = std::fs::read_to_string(&path) else { continue };
        let Ok(recording) = Recording::parse(&text) else { continue };
        for entry in recording.entries.iter().filter(|e| e.dir == Direction::FromAgent) {
            if let Some(json) = &entry.json {
                sizes.push(serde_json::to_string(json).map_or(0, |l| l.len()) + 1);
            }
        }
    }
    (!sizes.is_empty()).then(|| LineSizes::of(sizes))
}

#[cfg(test)]
mod tests {
    use super::*;
    use clawbridge_fixtures::recording::{Direction, Recording};

    /// Every peer line of every checked-in recording of a stream parses the typed way: the flat
    /// structs read real lines, not only the generator's.
    #[test]
    fn the_typed_parse_reads_every_real_recorded_line() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../fixtures/recordings");
        for (dir, kind) in [("codex", Kind::Codex), ("claude", Kind::Claude), ("acp", Kind::Acp)] {
            let mut lines = 0;
            for path in recordings(&root.join(dir)) {
                let text = std::fs::read_to_string(&path).unwrap();
                let recording = Recording::parse(&text).unwrap();
                for entry in recording.entries.iter().filter(|e| e.dir == Direction::FromAgent) {
                    let Some(json) = &entry.json else { continue };
                    let line = serde_json::to_string(json).unwrap();
                    parse_line(kind, &line).unwrap_or_else(|e| panic!("{}: {e:#}\n{line}", path.display()));
                    lines += 1;
                }
            }
            assert!(lines > 10, "{dir}: only {lines} lines");
        }
    }

    #[test]
    fn a_line_that_is_not_the_stream_is_refused() {
        assert!(parse_line(Kind::Claude, r#"{"no_type":1}"#).is_err());
        assert!(parse_line(Kind::Codex, "not json").is_err());
    }

    #[test]
    fn sizes_have_a_mean_and_a_p99() {
        let sizes = LineSizes::of((1..=100).collect());
        assert_eq!(sizes.p99, 100);
        assert!((sizes.avg - 50.5).abs() < 1e-9);
    }
}
