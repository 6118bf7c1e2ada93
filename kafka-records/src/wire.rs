//! The primitives Kafka's generated message readers take from a buffer (`ByteBufferAccessor`): big-endian
//! fixed-width integers, unsigned and zig-zag varints, UUIDs, and byte runs, failing with the messages Kafka's
//! Java classes put in their exceptions, so that a tool printing them prints what Kafka prints.
//!
//! Invariant: a [`Reader`] never reads past its slice; every read either takes exactly the bytes it names or
//! fails with a [`WireError`] and leaves the position where the failed read started.
//!
//! ```
//! use kafka_records::wire::Reader;
//! let mut r = Reader::new(&[0x01, 0x96, 0x01, 0x00, 0x07]);
//! assert_eq!(r.unsigned_varint().unwrap(), 1);
//! assert_eq!(r.unsigned_varint().unwrap(), 150);
//! assert_eq!(r.i16().unwrap(), 7);
//! assert!(r.i16().is_err());
//! ```

/// Why a read failed, as the message of the Java exception Kafka's reader throws.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum WireError {
    /// `java.nio.BufferUnderflowException`, whose message is `null`.
    #[error("null")]
    Underflow,
    /// `ByteBufferAccessor.readArray` asked for more bytes than remain.
    #[error("Error reading byte array of {wanted} byte(s): only {remaining} byte(s) available")]
    ShortArray {
        /// Bytes asked for.
        wanted: i64,
        /// Bytes left.
        remaining: usize,
    },
    /// An unsigned varint whose fifth byte has its high bit set.
    #[error("Varint is too long, the most significant bit in the 5th byte is set, converted value: {0:x}")]
    VarintTooLong(u32),
    /// A varlong whose tenth byte has its high bit set.
    #[error("Varlong is too long, most significant bit in the 10th byte is set, converted value: {0:x}")]
    VarlongTooLong(u64),
    /// Any other failure, with the text Kafka's code gives it.
    #[error("{0}")]
    Other(String),
}

/// A cursor over one message's bytes.
#[derive(Debug, Clone)]
pub struct Reader<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl<'a> Reader<'a> {
    /// A reader at the start of `bytes`.
    pub fn new(bytes: &'a [u8]) -> Reader<'a> {
        Reader { bytes, at: 0 }
    }

    /// Bytes not read yet.
    pub fn remaining(&self) -> usize {
        self.bytes.len() - self.at
    }

    fn fixed<const N: usize>(&mut self) -> Result<[u8; N], WireError> {
        let end = self.at.checked_add(N).filter(|&e| e <= self.bytes.len()).ok_or(WireError::Underflow)?;
        let mut a = [0u8; N];
        a.copy_from_slice(&self.bytes[self.at..end]);
        self.at = end;
        Ok(a)
    }

    /// One signed byte.
    pub fn i8(&mut self) -> Result<i8, WireError> {
        self.fixed::<1>().map(|a| a[0] as i8)
    }
    /// A big-endian `short`.
    pub fn i16(&mut self) -> Result<i16, WireError> {
        self.fixed().map(i16::from_be_bytes)
    }
    /// A big-endian unsigned short (Kafka's `uint16`).
    pub fn u16(&mut self) -> Result<u16, WireError> {
        self.fixed().map(u16::from_be_bytes)
    }
    /// A big-endian `int`.
    pub fn i32(&mut self) -> Result<i32, WireError> {
        self.fixed().map(i32::from_be_bytes)
    }
    /// A big-endian unsigned int (Kafka's `uint32`).
    pub fn u32(&mut self) -> Result<u32, WireError> {
        self.fixed().map(u32::from_be_bytes)
    }
    /// A big-endian `long`.
    pub fn i64(&mut self) -> Result<i64, WireError> {
        self.fixed().map(i64::from_be_bytes)
    }
    /// A big-endian IEEE-754 double.
    pub fn f64(&mut self) -> Result<f64, WireError> {
        self.fixed().map(f64::from_be_bytes)
    }
    /// A UUID: its most and then least significant eight bytes.
    pub fn uuid(&mut self) -> Result<[u8; 16], WireError> {
        self.fixed()
    }

    /// `ByteUtils.readUnsignedVarint`: at most five bytes, seven bits each, least significant first.
    pub fn unsigned_varint(&mut self) -> Result<u32, WireError> {
        let start = self.at;
        let mut value: u32 = 0;
        for i in 0..5 {
            let Some(&b) = self.bytes.get(self.at) else {
                self.at = start;
                return Err(WireError::Underflow);
            };
            self.at += 1;
            value |= u32::from(b & 0x7f) << (7 * i);
            if b & 0x80 == 0 {
                return Ok(value);
            }
        }
        self.at = start;
        Err(WireError::VarintTooLong(value))
    }

    /// `ByteUtils.readVarint`: a zig-zag signed varint.
    pub fn varint(&mut self) -> Result<i32, WireError> {
        let u = self.unsigned_varint()?;
        Ok(((u >> 1) as i32) ^ -((u & 1) as i32))
    }

    /// `ByteUtils.readVarlong`: a zig-zag signed varlong of at most ten bytes.
    pub fn varlong(&mut self) -> Result<i64, WireError> {
        let start = self.at;
        let mut value: u64 = 0;
        for i in 0..10 {
            let Some(&b) = self.bytes.get(self.at) else {
                self.at = start;
                return Err(WireError::Underflow);
            };
            self.at += 1;
            value |= u64::from(b & 0x7f) << (7 * i);
            if b & 0x80 == 0 {
                return Ok(((value >> 1) as i64) ^ -((value & 1) as i64));
            }
        }
        self.at = start;
        Err(WireError::VarlongTooLong(value))
    }

    /// `readArray(size)`: the next `size` bytes.
    pub fn array(&mut self, size: i64) -> Result<&'a [u8], WireError> {
        let remaining = self.remaining();
        match usize::try_from(size) {
            Ok(n) if n <= remaining => {
                let run = &self.bytes[self.at..self.at + n];
                self.at += n;
                Ok(run)
            }
            _ => Err(WireError::ShortArray { wanted: size, remaining }),
        }
    }
}

