//! The decode of a tagged line from its JSON text: a peek reads the tag alone (borrowed, nothing
//! built), then the variant's type decodes straight from the text with the tag member skipped on
//! the way ([`WithoutMember`]), so no `Value` tree of the line is made. Only a line that does not
//! fit a variant pays for a `Value` (its catch-all keeps one). Codex and ACP lines are peeked this
//! way; for Claude lines this is the tolerant decode behind the strict one pass of [`by_tag`],
//! which reads the line once and finds the tag on the way.
//!
//! Where a `Value` and the text can differ is a member written twice, which no peer does: a `Value`
//! keeps the last; the peek takes a tag written first at once (the peers write it first), and a
//! typed field written twice fails its variant's decode ("duplicate field"), so such a line lands in
//! the catch-all with that error instead of decoding with its last value. Nothing is lost either way.

use std::borrow::Cow;
use std::fmt;

use serde::de::value::{BorrowedStrDeserializer, StringDeserializer};
use serde::de::{self, DeserializeSeed, Deserializer, IgnoredAny, MapAccess, Visitor};
use serde::forward_to_deserialize_any;
use serde_json::value::RawValue;

pub(crate) mod by_tag;

/// A string that borrows from the input when it has no escapes.
pub(crate) struct CowStr<'de>(pub(crate) Cow<'de, str>);

impl<'de> de::Deserialize<'de> for CowStr<'de> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct CowVisitor;
        impl<'de> Visitor<'de> for CowVisitor {
            type Value = CowStr<'de>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a string")
            }
            fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Self::Value, E> {
                Ok(CowStr(Cow::Borrowed(v)))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
                Ok(CowStr(Cow::Owned(v.to_owned())))
            }
            fn visit_string<E: de::Error>(self, v: String) -> Result<Self::Value, E> {
                Ok(CowStr(Cow::Owned(v)))
            }
        }
        deserializer.deserialize_str(CowVisitor)
    }
}

/// What the tag peek found in an object.
pub(crate) enum Peeked<'a> {
    /// The tag member is a string.
    Tag(Cow<'a, str>),
    /// The object has no tag member, or it is not a string.
    NoTag,
    /// The text is JSON but no object.
    NotAnObject,
}

/// Reads `tag` from the object in `text` without building anything but the tag (borrowed when it
/// has no escapes). `text` must be valid JSON (it comes from a [`RawValue`]): a tag written as the
/// first member is taken without reading further (the peers write it first), so the peek of a
/// usual line costs a few bytes; otherwise the last tag member counts, as in a `Value`.
pub(crate) fn peek_tag<'a>(text: &'a str, tag: &str) -> Peeked<'a> {
    struct TagVisitor<'t, 's, 'de> {
        /// The member name looked for.
        tag: &'t str,
        /// Where the tag's value goes: set even when the read stops early.
        found: &'s mut Option<&'de RawValue>,
    }
    impl<'de> Visitor<'de> for TagVisitor<'_, '_, 'de> {
        type Value = ();
        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("a JSON object")
        }
        fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
            let mut first = true;
            while let Some(CowStr(key)) = map.next_key::<CowStr<'de>>()? {
                if key == self.tag {
                    *self.found = Some(map.next_value::<&'de RawValue>()?);
                    if first {
                        // The rest is not read, so serde_json reports the object unfinished: that
                        // error is expected and ignored (the text is known to be valid).
                        return Ok(());
                    }
                } else {
                    map.next_value::<IgnoredAny>()?;
                }
                first = false;
            }
            Ok(())
        }
    }
    if !text.trim_start().starts_with('{') {
        return Peeked::NotAnObject;
    }
    let mut found = None;
    let mut deserializer = serde_json::Deserializer::from_str(text);
    let read = deserializer.deserialize_map(TagVisitor { tag, found: &mut found });
    match found {
        Some(raw) if raw.get().starts_with('"') => match serde_json::from_str::<CowStr<'a>>(raw.get()) {
            Ok(CowStr(tag)) => Peeked::Tag(tag),
            Err(_) => Peeked::NoTag,
        },
        Some(_) => Peeked::NoTag,
        None if read.is_ok() => Peeked::NoTag,
        // Should the text not be an object after all, the caller's slow path (a `Value`) says what
        // it is.
        None => Peeked::NotAnObject,
    }
}

/// A decode error's text as decoding from a `Value` words it: without serde_json's position
/// suffix, which a `Value` has no line and column for (and which would make the same drift read
/// differently depending on where in the line it sits).
pub(crate) fn error_text(error: &serde_json::Error) -> String {
    let text = error.to_string();
    if error.line() == 0 {
        return text;
    }
    let suffix = format!(" at line {} column {}", error.line(), error.column());
    match text.strip_suffix(&suffix) {
        Some(message) => message.to_owned(),
        None => text,
    }
}

