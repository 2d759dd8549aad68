//! A record line read without its payload: the record's fields but `data`, which is
//! checked to be JSON as a tree of values would be (every string and number parsed, so
//! that a line reads here exactly when it reads whole) but not kept. What a large
//! record (a 2,000-CPU `c2c.matrix` line of 33 MB makes a tree of about 200 MB) costs
//! to read when only its key and kind are needed: the first pass over a journal, the
//! index of a report ([`super::RecordReader::skip_payloads_from`]).

use crate::record::{Origin, Record, Warning};
use serde::de::{Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::Value;

/// The record of a record line with `data` null, `None` when the line is anything
/// else or does not read as a record (read it whole to know why).
pub(super) fn head_line(line: &[u8]) -> Option<Record> {
    #[derive(serde::Deserialize)]
    struct Head {
        line: String,
        key: String,
        kind: String,
        origin: Origin,
        time_utc: String,
        #[serde(rename = "data")]
        _data: AnyJson,
        #[serde(default)]
        warnings: Vec<Warning>,
    }
    let h = serde_json::from_slice::<Head>(line).ok()?;
    (h.line == "record").then_some(Record {
        key: h.key,
        kind: h.kind,
        origin: h.origin,
        time_utc: h.time_utc,
        data: Value::Null,
        warnings: h.warnings,
    })
}

/// Any JSON value, accepted as [`Value`] accepts it and dropped as it is read.
struct AnyJson;

impl<'de> Deserialize<'de> for AnyJson {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(AnyJson)
    }
}

impl<'de> Visitor<'de> for AnyJson {
    type Value = AnyJson;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_bool<E>(self, _: bool) -> Result<AnyJson, E> {
        Ok(AnyJson)
    }

    fn visit_i64<E>(self, _: i64) -> Result<AnyJson, E> {
        Ok(AnyJson)
    }

    fn visit_u64<E>(self, _: u64) -> Result<AnyJson, E> {
        Ok(AnyJson)
    }

    fn visit_f64<E>(self, _: f64) -> Result<AnyJson, E> {
        Ok(AnyJson)
    }

    fn visit_str<E>(self, _: &str) -> Result<AnyJson, E> {
        Ok(AnyJson)
    }

    fn visit_unit<E>(self) -> Result<AnyJson, E> {
        Ok(AnyJson)
    }

    fn visit_none<E>(self) -> Result<AnyJson, E> {
        Ok(AnyJson)
    }

    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<AnyJson, D::Error> {
        AnyJson::deserialize(d)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<AnyJson, A::Error> {
        while seq.next_element::<AnyJson>()?.is_some() {}
        Ok(AnyJson)
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<AnyJson, A::Error> {
        while map.next_key::<AnyJson>()?.is_some() {
            map.next_value::<AnyJson>()?;
        }
        Ok(AnyJson)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A line reads without its payload exactly when it reads whole as a record: the
    /// same fields, and the same refusals (a lone surrogate, a number out of range,
    /// a control character in a string, a second envelope, a missing field).
    #[test]
    fn a_line_reads_without_its_payload_as_it_reads_whole() {
        let record = |data: &str| {
            format!(
                r#"{{"line":"record","key":"k","kind":"c2c.matrix","origin":"measured","time_utc":"t","data":{data},"warnings":[{{"code":"c","message":"m"}}]}}"#
            )
        };
        let lines = [
            record(r#"{"a":[1,-2,3.5,null,true,"x\u00e9",{"b":[]}],"a":2}"#),
            record(r#""\ud800""#),
            record("1e400"),
            record("\"a\u{1}b\""),
            record("[1,2"),
            r#"{"line":"record","key":"k","kind":"x","origin":"measured","data":1}"#.into(),
            r#"{"line":"envelope","key":"k","kind":"x","origin":"measured","time_utc":"t","data":1}"#.into(),
        ];
        for line in &lines {
            let whole = match serde_json::from_slice::<super::super::Line>(line.as_bytes()) {
                Ok(super::super::Line::Record(mut r)) => {
                    r.data = Value::Null;
                    Some(r)
                }
                _ => None,
            };
            assert_eq!(head_line(line.as_bytes()), whole, "{line}");
        }
        assert!(head_line(lines[0].as_bytes()).is_some());
    }
}
