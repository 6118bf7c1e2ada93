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

/// Splits the first header off a record's encoded header block: `(name, value (`None`: null), rest)`, or
/// `None` when the block does not hold one (never, for a block its decoder validated). Each format supplies
/// its own, so that this module knows no format's layout.
pub(crate) type SplitHeader = for<'b> fn(&'b [u8]) -> Option<HeaderSplit<'b>>;

/// A header split off its block: name, value (`None`: null), and the rest of the block.
pub(crate) type HeaderSplit<'b> = (&'b [u8], Option<&'b [u8]>, &'b [u8]);

/// The encoded headers of a record, as its format stores them (already validated by the decoder), and how to
/// walk them.
#[derive(Clone, Copy)]
pub(crate) struct HeaderBytes<'a> {
    /// The header block.
    pub(crate) bytes: &'a [u8],
    /// Headers in it.
    pub(crate) count: usize,
    /// The format's reader of one header.
    pub(crate) split: SplitHeader,
}

impl std::fmt::Debug for HeaderBytes<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HeaderBytes").field("bytes", &self.bytes).field("count", &self.count).finish_non_exhaustive()
    }
}

impl PartialEq for HeaderBytes<'_> {
    /// The same headers: equal blocks read alike (a record's block is compared with one of its own format).
    fn eq(&self, other: &Self) -> bool {
        self.bytes == other.bytes && self.count == other.count
    }
}

impl Eq for HeaderBytes<'_> {}

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
        HeaderIter { rest: self.headers.bytes, left: self.headers.count, split: self.headers.split }
    }

    /// The number of headers.
    pub fn header_count(&self) -> usize {
        self.headers.count
    }

    /// The header block as its format encodes it, and its count (for a rewrite in the same format).
    pub(crate) fn header_block(&self) -> (&'a [u8], usize) {
        (self.headers.bytes, self.headers.count)
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
#[derive(Clone)]
pub struct HeaderIter<'a> {
    rest: &'a [u8],
    left: usize,
    split: SplitHeader,
}

impl std::fmt::Debug for HeaderIter<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HeaderIter").field("rest", &self.rest).field("left", &self.left).finish_non_exhaustive()
    }
}

impl<'a> Iterator for HeaderIter<'a> {
    type Item = (&'a [u8], Option<&'a [u8]>);

    fn next(&mut self) -> Option<Self::Item> {
        if self.left == 0 {
            return None;
        }
        self.left -= 1;
        // The decoder validated the whole header block, so this cannot fail; stop quietly if it does.
        let (name, value, rest) = (self.split)(self.rest)?;
        self.rest = rest;
        Some((name, value))
    }
}

/// The largest record an append takes, key, value and headers together (64 MiB, well above Kafka's default
/// 1 MiB message limit), in every format.
pub const MAX_RECORD_BYTES: usize = 64 << 20;

/// A record to append; the log assigns its offset.
#[derive(Debug, Clone, Copy)]
pub struct AppendRecord<'a> {
    /// Key; `None` stores an unkeyed record, which the cleaner will drop.
    pub key: Option<&'a [u8]>,
    /// Value; `None` appends a tombstone.
    pub value: Option<&'a [u8]>,
    /// Timestamp in ms since the Unix epoch.
    pub timestamp: i64,
    /// Headers in order.
    pub headers: &'a [Header],
}
