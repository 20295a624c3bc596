//! Reading the config file: which one, bounded in size, and TOML errors turned into
//! `file:line:column: key …` messages.

use std::io::Read;
use std::path::{Path, PathBuf};

use super::ConfigError;

/// The largest config file read: a settings file is a few hundred bytes, so anything this big is
/// the wrong file, and reading it whole must not cost the bridge its memory.
pub const MAX_CONFIG_BYTES: u64 = 1 << 20;

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
        let unreadable = |source| ConfigError::Unreadable { path: path.clone(), source };
        let file = match std::fs::File::open(path) {
            Ok(file) => file,
            Err(error) if !required && error.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(error) => return Err(unreadable(error)),
        };
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
                key: self.key_at(offset, error.message()),
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

    /// The `section.key` an error at `offset` is about: the key of a `key = value` line under the
    /// nearest `[section]` above it. Not a TOML parser: a hint for the message, absent when the
    /// line is no such assignment (a syntax error, a header, a multi-line value).
    fn key_at(&self, offset: usize, message: &str) -> Option<String> {
        let offset = floor_char_boundary(&self.text, offset.min(self.text.len()));
        let line_start = self.text[..offset].rfind('\n').map_or(0, |i| i + 1);
        let line = self.text[line_start..].lines().next().unwrap_or_default();
        let section = self.text[..line_start]
            .lines()
            .rev()
            .map(str::trim)
            .find(|l| l.starts_with('[') && !l.starts_with("[["))
            .and_then(|l| l.strip_prefix('[')?.split(']').next())
            .map(str::trim);
        let trimmed = line.trim();
        if trimmed.starts_with('[') {
            // An unknown section is reported at its header: the key is the section itself.
            return message.starts_with("unknown field").then(|| trimmed.trim_matches(['[', ']', ' ']).to_string());
        }
        let (name, _) = trimmed.split_once('=')?;
        let name = name.trim().trim_matches('"');
        let plain = !name.is_empty() && name.chars().all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c));
        plain.then(|| match section {
            Some(section) => format!("{section}.{name}"),
            None => name.to_string(),
        })
    }
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
