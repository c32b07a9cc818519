//! A count attribute (`shard_count`): a Terraform `number` that must be whole. Terraform hands the provider
//! any number the configuration holds; a fraction is kept as given, so that validation can point at the
//! attribute in words ("2.5 is not a whole number") instead of failing to decode the whole configuration.

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// A number given for a count: whole, or not.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Count {
    Whole(i64),
    Fraction(f64),
}

impl Count {
    /// The whole number, or the error text for the attribute.
    pub fn whole(self, attr: &str) -> Result<i64, String> {
        match self {
            Count::Whole(n) => Ok(n),
            Count::Fraction(x) => Err(format!(
                "{attr} = {x} is not a whole number; give a whole number of shards (1 to {})",
                rsc_protocol::validate::MAX_SHARD_COUNT
            )),
        }
    }
}

impl Default for Count {
    fn default() -> Self {
        Count::Whole(0)
    }
}

impl From<u32> for Count {
    fn from(n: u32) -> Self {
        Count::Whole(i64::from(n))
    }
}

impl Serialize for Count {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Count::Whole(n) => s.serialize_i64(*n),
            Count::Fraction(x) => s.serialize_f64(*x),
        }
    }
}

impl<'de> Deserialize<'de> for Count {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Visitor;
        impl serde::de::Visitor<'_> for Visitor {
            type Value = Count;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a number")
            }
            fn visit_i64<E: serde::de::Error>(self, v: i64) -> Result<Count, E> {
                Ok(Count::Whole(v))
            }
            fn visit_u64<E: serde::de::Error>(self, v: u64) -> Result<Count, E> {
                Ok(i64::try_from(v).map_or(Count::Fraction(v as f64), Count::Whole))
            }
            fn visit_f64<E: serde::de::Error>(self, v: f64) -> Result<Count, E> {
                // A whole number Terraform sent as a float is whole; anything else stays a fraction.
                if v.fract() == 0.0 && v.abs() < 9.0e15 {
                    Ok(Count::Whole(v as i64))
                } else {
                    Ok(Count::Fraction(v))
                }
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<Count, E> {
                // Terraform sends a number msgpack cannot hold exactly as its decimal text.
                match (v.parse::<i64>(), v.parse::<f64>()) {
                    (Ok(n), _) => Ok(Count::Whole(n)),
                    (_, Ok(x)) => Ok(Count::Fraction(x)),
                    _ => Err(E::custom(format!("{v:?} is not a number"))),
                }
            }
        }
        d.deserialize_any(Visitor)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn whole_numbers_and_fractions_are_told_apart() {
        let c: Count = serde_json::from_str("4").unwrap();
        assert_eq!(c.whole("shard_count"), Ok(4));
        let c: Count = serde_json::from_str("4.0").unwrap();
        assert_eq!(c, Count::Whole(4));
        let c: Count = serde_json::from_str("2.5").unwrap();
        let e = c.whole("shard_count").unwrap_err();
        assert!(e.contains("2.5 is not a whole number"), "{e}");
        assert_eq!(serde_json::to_string(&Count::Whole(8)).unwrap(), "8");
    }
}
