//! Kafka's generated messages, described as data: a [`Message`] lists its fields with the versions each is
//! in, the versions it is nullable and tagged in, and its default; [`read`] reads one at a version as Kafka's
//! generated `read(Readable, short)` does, and gives back the JSON Kafka's generated `*JsonConverter.write`
//! makes of it ([`Json`], printed as Jackson's `ObjectNode.toString()` prints).
//!
//! Invariants, as in Kafka's generator: a field's presence is tested against the version only where its
//! versions cover part of the versions possible at that point (the message's valid versions, narrowed by
//! every enclosing field); a field covering them all is always read, one covering none never (so a message
//! read at a version outside its valid ones reads what Kafka reads). Tagged fields are printed only when they
//! differ from their default. Reading never goes past the message's bytes.
//!
//! ```
//! use kafka_records::message_schema::{D, F, Message, T, from, range, read};
//! use kafka_records::wire::Reader;
//! const TOPIC: Message = Message {
//!     name: "TopicRecord",
//!     valid: range(0, 0),
//!     flexible: from(0),
//!     fields: &[F::new("name", T::Str, from(0)), F::new("topicId", T::Uuid, from(0))],
//! };
//! let mut bytes = vec![2, b'a'];
//! bytes.extend_from_slice(&[0; 15]);
//! bytes.extend_from_slice(&[1, 0]);
//! let json = read(&TOPIC, &mut Reader::new(&bytes), 0).unwrap();
//! assert_eq!(json.to_string(), r#"{"name":"a","topicId":"AAAAAAAAAAAAAAAAAAAAAQ"}"#);
//! ```

use std::fmt;

use crate::wire::{Reader, WireError, base64_standard, java_utf8, uuid_string};

/// A range of versions, `lo..=hi` (empty when `lo > hi`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Versions {
    /// The first version.
    pub lo: i16,
    /// The last version.
    pub hi: i16,
}

/// Versions `lo` to `hi`.
pub const fn range(lo: i16, hi: i16) -> Versions {
    Versions { lo, hi }
}

/// Versions `lo` and every later one.
pub const fn from(lo: i16) -> Versions {
    Versions { lo, hi: i16::MAX }
}

/// No version.
pub const NONE: Versions = Versions { lo: 1, hi: 0 };

impl Versions {
    fn is_empty(self) -> bool {
        self.lo > self.hi
    }
    fn contains(self, v: i16) -> bool {
        self.lo <= v && v <= self.hi
    }
    fn intersect(self, o: Versions) -> Versions {
        Versions { lo: self.lo.max(o.lo), hi: self.hi.min(o.hi) }
    }
    /// Kafka's `VersionConditional`: whether a thing of these versions is there at `v`, where `possible` are
    /// the versions the code can be running at.
    fn holds(self, possible: Versions, v: i16) -> bool {
        if possible.intersect(self).is_empty() {
            false
        } else if self.lo <= possible.lo && possible.hi <= self.hi {
            true
        } else {
            self.contains(v)
        }
    }
}

