//! The strict one-pass decode of a tagged object. The members are read once, in the order they
//! were written: those before the tag are held as their text (skipped over, nothing built; there
//! are none when the tag comes first, as the peers write it), and from the tag on the variant's
//! type decodes straight from the text, the held members handed to it first, each decoded from its
//! own text. No peek reads the line ahead of the decode, and a nested tagged object decodes the
//! same way inside the same pass. An object whose tag names no variant becomes the catch-all in
//! the same pass, holding the whole object as a `Value` (the tolerant decode keeps the same).
//!
//! Holding text rather than `Value`s keeps a member written twice inside a held one an error, as
//! it is when the text is decoded straight (a `Value` would keep the last). Decoding a held member
//! from its own text starts serde_json's nesting budget (128 levels) afresh, where the tolerant
//! decode spends one budget on the whole line, so the pass gives up on a held member nested deeper
//! than [`MAX_HELD_NESTING`].
//!
//! *Strict* means it gives up (an error) where the tolerant decode would record a decode error or
//! drop a drifted field: a missing or non-string tag, a tag written twice, a field of the wrong
//! type, a variant whose fields do not decode. A caller runs it first and, when it gives up, runs
//! the tolerant decode from the start, so what a line decodes to never depends on which of the two
//! answered. `claude/tests.rs` checks that the pass answers every recorded line and holds its
//! result against the `Value` decode in three member orders and against the tolerant decode on
//! hand-written edge cases; the `claude_messages` fuzz target holds it against the tolerant decode
//! on any input.
//!
//! The field decoders that are tolerant (`claude::lenient`) and the tagged enums' `Deserialize`
//! ask [`is_strict`] which of the two they are part of. That is a flag of the running thread, set
//! only for the duration of one synchronous decode ([`strictly`]), because serde hands a field
//! decoder nothing but the deserializer: there is no way to pass it an argument.

use std::borrow::Cow;
use std::cell::Cell;
use std::fmt;
use std::marker::PhantomData;

use serde::de::value::{BorrowedStrDeserializer, StringDeserializer};
use serde::de::{self, DeserializeSeed, Deserializer, MapAccess, Visitor};
use serde::forward_to_deserialize_any;
use serde_json::Value;
use serde_json::value::RawValue;

use super::{CowStr, error_text};

thread_local! {
    /// Whether the decode running on this thread is the strict one (see the module docs).
    static STRICT: Cell<bool> = const { Cell::new(false) };
}

/// How deeply a member held before the tag may nest (arrays and objects inside it). Tagged
/// objects sit a few levels deep in every type that uses this pass, so a held member within this
/// bound stays inside serde_json's 128 levels whichever way it is decoded.
const MAX_HELD_NESTING: usize = 64;

/// Whether the decode running on this thread is the strict one.
pub(crate) fn is_strict() -> bool {
    STRICT.with(Cell::get)
}

/// Runs `decode` as a strict decode; the flag is put back afterwards, also when `decode` unwinds.
fn strictly<T>(decode: impl FnOnce() -> T) -> T {
    /// Puts back the flag's value from before.
    struct Restore(bool);
    impl Drop for Restore {
        fn drop(&mut self) {
            STRICT.with(|strict| strict.set(self.0));
        }
    }
    let _restore = Restore(STRICT.with(|strict| strict.replace(true)));
    decode()
}

/// A type that is one of several variants chosen by a string member of an object.
pub(crate) trait Tagged: Sized {
    /// The member that names the variant.
    const TAG: &'static str;

    /// Whether `tag` names a variant.
    fn has_variant(tag: &str) -> bool;

    /// Decodes the variant named `tag` (one [`has_variant`](Self::has_variant) accepts) from
    /// `body`, the object's members without the tag.
    fn decode_variant<'de, D: Deserializer<'de>>(tag: &str, body: D) -> Result<Self, D::Error>;

    /// The catch-all for an object whose tag has no variant, holding the whole object.
    fn untyped(raw: Value) -> Self;
}

/// The strict decode of the tagged object in `text` (the whole text: trailing bytes fail it).
pub(crate) fn decode_text<T: Tagged>(text: &str) -> Result<T, String> {
    strictly(|| {
        let mut deserializer = serde_json::Deserializer::from_str(text);
        let decoded = deserializer.deserialize_map(ByTag::<T>::new())?;
        deserializer.end()?;
        Ok(decoded)
    })
    .map_err(|e: serde_json::Error| error_text(&e))
}

/// The strict decode of a tagged object from any deserializer: what a tagged enum's `Deserialize`
/// does inside a strict decode.
pub(crate) fn deserialize<'de, T: Tagged, D: Deserializer<'de>>(deserializer: D) -> Result<T, D::Error> {
    deserializer.deserialize_map(ByTag::<T>::new())
}

/// Reads an object's members up to its tag, then has the variant decode the rest.
struct ByTag<T>(PhantomData<T>);

impl<T> ByTag<T> {
    fn new() -> Self {
        ByTag(PhantomData)
    }
}

