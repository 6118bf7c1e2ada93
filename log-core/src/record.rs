//! The record model: owned [`Record`]s and zero-copy [`RecordRef`]s.

/// One header of a record: a name and opaque bytes, as Kafka's record headers.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Header {
    /// Header name (UTF-8, as Kafka's header keys).
    pub name: String,
    /// Header value; `None` for a null value, which Kafka's format allows and the native format does not.
    pub value: Option<Vec<u8>>,
}

impl Header {
    /// A header from a name and a (non-null) value.
    pub fn new(name: impl Into<String>, value: impl Into<Vec<u8>>) -> Self {
        Header { name: name.into(), value: Some(value.into()) }
    }
}

/// A record as stored in the log.
///
/// Invariants kept by the log: `offset` is assigned at append and never changes, not even when the cleaner
/// copies the record into a new segment. A `value` of `None` makes the record a tombstone. A record may lack
/// a key; the cleaner drops such records (Kafka counts them as invalid).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Record {
    /// Position of the record in the log, for life.
    pub offset: u64,
    /// Producer timestamp in milliseconds since the Unix epoch.
    pub timestamp: i64,
    /// Key; `None` for an unkeyed record.
    pub key: Option<Vec<u8>>,
    /// Value; `None` for a tombstone.
    pub value: Option<Vec<u8>>,
    /// Headers in order.
    pub headers: Vec<Header>,
    /// For a tombstone already kept by a cleaning pass: the time (ms) from which a later pass may drop it
    /// (KIP-534). `None` until the first pass stamps it. In Kafka's format the horizon belongs to the batch,
    /// so every record of a stamped batch carries it.
    pub delete_horizon: Option<i64>,
}

impl Record {
    /// True when the value is null.
    pub fn is_tombstone(&self) -> bool {
        self.value.is_none()
    }
}

/// The encoded headers of a record, as its format stores them (already validated by the decoder).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum HeaderBytes<'a> {
    /// This project's frame: `count` × (u16 name length, name, u32 value length, value).
    Native { bytes: &'a [u8], count: u16 },
    /// Kafka's record: `count` × (varint name length, name, varint value length (-1: null), value).
    Kafka { bytes: &'a [u8], count: usize },
}

/// A record borrowed from the bytes of a segment; decoding one allocates nothing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RecordRef<'a> {
    /// See [`Record::offset`].
    pub offset: u64,
    /// See [`Record::timestamp`].
    pub timestamp: i64,
    /// See [`Record::key`].
    pub key: Option<&'a [u8]>,
    /// See [`Record::value`].
    pub value: Option<&'a [u8]>,
    /// See [`Record::delete_horizon`].
    pub delete_horizon: Option<i64>,
    /// Bytes of the record's encoding in its batch: for Kafka the record's body after its length varint (what
    /// Kafka's `max.decompressed.message.bytes` bounds in a compressed batch), for the native format the
    /// frame's body.
    pub body_bytes: usize,
    pub(crate) headers: HeaderBytes<'a>,
}

impl<'a> RecordRef<'a> {
    /// True when the value is null.
    pub fn is_tombstone(&self) -> bool {
        self.value.is_none()
    }

    /// The headers, in order: `(name, value)`, a null value as `None`.
    pub fn headers(&self) -> HeaderIter<'a> {
        match self.headers {
            HeaderBytes::Native { bytes, count } => HeaderIter { rest: bytes, left: usize::from(count), kafka: false },
            HeaderBytes::Kafka { bytes, count } => HeaderIter { rest: bytes, left: count, kafka: true },
        }
    }

    /// The number of headers.
    pub fn header_count(&self) -> usize {
        match self.headers {
            HeaderBytes::Native { count, .. } => usize::from(count),
            HeaderBytes::Kafka { count, .. } => count,
        }
    }

    /// Copies the record out of the segment.
    pub fn to_record(&self) -> Record {
        Record {
            offset: self.offset,
            timestamp: self.timestamp,
            key: self.key.map(<[u8]>::to_vec),
            value: self.value.map(<[u8]>::to_vec),
            headers: self
                .headers()
                .map(|(n, v)| Header { name: String::from_utf8_lossy(n).into_owned(), value: v.map(<[u8]>::to_vec) })
                .collect(),
            delete_horizon: self.delete_horizon,
        }
    }
}

/// Iterator over the headers of a [`RecordRef`]: `(name, value)` pairs, a null value as `None`.
#[derive(Debug, Clone)]
pub struct HeaderIter<'a> {
    rest: &'a [u8],
    left: usize,
    kafka: bool,
}

impl<'a> Iterator for HeaderIter<'a> {
    type Item = (&'a [u8], Option<&'a [u8]>);

    fn next(&mut self) -> Option<Self::Item> {
        if self.left == 0 {
            return None;
        }
        self.left -= 1;
        // The decoder validated the whole header block, so these reads cannot fail; stop quietly if they do.
        if self.kafka {
            let mut pos = 0;
            let name = crate::kafka::varint::read_bytes(self.rest, &mut pos).ok()??;
            let value = crate::kafka::varint::read_bytes(self.rest, &mut pos).ok()?;
            self.rest = self.rest.get(pos..)?;
            return Some((name, value));
        }
        let (name, rest) = crate::codec::split_header(self.rest)?;
        let (value, rest) = crate::codec::split_bytes_u32(rest)?;
        self.rest = rest;
        Some((name, Some(value)))
    }
}
