//! Claude Code CLI wire types for bidirectional `stream-json` mode, as observed on the CLI 2.1.328
//! (`docs/peers/claude.md`).
//!
//! The CLI speaks newline-delimited JSON objects discriminated by `type` (no JSON-RPC):
//!
//! - what the CLI writes on stdout: [`CliMessage`] (built by the never-failing
//!   [`CliMessage::from_raw`] from the line's text, in one strict pass or else tolerantly, or by
//!   [`CliMessage::from_value`]): [`system`] lines, `assistant` / `user` lines carrying Anthropic
//!   [`content`] blocks, raw Messages-API [`stream`] events, the turn's `result`, and the [`control`]
//!   protocol (requests the host must answer, answers to ours, cancellations);
//! - what the client writes on stdin: [`ClientMessage`] (user lines and control envelopes), with
//!   builders for the lines clawbridge sends ([`UserLine::text`], [`ControlRequest::initialize`],
//!   [`ControlRequest::interrupt`], [`ControlResponse::success`], [`PermissionResult::allow`], …);
//! - the version gate on `claude --version` and `claude_code_version`: [`version`].
//!
//! Decoding is tolerant by design (docs/peers/claude.md#unknown-message-types-and-fields: fields and message types
//! change with every CLI release): every field is optional or defaulted, scalar fields of the wrong
//! type decode as absent instead of failing the line, every struct keeps what it does not model in
//! `extra`, every tagged enum has a catch-all holding the raw JSON and the decode error, and
//! `deny_unknown_fields` is never used. A line that cannot be typed is still a [`CliMessage`], so the
//! reader never stops and a `control_request` it cannot type can still be answered from the raw JSON.

use serde_json::{Map, Value};

/// Fields of a wire object that these types do not model, kept exactly as received so nothing the CLI
/// sends is lost (and, on client-sent messages, a way to pass fields a newer CLI understands).
pub type Extra = Map<String, Value>;

/// A wire value these types could not give a variant: kept whole, with the reason.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Undecoded {
    /// The value exactly as received (tag included), so a caller can log, forward or answer it.
    pub raw: Value,
    /// Why a known tag's fields did not decode; `None` when the tag is simply unknown (or absent).
    pub decode_error: Option<String>,
}

impl Undecoded {
    /// The string under `key` in the raw object (the tag a caller may want to log).
    pub fn get_str(&self, key: &str) -> Option<&str> {
        self.raw.get(key).and_then(Value::as_str)
    }
}