/// A field's type.
#[derive(Debug, Clone, Copy)]
pub enum T {
    /// `bool`.
    Bool,
    /// `int8`.
    Int8,
    /// `int16`.
    Int16,
    /// `uint16`.
    Uint16,
    /// `int32`.
    Int32,
    /// `uint32`.
    Uint32,
    /// `int64`.
    Int64,
    /// `float64`.
    Float64,
    /// `uuid`.
    Uuid,
    /// `string`.
    Str,
    /// `bytes`.
    Bytes,
    /// `[]T`.
    Array(&'static T),
    /// A struct of these fields.
    Struct(&'static [F]),
}

/// A field's default where it is not the type's zero (`0`, `false`, `""`, an empty array, the zero UUID).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum D {
    /// The type's zero.
    Zero,
    /// An integer.
    Int(i64),
    /// A boolean.
    Bool(bool),
    /// A double.
    Float(f64),
    /// A string.
    Str(&'static str),
    /// `null`.
    Null,
}

/// A field of a message or struct.
#[derive(Debug, Clone, Copy)]
pub struct F {
    /// Its name as the JSON prints it (the schema's, first letter in lower case).
    pub name: &'static str,
    /// Its type.
    pub ty: T,
    /// The versions it is in.
    pub versions: Versions,
    /// The versions it may be null in.
    pub nullable: Versions,
    /// Its tag and the versions it is tagged in.
    pub tag: Option<(u32, Versions)>,
    /// Its default.
    pub default: D,
}

impl F {
    /// A field in `versions`, never null, not tagged, of the type's zero default.
    pub const fn new(name: &'static str, ty: T, versions: Versions) -> F {
        F { name, ty, versions, nullable: NONE, tag: None, default: D::Zero }
    }
    /// The field, nullable in `versions`.
    pub const fn nullable(self, versions: Versions) -> F {
        F { nullable: versions, ..self }
    }
    /// The field, tagged `tag` in `versions`.
    pub const fn tagged(self, tag: u32, versions: Versions) -> F {
        F { tag: Some((tag, versions)), ..self }
    }
    /// The field with default `d`.
    pub const fn default(self, d: D) -> F {
        F { default: d, ..self }
    }
}

/// A message: its valid and flexible versions and its fields.
#[derive(Debug, Clone, Copy)]
pub struct Message {
    /// The schema's name.
    pub name: &'static str,
    /// The versions it has.
    pub valid: Versions,
    /// The versions written in the flexible (compact, tagged) encoding.
    pub flexible: Versions,
    /// Its fields in order.
    pub fields: &'static [F],
}

impl Message {
    /// Whether `v` is one of the message's versions.
    pub fn has_version(&self, v: i16) -> bool {
        self.valid.contains(v)
    }
}

/// A JSON value as Kafka's converters build it.
#[derive(Debug, Clone, PartialEq)]
pub enum Json {
    /// `null`.
    Null,
    /// `true` / `false`.
    Bool(bool),
    /// An integer.
    Int(i64),
    /// A double (Java's `Double.toString`).
    Double(f64),
    /// A string.
    Text(String),
    /// Bytes (standard base64 with padding).
    Binary(Vec<u8>),
    /// An array.
    Array(Vec<Json>),
    /// An object, its fields in order.
    Object(Vec<(&'static str, Json)>),
}

impl Json {
    /// The field `name` of an object.
    pub fn get_mut(&mut self, name: &str) -> Option<&mut Json> {
        match self {
            Json::Object(fields) => fields.iter_mut().find(|(n, _)| *n == name).map(|(_, v)| v),
            _ => None,
        }
    }
}

impl fmt::Display for Json {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Json::Null => f.write_str("null"),
            Json::Bool(b) => write!(f, "{b}"),
            Json::Int(i) => write!(f, "{i}"),
            Json::Double(d) => f.write_str(&java_double(*d)),
            Json::Text(s) => write_json_string(f, s),
            Json::Binary(b) => write!(f, "\"{}\"", base64_standard(b)),
            Json::Array(items) => {
                f.write_str("[")?;
                for (i, item) in items.iter().enumerate() {
                    if i > 0 {
                        f.write_str(",")?;
                    }
                    write!(f, "{item}")?;
                }
                f.write_str("]")
            }
            Json::Object(fields) => {
                f.write_str("{")?;
                for (i, (name, value)) in fields.iter().enumerate() {
                    if i > 0 {
                        f.write_str(",")?;
                    }
                    write_json_string(f, name)?;
                    write!(f, ":{value}")?;
                }
                f.write_str("}")
            }
        }
    }
}

/// A string as Jackson writes it: `"` and `\` escaped, `\b \t \n \f \r` in short form, other characters below
/// U+0020 as `\u00XX` (upper-case hex), everything else as it is.
fn write_json_string(f: &mut fmt::Formatter<'_>, s: &str) -> fmt::Result {
    f.write_str("\"")?;
    for c in s.chars() {
        match c {
            '"' => f.write_str("\\\"")?,
            '\\' => f.write_str("\\\\")?,
            '\n' => f.write_str("\\n")?,
            '\t' => f.write_str("\\t")?,
            '\r' => f.write_str("\\r")?,
            '\u{8}' => f.write_str("\\b")?,
            '\u{c}' => f.write_str("\\f")?,
            c if (c as u32) < 0x20 => write!(f, "\\u{:04X}", c as u32)?,
            c => write!(f, "{c}")?,
        }
    }
    f.write_str("\"")
}

/// Java's `Double.toString`, from the shortest digits that read back as `d`: plain notation from 10^-3 up to
/// 10^7, computerized scientific notation (`1.0E10`) outside it.
pub fn java_double(d: f64) -> String {
    if d.is_nan() {
        return "NaN".to_owned();
    }
    if d.is_infinite() {
        return if d > 0.0 { "Infinity" } else { "-Infinity" }.to_owned();
    }
    if d == 0.0 {
        return if d.is_sign_negative() { "-0.0" } else { "0.0" }.to_owned();
    }
    let sci = format!("{:e}", d.abs());
    let (mantissa, exp) = sci.split_once('e').unwrap_or((&sci, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    let digits: String = mantissa.chars().filter(char::is_ascii_digit).collect();
    let sign = if d < 0.0 { "-" } else { "" };
    if (-3..7).contains(&exp) {
        let point = exp + 1;
        let body = if point <= 0 {
            format!("0.{}{digits}", "0".repeat((-point) as usize))
        } else if (point as usize) >= digits.len() {
            format!("{digits}{}.0", "0".repeat(point as usize - digits.len()))
        } else {
            format!("{}.{}", &digits[..point as usize], &digits[point as usize..])
        };
        format!("{sign}{body}")
    } else {
        let rest = if digits.len() > 1 { &digits[1..] } else { "0" };
        format!("{sign}{}.{rest}E{exp}", &digits[..1])
    }
}

/// Reads `msg` at `version` from `r` and gives its JSON as Kafka's converter writes it at that version.
///
/// # Errors
/// The message of the exception Kafka's generated reader throws on these bytes.
pub fn read(msg: &Message, r: &mut Reader<'_>, version: i16) -> Result<Json, WireError> {
    let value = read_fields(msg, r, version)?;
    Ok(to_json(msg, &value, version))
}

/// Reads `msg` at `version`: an object of every field, those not in the version at their defaults.
///
/// # Errors
/// As [`read`].
pub fn read_fields(msg: &Message, r: &mut Reader<'_>, version: i16) -> Result<Json, WireError> {
    let flexible = msg.flexible.holds(msg.valid, version);
    read_struct(msg.fields, msg.valid, flexible, r, version)
}

/// The JSON Kafka's converter writes of `value` (as [`read_fields`] gives it) at `version`: the fields in
/// the version, tagged ones only where they differ from their default.
pub fn to_json(msg: &Message, value: &Json, version: i16) -> Json {
    render(msg.fields, msg.valid, value, version)
}

fn render(fields: &'static [F], possible: Versions, value: &Json, v: i16) -> Json {
    let Json::Object(values) = value else { return value.clone() };
    let mut object = Vec::with_capacity(fields.len());
    for (f, (_, value)) in fields.iter().zip(values) {
        if !f.versions.holds(possible, v) {
            continue;
        }
        let here = possible.intersect(f.versions);
        if is_tagged(f, here, v) && *value == default_value(f, here, v) {
            continue;
        }
        object.push((f.name, render_value(&f.ty, here, value, v)));
    }
    Json::Object(object)
}

fn render_value(ty: &T, here: Versions, value: &Json, v: i16) -> Json {
    match (ty, value) {
        (T::Struct(fields), _) => render(fields, here, value, v),
        (T::Array(element), Json::Array(items)) => {
            Json::Array(items.iter().map(|item| render_value(element, here, item, v)).collect())
        }
        _ => value.clone(),
    }
}

fn read_struct(
    fields: &'static [F],
    possible: Versions,
    flexible: bool,
    r: &mut Reader<'_>,
    v: i16,
) -> Result<Json, WireError> {
    let mut values: Vec<(&'static str, Json)> = Vec::with_capacity(fields.len());
    for f in fields {
        let here = possible.intersect(f.versions);
        if !f.versions.holds(possible, v) || is_tagged(f, here, v) {
            values.push((f.name, default_value(f, here, v)));
            continue;
        }
        values.push((f.name, read_value(f, &f.ty, here, flexible, r, v)?));
    }
    if flexible {
        let count = r.unsigned_varint()?;
        for _ in 0..count {
            let tag = r.unsigned_varint()?;
            let size = r.unsigned_varint()?;
            match fields.iter().position(|f| f.tag.is_some_and(|(t, _)| t == tag)) {
                Some(i) => {
                    let f = &fields[i];
                    let here = possible.intersect(f.versions);
                    values[i].1 = read_value(f, &f.ty, here, true, r, v)?;
                }
                None => {
                    r.array(i64::from(size as i32))?;
                }
            }
        }
    }
    Ok(Json::Object(values))
}

fn is_tagged(f: &F, here: Versions, v: i16) -> bool {
    f.tag.is_some_and(|(_, tagged)| tagged.holds(here, v))
}

/// A length read as Kafka's generated code reads it: compact (`uvarint - 1`, as a Java int) or fixed.
fn length(r: &mut Reader<'_>, flexible: bool, fixed16: bool) -> Result<i64, WireError> {
    if flexible {
        Ok(i64::from((r.unsigned_varint()? as i32).wrapping_sub(1)))
    } else if fixed16 {
        Ok(i64::from(r.i16()?))
    } else {
        Ok(i64::from(r.i32()?))
    }
}

fn read_value(f: &F, ty: &T, here: Versions, flexible: bool, r: &mut Reader<'_>, v: i16) -> Result<Json, WireError> {
    let null = |f: &F| -> Result<Json, WireError> {
        if f.nullable.holds(here, v) {
            Ok(Json::Null)
        } else {
            Err(WireError::Other(format!("non-nullable field {} was serialized as null", f.name)))
        }
    };
    Ok(match ty {
        T::Bool => Json::Bool(r.i8()? != 0),
        T::Int8 => Json::Int(i64::from(r.i8()?)),
        T::Int16 => Json::Int(i64::from(r.i16()?)),
        T::Uint16 => Json::Int(i64::from(r.u16()?)),
        T::Int32 => Json::Int(i64::from(r.i32()?)),
        T::Uint32 => Json::Int(i64::from(r.u32()?)),
        T::Int64 => Json::Int(r.i64()?),
        T::Float64 => Json::Double(r.f64()?),
        T::Uuid => Json::Text(uuid_string(&r.uuid()?)),
        T::Str => {
            let len = length(r, flexible, true)?;
            if len < 0 {
                return null(f);
            }
            if len > 0x7fff {
                return Err(WireError::Other(format!("string field {} had invalid length {len}", f.name)));
            }
            Json::Text(java_utf8(r.array(len)?))
        }
        T::Bytes => {
            let len = length(r, flexible, false)?;
            if len < 0 {
                return null(f);
            }
            Json::Binary(r.array(len)?.to_vec())
        }
        T::Array(element) => {
            let len = length(r, flexible, false)?;
            if len < 0 {
                return null(f);
            }
            if len > r.remaining() as i64 {
                return Err(WireError::Other(format!(
                    "Tried to allocate a collection of size {len}, but there are only {} bytes remaining.",
                    r.remaining()
                )));
            }
            let mut items = Vec::new();
            for _ in 0..len {
                items.push(match element {
                    // Array elements are never null: no marker byte.
                    T::Struct(fields) => read_struct(fields, here, flexible, r, v)?,
                    other => read_value(f, other, here, flexible, r, v)?,
                });
            }
            Json::Array(items)
        }
        T::Struct(fields) => {
            // A nullable struct starts with a byte: negative for null.
            if f.nullable.holds(here, v) && r.i8()? < 0 {
                return Ok(Json::Null);
            }
            read_struct(fields, here, flexible, r, v)?
        }
    })
}

/// What a field holds when nothing was read for it, as its JSON.
fn default_value(f: &F, here: Versions, v: i16) -> Json {
    match (f.default, &f.ty) {
        (D::Null, _) => Json::Null,
        (D::Int(i), _) => Json::Int(i),
        (D::Bool(b), _) => Json::Bool(b),
        (D::Float(x), _) => Json::Double(x),
        (D::Str(s), _) => Json::Text(s.to_owned()),
        (D::Zero, ty) => zero(ty, here, v),
    }
}

fn zero(ty: &T, here: Versions, v: i16) -> Json {
    match ty {
        T::Bool => Json::Bool(false),
        T::Int8 | T::Int16 | T::Uint16 | T::Int32 | T::Uint32 | T::Int64 => Json::Int(0),
        T::Float64 => Json::Double(0.0),
        T::Uuid => Json::Text(uuid_string(&[0; 16])),
        T::Str => Json::Text(String::new()),
        T::Bytes => Json::Binary(Vec::new()),
        T::Array(_) => Json::Array(Vec::new()),
        T::Struct(fields) => {
            Json::Object(fields.iter().map(|f| (f.name, default_value(f, here.intersect(f.versions), v))).collect())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn doubles_print_as_java_prints_them() {
        assert_eq!(java_double(1.0), "1.0");
        assert_eq!(java_double(0.5), "0.5");
        assert_eq!(java_double(1234567.0), "1234567.0");
        assert_eq!(java_double(1.0e7), "1.0E7");
        assert_eq!(java_double(0.001), "0.001");
        assert_eq!(java_double(0.0001), "1.0E-4");
        assert_eq!(java_double(-2.5e-10), "-2.5E-10");
    }

    #[test]
    fn strings_are_escaped_as_jackson_escapes_them() {
        let s = Json::Text("é\"\\/\n\u{1}".to_owned()).to_string();
        assert_eq!(s, "\"é\\\"\\\\/\\n\\u0001\"");
    }

    const MSG: Message = Message {
        name: "M",
        valid: range(0, 2),
        flexible: from(2),
        fields: &[
            F::new("a", T::Int32, from(0)),
            F::new("b", T::Str, from(1)).nullable(from(1)),
            F::new("c", T::Int32, from(2)).tagged(0, from(2)).default(D::Int(-1)),
        ],
    };

    #[test]
    fn versions_tags_and_defaults_decide_what_is_read_and_printed() {
        let v0 = read(&MSG, &mut Reader::new(&[0, 0, 0, 7]), 0).expect("reads");
        assert_eq!(v0.to_string(), r#"{"a":7}"#);
        let v1 = read(&MSG, &mut Reader::new(&[0, 0, 0, 7, 0xff, 0xff]), 1).expect("reads");
        assert_eq!(v1.to_string(), r#"{"a":7,"b":null}"#);
        let v2 = read(&MSG, &mut Reader::new(&[0, 0, 0, 7, 2, b'x', 1, 0, 4, 0, 0, 0, 9]), 2).expect("reads");
        assert_eq!(v2.to_string(), r#"{"a":7,"b":"x","c":9}"#);
        let default = read(&MSG, &mut Reader::new(&[0, 0, 0, 7, 1, 0]), 2).expect("reads");
        assert_eq!(default.to_string(), r#"{"a":7,"b":""}"#);
        let short = read(&MSG, &mut Reader::new(&[0, 0, 0, 7, 0, 9, b'x']), 1);
        assert_eq!(
            short.map_err(|e| e.to_string()),
            Err("Error reading byte array of 9 byte(s): only 1 byte(s) available".into())
        );
    }
}