/// Decodes `T` from the object in `text`, skipping every `member` member (the tag, which the
/// variant types do not model and whose `extra` must not collect it).
pub(crate) fn decode_without<'de, T: de::Deserialize<'de>>(text: &'de str, member: &str) -> Result<T, String> {
    let mut deserializer = serde_json::Deserializer::from_str(text);
    T::deserialize(WithoutMember { inner: &mut deserializer, member }).map_err(|e| error_text(&e))
}

/// A deserializer of an object that hides one member from what it decodes into.
struct WithoutMember<'m, D> {
    /// The deserializer of the object.
    inner: D,
    /// The member name to skip.
    member: &'m str,
}

impl<'de, D: Deserializer<'de>> Deserializer<'de> for WithoutMember<'_, D> {
    type Error = D::Error;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Self::Error> {
        self.inner.deserialize_map(SkippingVisitor { visitor, member: self.member })
    }

    forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string
        bytes byte_buf option unit unit_struct newtype_struct seq tuple
        tuple_struct map struct enum identifier ignored_any
    }
}

/// Hands the object's members on to `visitor`, without the skipped one.
struct SkippingVisitor<'m, V> {
    /// What the caller's type decodes with.
    visitor: V,
    /// The member name to skip.
    member: &'m str,
}

impl<'de, V: Visitor<'de>> Visitor<'de> for SkippingVisitor<'_, V> {
    type Value = V::Value;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.visitor.expecting(f)
    }

    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
        self.visitor.visit_map(SkippingMap { map, member: self.member })
    }
}

/// The members of an object, without the skipped one.
struct SkippingMap<'m, A> {
    /// The object's members.
    map: A,
    /// The member name to skip.
    member: &'m str,
}

impl<'de, A: MapAccess<'de>> MapAccess<'de> for SkippingMap<'_, A> {
    type Error = A::Error;

    fn next_key_seed<K: DeserializeSeed<'de>>(&mut self, seed: K) -> Result<Option<K::Value>, Self::Error> {
        loop {
            let Some(CowStr(key)) = self.map.next_key::<CowStr<'de>>()? else {
                return Ok(None);
            };
            if key == self.member {
                self.map.next_value::<IgnoredAny>()?;
                continue;
            }
            return match key {
                Cow::Borrowed(key) => seed.deserialize(BorrowedStrDeserializer::new(key)).map(Some),
                Cow::Owned(key) => seed.deserialize(StringDeserializer::new(key)).map(Some),
            };
        }
    }

    fn next_value_seed<S: DeserializeSeed<'de>>(&mut self, seed: S) -> Result<S::Value, Self::Error> {
        self.map.next_value_seed(seed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Deserialize;

    #[derive(Debug, Deserialize, PartialEq)]
    struct Body {
        text: String,
        #[serde(flatten)]
        extra: serde_json::Map<String, serde_json::Value>,
    }

    #[test]
    fn the_tag_is_peeked_borrowed_and_skipped_when_the_body_decodes() {
        let line = r#"{"type":"text","text":"hi","more":[1]}"#;
        let Peeked::Tag(tag) = peek_tag(line, "type") else { panic!("no tag") };
        assert!(matches!(tag, Cow::Borrowed("text")), "a tag without escapes borrows from the line");
        let body: Body = decode_without(line, "type").unwrap();
        assert_eq!(body.text, "hi");
        assert_eq!(body.extra.keys().collect::<Vec<_>>(), ["more"], "the tag is not an unknown member");
        assert!(matches!(peek_tag(r#"{"type":"t\u0065xt"}"#, "type"), Peeked::Tag(t) if t == "text"));
        assert!(
            matches!(peek_tag(r#"{"x":[{"type":"c"}],"type":"a","type":"b"}"#, "type"), Peeked::Tag(t) if t == "b")
        );
        assert!(matches!(peek_tag(r#"{"x":1,"type":"a"}"#, "type"), Peeked::Tag(t) if t == "a"));
        assert!(matches!(peek_tag(r#"{"type":5}"#, "type"), Peeked::NoTag));
        assert!(matches!(peek_tag(r#"{"kind":"x"}"#, "type"), Peeked::NoTag));
        assert!(matches!(peek_tag(r#"["type","x"]"#, "type"), Peeked::NotAnObject));
    }

    #[test]
    fn decode_errors_read_as_from_a_value() {
        let from_text = decode_without::<Body>(r#"{"type":"text","text":5}"#, "type").unwrap_err();
        let from_value = Body::deserialize(&serde_json::json!({"text": 5})).unwrap_err().to_string();
        assert_eq!(from_text, from_value);
    }
}
