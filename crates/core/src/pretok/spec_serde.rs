//! `PreTokenizerSpec` in model files: `{"type": name}` for a preset (its
//! exact name: the table's, `PRESETS`) and `{"type": "regex", "pattern":
//! ..., "isolated": true}` for a custom regex (`isolated` left out when
//! false, as files written before the field existed read).

use super::{preset, PreTokenizerSpec, PRESETS};
use serde::de::Error as _;
use serde::ser::SerializeMap;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

impl Serialize for PreTokenizerSpec {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            PreTokenizerSpec::Preset(p) => {
                let mut map = serializer.serialize_map(Some(1))?;
                map.serialize_entry("type", p.name)?;
                map.end()
            }
            PreTokenizerSpec::Regex { pattern, isolated } => {
                let mut map = serializer.serialize_map(Some(if *isolated { 3 } else { 2 }))?;
                map.serialize_entry("type", "regex")?;
                map.serialize_entry("pattern", pattern)?;
                if *isolated {
                    map.serialize_entry("isolated", &true)?;
                }
                map.end()
            }
        }
    }
}

/// The stored form, before its `type` is looked up (other keys are ignored,
/// as they always were).
#[derive(Deserialize)]
struct Stored {
    #[serde(rename = "type")]
    kind: String,
    #[serde(default)]
    pattern: Option<String>,
    #[serde(default)]
    isolated: bool,
}

impl<'de> Deserialize<'de> for PreTokenizerSpec {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let stored = Stored::deserialize(deserializer)?;
        if stored.kind == "regex" {
            let pattern = stored.pattern.ok_or_else(|| D::Error::missing_field("pattern"))?;
            return Ok(PreTokenizerSpec::Regex { pattern, isolated: stored.isolated });
        }
        // Files store exact names: an alias here is no preset of a model file.
        match preset(&stored.kind).filter(|p| p.name == stored.kind) {
            Some(p) => Ok(PreTokenizerSpec::Preset(p)),
            None => {
                let known: Vec<&str> = PRESETS.iter().map(|p| p.name).chain(["regex"]).collect();
                Err(D::Error::custom(format!(
                    "unknown pretokenizer type {:?}, expected one of {}",
                    stored.kind,
                    known.join(", ")
                )))
            }
        }
    }
}