/// `Uuid.toString`: URL-safe base64 of the sixteen bytes, without padding (22 characters).
pub fn uuid_string(bytes: &[u8; 16]) -> String {
    base64(bytes, b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_", false)
}

/// Standard base64 with padding (what Jackson writes for a byte array).
pub fn base64_standard(bytes: &[u8]) -> String {
    base64(bytes, b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/", true)
}

fn base64(bytes: &[u8], alphabet: &[u8; 64], pad: bool) -> String {
    let mut s = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let n = (u32::from(chunk[0]) << 16)
            | (u32::from(chunk.get(1).copied().unwrap_or(0)) << 8)
            | u32::from(chunk.get(2).copied().unwrap_or(0));
        let chars = chunk.len() + 1;
        for i in 0..4 {
            if i < chars {
                s.push(char::from(alphabet[((n >> (18 - 6 * i)) & 63) as usize]));
            } else if pad {
                s.push('=');
            }
        }
    }
    s
}

/// Java's `new String(bytes, UTF_8)`: invalid sequences become U+FFFD as Rust's lossy decoding makes them,
/// except an encoded surrogate (`ED A0..BF`, then a continuation byte or not), one U+FFFD where Rust makes one
/// a byte.
pub fn java_utf8(bytes: &[u8]) -> String {
    let mut s = String::with_capacity(bytes.len());
    let mut rest = bytes;
    loop {
        match std::str::from_utf8(rest) {
            Ok(valid) => {
                s.push_str(valid);
                return s;
            }
            Err(e) => {
                let (valid, bad) = rest.split_at(e.valid_up_to());
                s.push_str(std::str::from_utf8(valid).unwrap_or_default());
                s.push('\u{FFFD}');
                let skip = if bad.len() >= 2 && bad[0] == 0xED && (0xA0..=0xBF).contains(&bad[1]) {
                    if bad.get(2).is_some_and(|b| (0x80..=0xBF).contains(b)) { 3 } else { 2 }
                } else {
                    e.error_len().unwrap_or(bad.len())
                };
                rest = &bad[skip..];
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uuids_and_bytes_print_as_kafka_and_jackson_print_them() {
        let mut one = [0u8; 16];
        one[15] = 1;
        assert_eq!(uuid_string(&one), "AAAAAAAAAAAAAAAAAAAAAQ");
        assert_eq!(base64_standard(&[1, 2]), "AQI=");
        assert_eq!(base64_standard(&[]), "");
        assert_eq!(base64_standard(&[0, 1, 2, 0xff]), "AAEC/w==");
    }

    #[test]
    fn short_reads_fail_with_kafkas_messages_and_do_not_move() {
        let mut r = Reader::new(&[0x80, 0x80]);
        assert_eq!(r.unsigned_varint(), Err(WireError::Underflow));
        assert_eq!(r.remaining(), 2);
        assert_eq!(
            r.array(5).map_err(|e| e.to_string()),
            Err("Error reading byte array of 5 byte(s): only 2 byte(s) available".to_owned())
        );
        let mut long = Reader::new(&[0xff, 0xff, 0xff, 0xff, 0xff, 0x01]);
        assert!(matches!(long.unsigned_varint(), Err(WireError::VarintTooLong(_))));
        assert_eq!(Reader::new(&[3]).varint(), Ok(-2));
    }

    #[test]
    fn java_decoding_takes_an_encoded_surrogate_as_one_character() {
        assert_eq!(java_utf8(b"a\xED\xA0\x80b"), "a\u{FFFD}b");
        assert_eq!(java_utf8(b"a\xED\xA0Ab"), "a\u{FFFD}Ab");
        assert_eq!(java_utf8(b"\xC0\x80"), "\u{FFFD}\u{FFFD}");
        assert_eq!(java_utf8("é✓".as_bytes()), "é✓");
        assert_eq!(java_utf8(b"x\xE2\x9C"), "x\u{FFFD}");
    }
}
