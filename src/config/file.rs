//! Reading the config file: which one, bounded in size, and TOML errors turned into
//! `file:line:column: key …` messages.

use std::io::Read;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use super::ConfigError;

/// The largest config file read: a settings file is a few hundred bytes, so anything this big is
/// the wrong file, and reading it whole must not cost the bridge its memory.
pub const MAX_CONFIG_BYTES: u64 = 1 << 20;

/// The file that names no file: `--config /dev/null` runs on defaults, variables and flags alone
/// (what a broken config file's error suggests).
pub const NO_FILE: &str = "/dev/null";

/// The most of a value quoted back in an error.
const MAX_QUOTED_CHARS: usize = 80;

/// Which config file to read.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum FileChoice {
    /// One the user named (`--config`, `CLAWBRIDGE_CONFIG`): it must exist.
    Named(PathBuf),
    /// The default location, read only if it exists (none: no home to look in).
    Default(Option<PathBuf>),
}

impl FileChoice {
    /// The file this choice reads, if it names one.
    pub fn path(&self) -> Option<&Path> {
        match self {
            FileChoice::Named(path) => Some(path),
            FileChoice::Default(path) => path.as_deref(),
        }
    }
}

/// A config file's text, with its path for messages.
#[derive(Clone, Debug)]
pub struct ConfigFile {
    /// Where it was read from.
    pub path: PathBuf,
    /// Its text.
    pub text: String,
}

impl ConfigFile {
    /// Reads the file `choice` names: `None` when it is the default one and does not exist. A
    /// symlink is followed (dotfile managers link config files); size is bounded.
    pub fn read(choice: &FileChoice) -> Result<Option<ConfigFile>, ConfigError> {
        let (path, required) = match choice {
            FileChoice::Named(path) => (path, true),
            FileChoice::Default(Some(path)) => (path, false),
            FileChoice::Default(None) => return Ok(None),
        };
        if path == Path::new(NO_FILE) {
            return Ok(None);
        }
        let unreadable = |source| ConfigError::Unreadable { path: path.clone(), source };
        // The symlink followed; a FIFO or device at the path would block the open or the read
        // (every command, serve too), so the open does not wait (O_NONBLOCK: no effect on a
        // regular file) and what it opened is checked before a byte is read: no race with a swap.
        let opened = std::fs::OpenOptions::new().read(true).custom_flags(nix::libc::O_NONBLOCK).open(path);
        let file = match opened {
            Ok(file) => file,
            Err(error) if !required && error.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(error) => return Err(unreadable(error)),
        };
        if !file.metadata().map_err(unreadable)?.is_file() {
            return Err(ConfigError::NotAFile { path: path.clone() });
        }
        let mut bytes = Vec::new();
        // One byte past the limit tells a file at the limit from a larger one.
        file.take(MAX_CONFIG_BYTES + 1).read_to_end(&mut bytes).map_err(unreadable)?;
        if bytes.len() as u64 > MAX_CONFIG_BYTES {
            return Err(ConfigError::TooLarge { path: path.clone(), limit: MAX_CONFIG_BYTES });
        }
        let text = String::from_utf8(bytes).map_err(|_| ConfigError::NotText { path: path.clone() })?;
        Ok(Some(ConfigFile { path: path.clone(), text }))
    }

    /// The file's text as `T`, or where and why it is not.
    pub(crate) fn parse<T: serde::de::DeserializeOwned>(&self) -> Result<T, ConfigError> {
        toml::from_str(&self.text).map_err(|error| {
            let offset = error.span().map_or(0, |span| span.start);
            let (line, column) = self.line_column(offset);
            ConfigError::Invalid {
                path: self.path.clone(),
                line,
                column,
                key: self.key_at(&error),
                message: error.message().trim().to_string(),
            }
        })
    }

    /// The 1-based line and column (in characters) of byte `offset`.
    pub(crate) fn line_column(&self, offset: usize) -> (usize, usize) {
        let offset = floor_char_boundary(&self.text, offset.min(self.text.len()));
        let before = &self.text[..offset];
        let line = before.matches('\n').count() + 1;
        let line_start = before.rfind('\n').map_or(0, |i| i + 1);
        (line, before[line_start..].chars().count() + 1)
    }

    /// The dotted key path (`section.key`) an error at `offset` is about: the innermost key whose
    /// name or value holds `offset` in the parsed document's spans (toml's own parser, so
    /// multi-line strings, inline tables, quoted and dotted keys are what TOML says they are).
    /// Absent when the error is about no key (a syntax error between keys).
    fn key_at(&self, error: &toml::de::Error) -> Option<String> {
        let span = error.span()?;
        // Recoverable: a document with a duplicate key still yields its keys and their places.
        let (root, _) = toml::de::DeTable::parse_recoverable(&self.text);
        if let Some(path) = key_path_at(root.get_ref(), span.start) {
            return Some(path);
        }
        // The repeated key itself is not in the document toml keeps (the first one is): the error
        // spans its name, under the section whose header comes last before it.
        let name = self.text.get(span)?.trim().trim_matches('"');
        if !error.message().starts_with("duplicate key") || name.is_empty() {
            return None;
        }
        Some(match section_at(root.get_ref(), error.span()?.start) {
            Some(section) => format!("{section}.{name}"),
            None => name.to_string(),
        })
    }
}

/// The dotted name of the innermost table whose header (its span) comes last before `offset`.
fn section_at(table: &toml::de::DeTable<'_>, offset: usize) -> Option<String> {
    let (key, inner) = table
        .iter()
        .filter_map(|(key, value)| match value.get_ref() {
            toml::de::DeValue::Table(inner) if value.span().start <= offset => Some((key, value.span().start, inner)),
            _ => None,
        })
        .max_by_key(|(_, start, _)| *start)
        .map(|(key, _, inner)| (key, inner))?;
    Some(match section_at(inner, offset) {
        Some(deeper) => format!("{}.{deeper}", key.get_ref()),
        None => key.get_ref().to_string(),
    })
}

/// The innermost key of `table` (dotted from it) whose name or value spans `offset`.
fn key_path_at(table: &toml::de::DeTable<'_>, offset: usize) -> Option<String> {
    // Inclusive of the end: an error at a value's end (a list left open) is about that value.
    let holds = |span: std::ops::Range<usize>| span.start <= offset && offset <= span.end;
    for (key, value) in table {
        let inner = match value.get_ref() {
            toml::de::DeValue::Table(inner) => key_path_at(inner, offset),
            // `[[section]]`: an array of tables; its tables' keys are under the same name.
            toml::de::DeValue::Array(items) => items.into_iter().find_map(|item| match item.get_ref() {
                toml::de::DeValue::Table(inner) => key_path_at(inner, offset),
                _ => None,
            }),
            _ => None,
        };
        if let Some(inner) = inner {
            return Some(format!("{}.{inner}", key.get_ref()));
        }
        if holds(key.span()) || holds(value.span()) {
            return Some(key.get_ref().to_string());
        }
    }
    None
}

/// The largest char boundary at or below `offset`.
fn floor_char_boundary(text: &str, mut offset: usize) -> usize {
    while !text.is_char_boundary(offset) {
        offset -= 1;
    }
    offset
}

/// `text` cut to [`MAX_QUOTED_CHARS`] characters for an error message.
pub(crate) fn clip(text: &str) -> String {
    let mut chars = text.chars();
    let clipped: String = chars.by_ref().take(MAX_QUOTED_CHARS).collect();
    if chars.next().is_some() { format!("{clipped}…") } else { clipped }
}
