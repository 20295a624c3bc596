//! Recordings of a real peer's stdio and the player that plays the peer's side of one: the demo
//! backend plays a bundled recording through it, and the test kit (`fixtures/`) records, normalises
//! and replays with it.
//!
//! A recording is JSONL: a header line, then one entry per line that crossed the pipe, in order:
//!
//! ```text
//! {"clawbridge_recording":1,"backend":"codex","peer_version":"0.169.0","scenario":"approved-command"}
//! {"dir":"to_agent","json":{"id":1,"method":"initialize","params":{…}}}
//! {"dir":"from_agent","json":{"id":1,"result":{…}}}
//! {"dir":"from_agent","raw":"a line that was not JSON"}
//! ```
//!
//! Recordings are normalised by the test kit: machine paths, ports, UUIDs and timestamps become
//! stable placeholders, so re-recording yields the same bytes. Wall-clock timing cannot be
//! byte-stable, so it lives in a sidecar (`<name>.timing`, one millisecond offset per entry) that the
//! replay agent uses only at recorded speed.

mod player;

pub use player::{Deviation, ReplayOptions, Speed, replay};

use std::sync::LazyLock;

use regex::Regex;

/// What a placeholder looks like: `<cwd>`, `<uuid-3>`, `<port>`; in a recorded line it matches any
/// text the live client sends there.
pub static PLACEHOLDER: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"<[A-Za-z][A-Za-z0-9_-]*>").expect("valid regex"));

/// The id a client chose for its request: `id` of a JSON-RPC request, `request_id` of a Claude
/// control request (a player maps it into the recorded answers).
pub fn client_request_id(line: &Value) -> Option<&Value> {
    if line.get("method").is_some() {
        line.get("id")
    } else if line.get("type").and_then(Value::as_str) == Some("control_request") {
        line.get("request_id")
    } else {
        None
    }
}

use std::fmt::Write as _;
use std::path::Path;

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The format version written in every header.
pub const FORMAT_VERSION: u32 = 1;

/// What a recording is of.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Header {
    /// Always [`FORMAT_VERSION`]; names the format so a reader can refuse a newer one.
    pub clawbridge_recording: u32,
    /// `codex`, `claude`, …
    pub backend: String,
    /// The peer's version when recorded (`0.169.0`), so a fixture states what it proves.
    pub peer_version: String,
    /// The scenario's name.
    pub scenario: String,
}

/// Which way a line went.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Direction {
    /// Client → peer (the peer's stdin).
    ToAgent,
    /// Peer → client (the peer's stdout).
    FromAgent,
}

/// One line that crossed the pipe.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Entry {
    /// Which way it went.
    pub dir: Direction,
    /// The line, parsed, when it was JSON.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub json: Option<Value>,
    /// The line verbatim, when it was not JSON.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub raw: Option<String>,
}

impl Entry {
    /// An entry for `line` as read from the pipe (without its newline).
    pub fn from_line(dir: Direction, line: &str) -> Entry {
        match serde_json::from_str(line) {
            Ok(json) => Entry { dir, json: Some(json), raw: None },
            Err(_) => Entry { dir, json: None, raw: Some(line.to_string()) },
        }
    }

    /// The line as it goes on the pipe (compact JSON in the peers' member order, see
    /// [`line_text`], or the raw text).
    pub fn to_line(&self) -> String {
        match (&self.json, &self.raw) {
            (Some(json), _) => line_text(json),
            (None, Some(raw)) => raw.clone(),
            (None, None) => String::new(),
        }
    }
}

/// The members that name a variant in the peers' lines, in the order a peer writes them: Claude's
/// `type` then `subtype`, the `type` of Codex's items and of content blocks, ACP's `sessionUpdate`.
const TAG_MEMBERS: [&str; 3] = ["type", "subtype", "sessionUpdate"];

/// A recorded line as compact JSON text the way the peers write it. A recording stores each line
/// parsed, and a parsed object has lost its member order (serde_json keeps members sorted); the
/// peers write the member that names a variant first in every object (the Claude CLI builds
/// `{type, subtype, …}`, Codex's internally tagged enums put `type` first, ACP agents
/// `{sessionUpdate, …}`), which decoders are entitled to find cheaply. So those members come first
/// here, then the rest in the stored order. (docs/peers/claude.md: no decoder may rely on it.)
pub fn line_text(json: &Value) -> String {
    // Serialising a `Value` cannot fail: its keys are strings.
    serde_json::to_string(&TagsFirst(json)).unwrap_or_else(|_| json.to_string())
}

/// A `Value` that serialises with the [`TAG_MEMBERS`] of each object first (what [`line_text`]
/// writes), for writers that serialise a line into something larger or into a stream.
#[derive(Clone, Copy, Debug)]
pub struct TagsFirst<'a>(pub &'a Value);