/// Defines an enum over the values of a string tag field (`type`, `subtype`, `behavior`, …): one
/// variant per known tag with its typed fields (the tag itself removed before they decode), plus a
/// catch-all holding an [`Undecoded`], together with a never-failing decoder and its inverse.
/// `Serialize` / `Deserialize` go through the same two functions, so such enums nest inside structs.
macro_rules! tagged_enum {
    (
        $(#[$meta:meta])*
        pub enum $name:ident, tag = $tag:literal, other = $other:ident {
            $(
                $(#[$vmeta:meta])*
                $variant:ident($ty:ty) = $wire:literal,
            )+
        }
    ) => {
        $(#[$meta])*
        #[derive(Clone, Debug, PartialEq)]
        pub enum $name {
            $(
                $(#[$vmeta])*
                #[doc = concat!("\n\n`", $tag, ": \"", $wire, "\"`")]
                $variant($ty),
            )+
            /// A value these types do not model: an unknown or missing tag, a value that is not an
            /// object, or a known tag whose fields did not decode. Kept whole.
            $other($crate::claude::Undecoded),
        }

        impl $name {
            /// Every tag value that has its own variant.
            pub const KNOWN_TAGS: &'static [&'static str] = &[$($wire),+];

            /// Decodes `value` by its tag. Never fails: anything that does not fit a known variant lands
            /// in the catch-all (with the decode error text, for a known tag).
            pub fn from_value(value: serde_json::Value) -> Self {
                let serde_json::Value::Object(mut map) = value else {
                    return $name::$other($crate::claude::Undecoded { raw: value, decode_error: None });
                };
                let tag = map.get($tag).and_then(serde_json::Value::as_str).map(str::to_owned);
                match tag.as_deref() {
                    $(
                        Some($wire) => {
                            let tag_value = map.remove($tag);
                            let rest = serde_json::Value::Object(map);
                            match <$ty as serde::Deserialize>::deserialize(&rest) {
                                Ok(decoded) => $name::$variant(decoded),
                                Err(e) => {
                                    let mut raw = rest;
                                    if let (serde_json::Value::Object(m), Some(t)) = (&mut raw, tag_value) {
                                        m.insert($tag.to_owned(), t);
                                    }
                                    $name::$other($crate::claude::Undecoded { raw, decode_error: Some(e.to_string()) })
                                }
                            }
                        }
                    )+
                    _ => $name::$other($crate::claude::Undecoded {
                        raw: serde_json::Value::Object(map),
                        decode_error: None,
                    }),
                }
            }

            /// Decodes a line from its JSON text. Never fails, and gives what
            /// [`from_value`](Self::from_value) gives for the same JSON (members written twice
            /// aside, see `decode`). A line that fits its variant exactly decodes in one strict
            /// pass, nested tagged values included; any other line is decoded again by
            /// [`from_raw_tolerant`](Self::from_raw_tolerant), which gives the same for the lines
            /// the strict pass answers.
            pub fn from_raw(raw: &serde_json::value::RawValue) -> Self {
                match $crate::decode::by_tag::decode_text::<Self>(raw.get()) {
                    Ok(decoded) => decoded,
                    Err(_) => Self::from_raw_tolerant(raw),
                }
            }

            /// The tolerant decode alone (what [`from_raw`](Self::from_raw) falls back to): the tag
            /// is peeked (borrowed), then the variant's fields decode from the text with the tag
            /// skipped and the tolerant field rules; nested tagged values go through a `Value`. Public
            /// so that tests and fuzz targets can hold the two against each other.
            pub fn from_raw_tolerant(raw: &serde_json::value::RawValue) -> Self {
                let text = raw.get();
                let tag = match $crate::decode::peek_tag(text, $tag) {
                    $crate::decode::Peeked::Tag(tag) => tag,
                    $crate::decode::Peeked::NoTag | $crate::decode::Peeked::NotAnObject => {
                        return Self::from_value(serde_json::from_str(text).unwrap_or_default());
                    }
                };
                let decoded = match tag.as_ref() {
                    $(
                        $wire => $crate::decode::decode_without::<$ty>(text, $tag).map($name::$variant),
                    )+
                    _ => return Self::from_value(serde_json::from_str(text).unwrap_or_default()),
                };
                decoded.unwrap_or_else(|decode_error| {
                    let raw = serde_json::from_str(text).unwrap_or_default();
                    $name::$other($crate::claude::Undecoded { raw, decode_error: Some(decode_error) })
                })
            }

            /// The tag value: the variant's wire name, or whatever the catch-all's raw value carries.
            pub fn tag(&self) -> Option<&str> {
                match self {
                    $($name::$variant(_) => Some($wire),)+
                    $name::$other(u) => u.get_str($tag),
                }
            }

            /// The wire JSON (tag included); the inverse of [`from_value`](Self::from_value).
            pub fn to_value(&self) -> serde_json::Value {
                let encoded = match self {
                    $($name::$variant(v) => serde_json::to_value(v),)+
                    $name::$other(u) => return u.raw.clone(),
                };
                // Serialising these types cannot fail (every map key is a string); a struct always
                // encodes as an object, which gets its tag back.
                let mut encoded = encoded.unwrap_or(serde_json::Value::Null);
                if let serde_json::Value::Object(m) = &mut encoded {
                    let tag = self.tag().unwrap_or_default().to_owned();
                    m.insert($tag.to_owned(), serde_json::Value::String(tag));
                }
                encoded
            }
        }

        impl serde::Serialize for $name {
            fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                serde::Serialize::serialize(&self.to_value(), serializer)
            }
        }

        impl $crate::decode::by_tag::Tagged for $name {
            const TAG: &'static str = $tag;

            fn has_variant(tag: &str) -> bool {
                Self::KNOWN_TAGS.contains(&tag)
            }

            fn decode_variant<'de, D: serde::Deserializer<'de>>(tag: &str, body: D) -> Result<Self, D::Error> {
                match tag {
                    $($wire => <$ty as serde::Deserialize>::deserialize(body).map($name::$variant),)+
                    _ => Err(serde::de::Error::custom("a tag without a variant")),
                }
            }

            fn untyped(raw: serde_json::Value) -> Self {
                $name::$other($crate::claude::Undecoded { raw, decode_error: None })
            }
        }

        impl<'de> serde::Deserialize<'de> for $name {
            /// Inside a strict decode, the one pass of `decode::by_tag` (which gives up on what
            /// does not fit a variant); otherwise [`from_value`](Self::from_value), which never fails.
            fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
                if $crate::decode::by_tag::is_strict() {
                    return $crate::decode::by_tag::deserialize::<Self, D>(deserializer);
                }
                <serde_json::Value as serde::Deserialize>::deserialize(deserializer).map($name::from_value)
            }
        }
    };
}

/// Field decoders that never fail: a value of the wrong type decodes as absent (or empty), so one
/// drifted field never costs the whole line (a lost `result` would leave the turn without its end).
///
/// Inside a strict decode (`decode::by_tag`) each of them decodes its type as such and fails
/// where it would otherwise drop the value: the strict pass then gives up and the line is decoded
/// again with these tolerant rules, so a drifted field still costs nothing but that second pass.
mod lenient {
    use serde::de::DeserializeOwned;
    use serde::{Deserialize, Deserializer};
    use serde_json::Value;

    use crate::decode::by_tag::is_strict;

    /// `Some(T)` when the value decodes as `T`; `None` for `null` or anything else.
    pub fn opt<'de, D: Deserializer<'de>, T: DeserializeOwned>(d: D) -> Result<Option<T>, D::Error> {
        if is_strict() {
            return Option::<T>::deserialize(d);
        }
        let value = Value::deserialize(d)?;
        // The documented `None` for `null`, given before `from_value`, which would build and drop
        // an error for it: `parent_tool_use_id` is `null` on every main-agent line.
        if value.is_null() {
            return Ok(None);
        }
        Ok(serde_json::from_value(value).ok())
    }

    /// A string, or the empty string for `null` or anything else (for ids and texts that are never
    /// meaningfully absent).
    pub fn opt_string<'de, D: Deserializer<'de>>(d: D) -> Result<String, D::Error> {
        if is_strict() {
            return Option::<String>::deserialize(d).map(Option::unwrap_or_default);
        }
        Ok(match Value::deserialize(d)? {
            Value::String(s) => s,
            _ => String::new(),
        })
    }

    /// A count: any non-negative number (a float is truncated), else `None`.
    pub fn count<'de, D: Deserializer<'de>>(d: D) -> Result<Option<u64>, D::Error> {
        if is_strict() {
            return Option::<u64>::deserialize(d);
        }
        let value = Value::deserialize(d)?;
        Ok(value.as_u64().or_else(|| value.as_f64().filter(|f| f.is_finite() && *f >= 0.0).map(|f| f as u64)))
    }

    /// The elements of an array that decode as `T` (others dropped); empty for anything but an array.
    pub fn vec<'de, D: Deserializer<'de>, T: DeserializeOwned>(d: D) -> Result<Vec<T>, D::Error> {
        if is_strict() {
            return Vec::<T>::deserialize(d);
        }
        Ok(match Value::deserialize(d)? {
            Value::Array(items) => items.into_iter().filter_map(|item| serde_json::from_value(item).ok()).collect(),
            _ => Vec::new(),
        })
    }
}

pub mod content;
pub mod control;
pub mod messages;
pub mod stream;
pub mod system;
pub mod version;

pub use content::*;
pub use control::*;
pub use messages::*;
pub use stream::*;
pub use system::*;
pub use version::{VersionPolicy, VersionRejected, VersionVerdict};

#[cfg(test)]
mod tests;