impl<'de, T: Tagged> Visitor<'de> for ByTag<T> {
    type Value = T;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "an object with a `{}` member", T::TAG)
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<T, A::Error> {
        let mut before = Vec::new();
        while let Some(CowStr(key)) = map.next_key::<CowStr<'de>>()? {
            if key == T::TAG {
                let CowStr(tag) = map.next_value::<CowStr<'de>>()?;
                if !T::has_variant(&tag) {
                    return untyped(before, T::TAG, tag, map).map(T::untyped);
                }
                let body = Body { before: before.into_iter(), held: None, rest: map, tag: T::TAG };
                return T::decode_variant(&tag, body);
            }
            let held = map.next_value::<&'de RawValue>()?;
            if nested_deeper_than(held.get(), MAX_HELD_NESTING) {
                return Err(de::Error::custom("a member before the tag nested too deeply to hold"));
            }
            before.push((key, held));
        }
        Err(de::Error::custom(format_args!("no `{}` member", T::TAG)))
    }
}

/// Whether the arrays and objects in a JSON text nest deeper than `limit`. Each level opens with a
/// bracket, so a text with no more opening brackets than `limit` (inside strings or not) cannot;
/// that count is a fast pass, and the exact scan follows only for a text with more.
fn nested_deeper_than(text: &str, limit: usize) -> bool {
    let openings = text.bytes().filter(|byte| matches!(byte, b'[' | b'{')).count();
    openings > limit && nesting(text) > limit
}

/// How deeply the arrays and objects in a JSON text nest (0 for a scalar). The text is valid JSON
/// (a `RawValue`), so brackets inside strings are the only ones to step over.
fn nesting(text: &str) -> usize {
    let (mut depth, mut deepest, mut in_string, mut escaped) = (0usize, 0usize, false, false);
    for byte in text.bytes() {
        if in_string {
            match byte {
                _ if escaped => escaped = false,
                b'\\' => escaped = true,
                b'"' => in_string = false,
                _ => {}
            }
            continue;
        }
        match byte {
            b'"' => in_string = true,
            b'[' | b'{' => {
                depth += 1;
                deepest = deepest.max(depth);
            }
            b']' | b'}' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    deepest
}

/// The whole object whose tag has no variant, as a `Value` (the tolerant decode's catch-all keeps
/// the same): the members read before the tag, the tag, the rest. A second tag member fails it, as
/// the tolerant decode would take the last one, which might name a variant.
fn untyped<'de, A: MapAccess<'de>>(
    before: Vec<(Cow<'de, str>, &'de RawValue)>,
    tag_member: &str,
    tag: Cow<'de, str>,
    mut rest: A,
) -> Result<Value, A::Error> {
    let mut object = serde_json::Map::new();
    for (key, text) in before {
        object.insert(key.into_owned(), serde_json::from_str(text.get()).map_err(de::Error::custom)?);
    }
    object.insert(tag_member.to_owned(), Value::String(tag.into_owned()));
    while let Some(CowStr(key)) = rest.next_key::<CowStr<'de>>()? {
        if key == tag_member {
            return Err(de::Error::custom(format_args!("the `{tag_member}` member twice")));
        }
        object.insert(key.into_owned(), rest.next_value::<Value>()?);
    }
    Ok(Value::Object(object))
}

/// An object's members without its tag: those read before the tag (held), then the rest of the
/// object as it is read. It answers a second tag member with an error.
struct Body<'de, A> {
    /// The members read before the tag (their text), in the order they were written.
    before: std::vec::IntoIter<(Cow<'de, str>, &'de RawValue)>,
    /// The text of the held member whose key was handed out last.
    held: Option<&'de RawValue>,
    /// The rest of the object.
    rest: A,
    /// The tag member's name.
    tag: &'static str,
}

impl<'de, A: MapAccess<'de>> Deserializer<'de> for Body<'de, A> {
    type Error = A::Error;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Self::Error> {
        visitor.visit_map(self)
    }

    forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string
        bytes byte_buf option unit unit_struct newtype_struct seq tuple
        tuple_struct map struct enum identifier ignored_any
    }
}

impl<'de, A: MapAccess<'de>> MapAccess<'de> for Body<'de, A> {
    type Error = A::Error;

