//! Reads the field names a `Deserialize` derivation declares: a deserializer
//! that only records what `deserialize_struct` is asked for.

use serde::de::{self, Deserialize, Deserializer, Visitor};

struct Names(Option<&'static [&'static str]>);

#[derive(Debug)]
struct Done;
impl std::fmt::Display for Done {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("field names recorded")
    }
}
impl std::error::Error for Done {}
impl de::Error for Done {
    fn custom<T: std::fmt::Display>(_: T) -> Self {
        Done
    }
}

impl<'de> Deserializer<'de> for &mut Names {
    type Error = Done;
    fn deserialize_any<V: Visitor<'de>>(self, _: V) -> Result<V::Value, Done> {
        Err(Done)
    }
    fn deserialize_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        fields: &'static [&'static str],
        _: V,
    ) -> Result<V::Value, Done> {
        self.0 = Some(fields);
        Err(Done)
    }
    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes byte_buf option unit
        unit_struct newtype_struct seq tuple tuple_struct map enum identifier ignored_any
    }
}

pub fn of<T: for<'de> Deserialize<'de>>() -> &'static [&'static str] {
    let mut names = Names(None);
    let _ = T::deserialize(&mut names);
    names.0.unwrap_or(&[])
}
