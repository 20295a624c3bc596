//! Deserializers that refuse a list or map past a count while decoding it: a 64 MiB line of
//! `["","",…]` would otherwise build millions of elements (24 bytes and more each, far past the
//! text's size) before anything could count them. The error names the member and its limit, so the
//! host's `-32602` says which one.

use std::collections::BTreeMap;
use std::fmt;
use std::marker::PhantomData;

use serde::de::{self, Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};

/// Reads a JSON array of at most `limit` elements into a `Vec`.
pub fn seq<'de, D, T>(deserializer: D, member: &'static str, limit: usize) -> Result<Vec<T>, D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de>,
{
    deserializer.deserialize_seq(SeqVisitor { member, limit, element: PhantomData })
}

/// Reads `null` or a JSON array of at most `limit` elements.
pub fn option_seq<'de, D, T>(deserializer: D, member: &'static str, limit: usize) -> Result<Option<Vec<T>>, D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de>,
{
    deserializer.deserialize_option(OptionSeqVisitor { member, limit, element: PhantomData })
}

/// Reads a JSON object of at most `limit` members into a `BTreeMap` (a repeated key keeps its
/// last value, as serde's own map does, and counts once per occurrence).
pub fn map<'de, D>(deserializer: D, member: &'static str, limit: usize) -> Result<BTreeMap<String, String>, D::Error>
where
    D: Deserializer<'de>,
{
    deserializer.deserialize_map(MapVisitor { member, limit })
}

fn too_many<E: de::Error>(member: &str, limit: usize, what: &str) -> E {
    E::custom(format!("`{member}` has more than {limit} {what}"))
}

struct SeqVisitor<T> {
    /// The member's wire name, for the error.
    member: &'static str,
    /// The most elements accepted.
    limit: usize,
    /// The element type being read.
    element: PhantomData<T>,
}

impl<'de, T: Deserialize<'de>> Visitor<'de> for SeqVisitor<T> {
    type Value = Vec<T>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "an array of at most {} elements", self.limit)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut access: A) -> Result<Vec<T>, A::Error> {
        let mut out = Vec::new();
        while let Some(element) = access.next_element()? {
            if out.len() == self.limit {
                return Err(too_many(self.member, self.limit, "elements"));
            }
            out.push(element);
        }
        Ok(out)
    }
}

struct OptionSeqVisitor<T> {
    /// The member's wire name, for the error.
    member: &'static str,
    /// The most elements accepted.
    limit: usize,
    /// The element type being read.
    element: PhantomData<T>,
}

impl<'de, T: Deserialize<'de>> Visitor<'de> for OptionSeqVisitor<T> {
    type Value = Option<Vec<T>>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "null or an array of at most {} elements", self.limit)
    }

    fn visit_none<E: de::Error>(self) -> Result<Self::Value, E> {
        Ok(None)
    }

    fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
        Ok(None)
    }

    fn visit_some<D: Deserializer<'de>>(self, deserializer: D) -> Result<Self::Value, D::Error> {
        seq(deserializer, self.member, self.limit).map(Some)
    }
}

struct MapVisitor {
    /// The member's wire name, for the error.
    member: &'static str,
    /// The most members accepted.
    limit: usize,
}

impl<'de> Visitor<'de> for MapVisitor {
    type Value = BTreeMap<String, String>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "an object of at most {} string members", self.limit)
    }

    fn visit_map<A: MapAccess<'de>>(self, mut access: A) -> Result<Self::Value, A::Error> {
        let mut out = BTreeMap::new();
        let mut seen = 0usize;
        while let Some((key, value)) = access.next_entry::<String, String>()? {
            if seen == self.limit {
                return Err(too_many(self.member, self.limit, "members"));
            }
            seen += 1;
            out.insert(key, value);
        }
        Ok(out)
    }
}