    fn next_key_seed<K: DeserializeSeed<'de>>(&mut self, seed: K) -> Result<Option<K::Value>, Self::Error> {
        let key = match self.before.next() {
            Some((key, value)) => {
                self.held = Some(value);
                key
            }
            None => match self.rest.next_key::<CowStr<'de>>()? {
                None => return Ok(None),
                Some(CowStr(key)) if key == self.tag => {
                    return Err(de::Error::custom(format_args!("the `{}` member twice", self.tag)));
                }
                Some(CowStr(key)) => key,
            },
        };
        match key {
            Cow::Borrowed(key) => seed.deserialize(BorrowedStrDeserializer::new(key)).map(Some),
            Cow::Owned(key) => seed.deserialize(StringDeserializer::new(key)).map(Some),
        }
    }

    fn next_value_seed<S: DeserializeSeed<'de>>(&mut self, seed: S) -> Result<S::Value, Self::Error> {
        match self.held.take() {
            Some(text) => {
                let mut deserializer = serde_json::Deserializer::from_str(text.get());
                seed.deserialize(&mut deserializer).map_err(de::Error::custom)
            }
            None => self.rest.next_value_seed(seed),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Deserialize;

    #[derive(Debug, PartialEq)]
    enum Shape {
        Circle(Circle),
        Other(Value),
    }

    #[derive(Debug, Deserialize, PartialEq)]
    struct Circle {
        r: u32,
        #[serde(default)]
        inner: Option<Inner>,
    }

    /// A nested tagged object, decoded inside the same pass.
    #[derive(Debug, PartialEq)]
    struct Inner(Box<Shape>);

    impl<'de> Deserialize<'de> for Inner {
        fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
            assert!(is_strict(), "a nested decode runs inside the strict one");
            deserialize::<Shape, D>(d).map(|shape| Inner(Box::new(shape)))
        }
    }

    impl Tagged for Shape {
        const TAG: &'static str = "type";
        fn has_variant(tag: &str) -> bool {
            tag == "circle"
        }
        fn decode_variant<'de, D: Deserializer<'de>>(tag: &str, body: D) -> Result<Self, D::Error> {
            match tag {
                "circle" => Circle::deserialize(body).map(Shape::Circle),
                _ => Err(de::Error::custom("no variant")),
            }
        }
        fn untyped(raw: Value) -> Self {
            Shape::Other(raw)
        }
    }

    fn circle(r: u32, inner: Option<Inner>) -> Shape {
        Shape::Circle(Circle { r, inner })
    }

    #[test]
    fn the_tag_may_stand_anywhere_and_nested_objects_decode_in_the_same_pass() {
        let inner = || Some(Inner(Box::new(circle(2, None))));
        assert_eq!(decode_text::<Shape>(r#"{"type":"circle","r":1}"#), Ok(circle(1, None)));
        assert_eq!(decode_text::<Shape>(r#"{"r":1,"type":"circle"}"#), Ok(circle(1, None)));
        assert_eq!(
            decode_text::<Shape>(r#"{"inner":{"r":2,"type":"circle"},"type":"circle","r":1}"#),
            Ok(circle(1, inner()))
        );
        assert_eq!(
            decode_text::<Shape>(r#"{"type":"circle","r":1,"inner":{"type":"circle","r":2}}"#),
            Ok(circle(1, inner()))
        );
        assert!(!is_strict(), "the flag is put back");
    }

    #[test]
    fn nesting_counts_brackets_outside_strings() {
        assert_eq!(nesting("1"), 0);
        assert_eq!(nesting(r#"{"a":[1,{"b":[]}]}"#), 4);
        assert_eq!(nesting(r#"["[[[{", "\"[[", {}]"#), 2);
        let in_strings = format!(r#"["{}"]"#, "[".repeat(100));
        assert!(!nested_deeper_than(&in_strings, 64), "brackets in strings do not nest");
        assert!(nested_deeper_than(&format!("{}{}", "[".repeat(65), "]".repeat(65)), 64));
        assert!(!nested_deeper_than(&format!("{}{}", "[".repeat(64), "]".repeat(64)), 64));
    }

    #[test]
    fn a_tag_without_a_variant_keeps_the_whole_object() {
        let whole = serde_json::json!({"a": [1], "type": "square", "r": 1});
        for text in [r#"{"a":[1],"type":"square","r":1}"#, r#"{"type":"square","r":1,"a":[1]}"#] {
            assert_eq!(decode_text::<Shape>(text), Ok(Shape::Other(whole.clone())), "{text}");
        }
    }

    #[test]
    fn it_gives_up_where_the_tolerant_decode_would_make_something_else() {
        for text in [
            r#"{"r":1}"#,
            r#"{"type":"square","r":1,"type":"circle"}"#,
            r#"{"type":5,"r":1}"#,
            r#"{"type":"circle","r":1,"type":"circle"}"#,
            r#"{"r":1,"type":"circle","r":2}"#,
            r#"{"type":"circle","r":"x"}"#,
            r#"{"type":"circle","r":1,"inner":{"type":5}}"#,
            r#"{"inner":{"type":"circle","r":2,"r":3},"type":"circle","r":1}"#,
            format!(r#"{{"x":{}{},"type":"circle","r":1}}"#, "[".repeat(65), "]".repeat(65)).as_str(),
            r#"{"type":"circle","r":1,"inner":{"r":2}}"#,
            r#"{"type":"circle","r":1} x"#,
            r#"["type","circle"]"#,
        ] {
            assert!(decode_text::<Shape>(text).is_err(), "{text}");
        }
        assert!(!is_strict(), "the flag is put back after a failed decode");
    }
}
