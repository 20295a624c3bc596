//! `clawbridge config show` and `config path`, and the keys' table the README carries.

use std::fmt::Write as _;

use super::{KeyInfo, Settings, Source};

/// The effective settings, one `section.key = value  # source` line each (TOML-like, so a line
/// can be copied into the file).
pub fn text(settings: &Settings) -> String {
    let mut out = String::new();
    match &settings.file {
        Some(path) => {
            let _ = writeln!(out, "# config file: {}", path.display());
        }
        None => out.push_str("# config file: none\n"),
    }
    for shown in settings.shown() {
        let value = match &shown.value {
            Some(_) => shown.json.to_string(),
            None => "(unset)".to_string(),
        };
        let _ = writeln!(out, "{} = {value}  # {}", shown.key, shown.source);
    }
    out
}

/// The effective settings as JSON: `{"file": path|null, "settings": [{"key", "value", "source"}]}`.
pub fn json(settings: &Settings) -> serde_json::Value {
    let rows: Vec<_> = settings
        .shown()
        .into_iter()
        .map(|shown| serde_json::json!({ "key": shown.key, "value": shown.json, "source": source_json(&shown.source) }))
        .collect();
    serde_json::json!({ "file": settings.file.as_ref().map(|path| path.display().to_string()), "settings": rows })
}

/// A source as JSON: its kind, plus the file and line, or the variable, or the flag.
fn source_json(source: &Source) -> serde_json::Value {
    match source {
        Source::File { path, line } => {
            serde_json::json!({ "kind": "file", "path": path.display().to_string(), "line": line, "text": source.to_string() })
        }
        Source::Env(name) => serde_json::json!({ "kind": "env", "name": name, "text": source.to_string() }),
        Source::Flag(flag) => serde_json::json!({ "kind": "flag", "name": flag, "text": source.to_string() }),
        Source::Default => serde_json::json!({ "kind": "default", "text": source.to_string() }),
    }
}

/// The Markdown table of every key (README.md#configuration, kept equal by a test).
pub fn keys_table(keys: &[KeyInfo]) -> String {
    let mut out =
        String::from("| Key | Type | Flag | Environment | Default | What it does |\n|---|---|---|---|---|---|\n");
    for key in keys {
        let env = if key.env.is_empty() {
            "—".to_string()
        } else {
            key.env.iter().map(|name| format!("`{name}`")).collect::<Vec<_>>().join(", ")
        };
        let flag = key.flag.map_or_else(|| "—".to_string(), |flag| format!("`{flag}`"));
        let _ = writeln!(
            out,
            "| `{}.{}` | {} | {flag} | {env} | {} | {} |",
            key.section,
            key.name,
            key.kind.replace('|', "\\|"),
            key.default,
            key.doc
        );
    }
    out
}