impl Serialize for TagsFirst<'_> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::{SerializeMap, SerializeSeq};
        match self.0 {
            Value::Object(map) => {
                let mut out = serializer.serialize_map(Some(map.len()))?;
                let tags = TAG_MEMBERS.iter().filter_map(|tag| map.get_key_value(*tag));
                let rest = map.iter().filter(|(key, _)| !TAG_MEMBERS.contains(&key.as_str()));
                for (key, value) in tags.chain(rest) {
                    out.serialize_entry(key, &TagsFirst(value))?;
                }
                out.end()
            }
            Value::Array(items) => {
                let mut out = serializer.serialize_seq(Some(items.len()))?;
                for item in items {
                    out.serialize_element(&TagsFirst(item))?;
                }
                out.end()
            }
            scalar => scalar.serialize(serializer),
        }
    }
}

/// A whole recording.
#[derive(Clone, Debug, PartialEq)]
pub struct Recording {
    /// What it is of.
    pub header: Header,
    /// Every line, in pipe order.
    pub entries: Vec<Entry>,
}

/// Why a recording could not be read.
#[derive(Debug)]
#[non_exhaustive]
pub enum LoadError {
    /// The file could not be read.
    Io(std::io::Error),
    /// Line `line` (1-based) is not what the format says.
    Format {
        /// Where.
        line: usize,
        /// What is wrong.
        reason: String,
    },
}

impl std::fmt::Display for LoadError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            LoadError::Io(e) => write!(f, "cannot read the recording: {e}"),
            LoadError::Format { line, reason } => write!(f, "recording line {line}: {reason}"),
        }
    }
}

impl std::error::Error for LoadError {}

impl Recording {
    /// Parses a recording's text.
    pub fn parse(text: &str) -> Result<Recording, LoadError> {
        let mut lines = text.lines().enumerate().filter(|(_, l)| !l.trim().is_empty());
        let (_, first) = lines.next().ok_or(LoadError::Format { line: 1, reason: "empty file".into() })?;
        let header: Header = serde_json::from_str(first)
            .map_err(|e| LoadError::Format { line: 1, reason: format!("bad header: {e}") })?;
        if header.clawbridge_recording != FORMAT_VERSION {
            return Err(LoadError::Format {
                line: 1,
                reason: format!("format version {} (this build reads {FORMAT_VERSION})", header.clawbridge_recording),
            });
        }
        let entries = lines
            .map(|(i, l)| serde_json::from_str(l).map_err(|e| LoadError::Format { line: i + 1, reason: e.to_string() }))
            .collect::<Result<_, _>>()?;
        Ok(Recording { header, entries })
    }

    /// Reads a recording file.
    pub fn load(path: &Path) -> Result<Recording, LoadError> {
        Recording::parse(&std::fs::read_to_string(path).map_err(LoadError::Io)?)
    }

    /// The recording's text: header, then one entry per line.
    pub fn to_text(&self) -> String {
        let mut out = serde_json::to_string(&self.header).expect("a header serialises");
        out.push('\n');
        for entry in &self.entries {
            let _ = writeln!(out, "{}", serde_json::to_string(entry).expect("an entry serialises"));
        }
        out
    }

    /// The client lines in order: what a client must send for the replay to pass.
    pub fn client_lines(&self) -> impl Iterator<Item = &Entry> {
        self.entries.iter().filter(|e| e.dir == Direction::ToAgent)
    }
}

/// Parses a timing sidecar: one millisecond offset (from the first entry) per entry.
pub fn parse_timing(text: &str) -> Vec<u64> {
    text.lines().filter_map(|l| l.trim().parse().ok()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_round_trips() {
        let recording = Recording {
            header: Header {
                clawbridge_recording: FORMAT_VERSION,
                backend: "codex".into(),
                peer_version: "0.169.0".into(),
                scenario: "plain-text".into(),
            },
            entries: vec![
                Entry::from_line(Direction::ToAgent, r#"{"id":1,"method":"initialize"}"#),
                Entry::from_line(Direction::FromAgent, "WARNING: not json"),
            ],
        };
        let text = recording.to_text();
        assert_eq!(Recording::parse(&text).unwrap(), recording);
        assert_eq!(recording.entries[1].to_line(), "WARNING: not json");
        assert!(text.lines().nth(1).unwrap().starts_with(r#"{"dir":"to_agent","json":"#));
    }

    #[test]
    fn refuses_other_format_versions_and_names_the_bad_line() {
        let err = Recording::parse(
            "{\"clawbridge_recording\":2,\"backend\":\"x\",\"peer_version\":\"1\",\"scenario\":\"s\"}",
        )
        .unwrap_err();
        assert!(err.to_string().contains("format version 2"));
        let err = Recording::parse(
            "{\"clawbridge_recording\":1,\"backend\":\"x\",\"peer_version\":\"1\",\"scenario\":\"s\"}\n{oops",
        )
        .unwrap_err();
        assert!(err.to_string().starts_with("recording line 2"), "{err}");
    }
}
