//! A pre-tokenizer as callers name it across the seam (the training
//! options, the bindings' `pretokenize`): a preset by its name or an alias
//! (`PRESETS`), or a custom regex, tagged. In serde form a preset is its
//! name (a string) and a custom regex is `{"regex": pattern}`: a name is
//! never taken for a regex, nor a regex for a name.

use super::{preset, PreTokenizerSpec, PresetDef, PRESETS};
use serde::de::{self, Deserializer, MapAccess, Visitor};
use serde::ser::{SerializeMap, Serializer};

/// A named preset or a custom regex (user-given regexes are `isolated`:
/// the text between matches is a piece too).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PreTokenizerChoice {
    Preset(&'static PresetDef),
    Regex(String),
}

impl PreTokenizerChoice {
    /// The preset `name` (its name or an alias), or an error listing them.
    pub fn preset(name: &str) -> Result<Self, String> {
        match preset(name) {
            Some(p) => Ok(Self::Preset(p)),
            None => Err(format!(
                "{name:?} is not a preset ({}); a custom regex is given tagged, as {{\"regex\": {name:?}}}",
                PRESETS.iter().map(|p| p.name).collect::<Vec<_>>().join(", ")
            )),
        }
    }

    /// What the engine runs.
    pub fn spec(&self) -> PreTokenizerSpec {
        match self {
            Self::Preset(p) => PreTokenizerSpec::Preset(p),
            Self::Regex(pattern) => PreTokenizerSpec::Regex { pattern: pattern.clone(), isolated: true },
        }
    }

    /// The preset's name, or the pattern (as models and messages show it).
    pub fn name(&self) -> &str {
        match self {
            Self::Preset(p) => p.name,
            Self::Regex(pattern) => pattern,
        }
    }
}

impl serde::Serialize for PreTokenizerChoice {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            Self::Preset(p) => serializer.serialize_str(p.name),
            Self::Regex(pattern) => {
                let mut map = serializer.serialize_map(Some(1))?;
                map.serialize_entry("regex", pattern)?;
                map.end()
            }
        }
    }
}

impl<'de> serde::Deserialize<'de> for PreTokenizerChoice {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(ChoiceVisitor)
    }
}

struct ChoiceVisitor;

impl<'de> Visitor<'de> for ChoiceVisitor {
    type Value = PreTokenizerChoice;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a preset's name or {\"regex\": pattern}")
    }

    fn visit_str<E: de::Error>(self, name: &str) -> Result<Self::Value, E> {
        PreTokenizerChoice::preset(name).map_err(E::custom)
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let key: Option<String> = map.next_key()?;
        let choice = match key.as_deref() {
            Some("regex") => PreTokenizerChoice::Regex(map.next_value()?),
            Some("preset") => PreTokenizerChoice::preset(&map.next_value::<String>()?).map_err(de::Error::custom)?,
            Some(other) => return Err(de::Error::custom(format!("unknown key {other:?}: expected \"preset\" or \"regex\""))),
            None => return Err(de::Error::custom("an empty map: expected {\"preset\": name} or {\"regex\": pattern}")),
        };
        if let Some(other) = map.next_key::<String>()? {
            return Err(de::Error::custom(format!("one key only (\"preset\" or \"regex\"), also got {other:?}")));
        }
        Ok(choice)
    }
}
