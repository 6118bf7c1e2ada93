"""A reference for what Apache Kafka 4.4's `kafka-dump-log.sh --deep-iteration --print-data-log --files F1,F2,...`
prints (the Java `org.apache.kafka.tools.DumpLogSegments`, on a UTF-8 locale). It was written from the
documented format (interop/kafka/notes/dump-log-segments.md) and Kafka's own sources, not from this project's
Rust code, so that cli/tests can check the Rust implementation line by line on partitions the client libraries
write; the reference outputs of Kafka 4.4 itself (interop/kafka/notes/dump-vectors, replayed by
cli/tests/suite/dump_log_vectors.rs) are the oracle this script was checked against.

usage: dump_log_reference.py [--verify-index-only] FILE [FILE ...]

Each FILE is one `--files` item. Stdout and stderr are what the tool writes, including the end-of-run stderr
summaries (index mismatches, time-index errors, non-consecutive offsets; several files come in Scala 2.13
mutable.HashMap order, as in the kafka_2.13 builds). Exit 0. Where Kafka would crash with an exception, the script writes one line
`CRASH: <what>` to stderr and exits 1 (stdout up to there is Kafka's; the JVM's exception text is not
reproduced). Inputs this script does not model end the same way, `CRASH: legacy ...` / `CRASH: unsupported
...`, though Kafka does not crash on them. A codec missing from the Python environment: `UNSUPPORTED: ...`, exit 2.

Handles `.log`/`.checkpoint` (magic 2 batches: none, gzip, and snappy/lz4/zstd through kafka-python's codecs),
`.index`, `.timeindex`, `.txnindex`, `.snapshot` (producer state); anything else is `Ignoring unknown file`.
Limits:
- Magic 0/1 (legacy) batches, and negative magic bytes: `CRASH: legacy`.
- Control records: types 0/1 (end-txn markers), 3/4 (snapshot header/footer) and unknown ids are exact. Types
  2, 5 and 6 (LeaderChange, KRaftVersion, KRaftVoters JSON): `CRASH: unsupported` (the vectors cover them).
- Corrupt compressed data: Python's snappy/lz4/zstd decoders may accept or reject slightly different garbage
  than Java's (lz4's FLG/BD checks and gzip's handling of bytes after a member follow Kafka/JDK 17).
- `--skip-record-metadata`, `--index-sanity-check`, `--max-bytes`, `--max-message-size`, decoders: not modelled.
"""
import os
import re
import struct
import sys
import unicodedata
import zlib

INT_MAX, LOG_OVERHEAD, BATCH_OVERHEAD, MAX_MESSAGE_SIZE, WARM_INDEX_ENTRIES = 2147483647, 12, 61, 5242880, 1024
CODECS = ["none", "gzip", "snappy", "lz4", "zstd"]

class Crash(Exception):
    """Kafka's tool would end here with an uncaught exception (or the input is not modelled)."""

class Unsupported(Exception):
    """The Python environment cannot decode this."""

def out(line, stream=sys.stdout):
    stream.buffer.write(line.encode("utf-8", "surrogateescape") + b"\n")

def err(line):
    out(line, sys.stderr)

def i32(v):
    return (v + 2**31) % 2**32 - 2**31

def i64(v):
    return (v + 2**63) % 2**64 - 2**63

def optional_long(v):
    return "OptionalLong.empty" if v is None else "OptionalLong[%d]" % v

def parse_long(s, bits=64):
    """Long.parseLong / Integer.parseInt: an optional sign, then digits as Character.digit reads them."""
    digits = s[1:] if s[:1] in ("+", "-") else s
    values = [unicodedata.decimal(c, None) if ord(c) < 0x10000 else None for c in digits]
    v = int("".join(map(str, values))) * (-1 if s[:1] == "-" else 1) if digits and None not in values else None
    if v is None or not -(2 ** (bits - 1)) <= v < 2 ** (bits - 1):
        raise Crash('NumberFormatException: For input string: "%s"' % s)
    return v

_SURROGATE = re.compile(rb"\xed[\xa0-\xbf][\x80-\xbf]?")

def jstr(b):
    """Java's `new String(bytes, UTF_8)`. Python's 'replace' already gives one U+FFFD per maximal subpart, as
    Java does, except that Java takes ED A0..BF as a valid 2-byte prefix: an encoded surrogate `ED A0-BF 80-BF`
    is one U+FFFD, and so is `ED A0-BF` cut short (Python gives one per byte). Those runs are split out first;
    ED is a lead byte, so no sequence on either side reaches into them."""
    return "\ufffd".join(p.decode("utf-8", "replace") for p in _SURROGATE.split(b))

CRC32C_TABLE = []
for _n in range(256):
    for _ in range(8):
        _n = (_n >> 1) ^ 0x82F63B78 if _n & 1 else _n >> 1
    CRC32C_TABLE.append(_n)

def crc32c(data):
    c = 0xFFFFFFFF
    for b in data:
        c = CRC32C_TABLE[(c ^ b) & 0xFF] ^ (c >> 8)
    return c ^ 0xFFFFFFFF

def seq_increment(seq, inc):  # DefaultRecordBatch.incrementSequence, in Java int arithmetic
    return i32(i32(inc - i32(INT_MAX - seq)) - 1) if seq > i32(INT_MAX - inc) else i32(seq + inc)

def seq_decrement(seq, dec):  # DefaultRecordBatch.decrementSequence
    return i32(i32(INT_MAX - i32(dec - seq)) + 1) if seq < dec else i32(seq - dec)

# ---------------------------------------------------------------- paths, as java.io.File gives them on Unix

def jfile(arg):
    """File.toString: repeated '/' collapsed, a trailing '/' dropped."""
    p = re.sub("/+", "/", arg)
    return p[:-1] if len(p) > 1 and p.endswith("/") else p

def name_of(path):
    return path[path.rfind("/") + 1:]

def absolute(path):
    """File.getAbsolutePath: user.dir joined with a relative path; `.` and `..` are kept."""
    if path.startswith("/"):
        return path
    cwd = os.getcwd()
    return cwd if path == "" else ("/" if cwd == "/" else cwd + "/") + path

def sibling(path, name):
    return absolute(path)[:absolute(path).rfind("/")] + "/" + name

def read_all(path, what):
    try:
        with open(path, "rb") as f:
            return f.read()
    except OSError as e:
        raise Crash("%s: %s" % (what, e))

# ---------------------------------------------------------------- record batches

class Reader:
    def __init__(self, data):
        self.data, self.pos = data, 0

    def take(self, n):
        if n > len(self.data) - self.pos:
            raise Crash("BufferUnderflowException: record or control value cut short")
        self.pos += n
        return self.data[self.pos - n:self.pos]

    def fixed(self, fmt):
        return struct.unpack(">" + fmt, self.take(struct.calcsize(">" + fmt)))[0]

    def varint(self, max_bytes=5, zigzag=True):
        """ByteUtils.readVarint (5 bytes), readUnsignedVarint (zigzag=False), readVarlong (10): the bits of the
        last byte past 32 / 64 are dropped."""
        value, wrap = 0, i32 if max_bytes == 5 else i64
        for i in range(max_bytes):
            b = self.take(1)[0]
            value |= (b & 0x7F) << (7 * i)
            if not b & 0x80:
                value &= (1 << (32 if max_bytes == 5 else 64)) - 1
                return wrap((value >> 1) ^ -(value & 1) if zigzag else value)
        raise Crash("IllegalArgumentException: varint/varlong too long")

    def sized(self, n):  # Utils.readBytes: a negative size is null
        return None if n < 0 else self.take(n)

class Batch:
    """A magic >= 2 batch at `pos`. The header fields come from the 61 file bytes at `pos`, as
    FileChannelRecordBatch reads them (even past the end of a shorter batch)."""

    def __init__(self, data, pos, size):
        header = data[pos:pos + BATCH_OVERHEAD]
        if len(header) < BATCH_OVERHEAD:
            raise Crash("KafkaException: Failed to load record batch at position %d (EOF)" % pos)
        (self.base_offset, _, self.leader_epoch, self.magic, self.crc, attributes, self.last_delta, self.base_ts,
         self.max_ts, self.producer_id, self.producer_epoch, self.base_seq, self.count) = struct.unpack(
            ">qiibIhiqqqhii", header)
        self.pos, self.size, self.full = pos, LOG_OVERHEAD + size, data[pos:pos + LOG_OVERHEAD + size]
        self.codec = attributes & 7  # only the low byte of the attributes is used
        self.ts_type = "LogAppendTime" if attributes & 0x08 else "CreateTime"
        self.transactional, self.control = bool(attributes & 0x10), bool(attributes & 0x20)
        self.delete_horizon = self.base_ts if attributes & 0x40 else None
        self.last_offset = i64(self.base_offset + self.last_delta)

    def line(self):
        if self.codec >= len(CODECS):
            raise Crash("IllegalArgumentException: Unknown compression type id: %d" % self.codec)
        last_seq = -1 if self.base_seq == -1 else seq_increment(self.base_seq, self.last_delta)
        valid = self.size >= BATCH_OVERHEAD and self.crc == crc32c(self.full[21:])
        return ("baseOffset: %d lastOffset: %d count: %d baseSequence: %d lastSequence: %d producerId: %d "
                "producerEpoch: %d partitionLeaderEpoch: %d isTransactional: %s isControl: %s deleteHorizonMs: %s"
                " position: %d %s: %d size: %d magic: %d compresscodec: %s crc: %d isvalid: %s") % (
            self.base_offset, self.last_offset, self.count, self.base_seq, last_seq, self.producer_id,
            self.producer_epoch, self.leader_epoch, str(self.transactional).lower(), str(self.control).lower(),
            optional_long(self.delete_horizon), self.pos, self.ts_type, self.max_ts, self.size, self.magic,
            CODECS[self.codec], self.crc, str(valid).lower())

    def records(self):
        """All records as (offset, timestamp, key, value, header keys, sequence); any error is a crash."""
        if self.size < BATCH_OVERHEAD:
            raise Crash("IndexOutOfBoundsException: a %d-byte batch has no record count" % self.size)
        if self.count == 0:
            return []
        if self.count < 0:
            raise Crash("Found invalid record count %d in magic v%d batch" % (self.count, self.magic))
        body = self.full[BATCH_OVERHEAD:]
        r = Reader(body if self.codec == 0 else decompress(self.codec, body))
        records = []
        for _ in range(self.count):
            size = r.varint()
            if size < 0:
                raise Crash("Invalid record size %d" % size)
            records.append(self.record(Reader(r.take(size))))
        if r.pos != len(r.data):
            raise Crash("Incorrect declared batch size, records still remaining in file")
        return records

    def record(self, r):
        r.take(1)  # attributes
        ts_delta, offset_delta = r.varint(10), r.varint()
        key = r.sized(r.varint())
        value = r.sized(r.varint())
        n_headers = r.varint()
        if n_headers < 0 or n_headers > len(r.data) - r.pos:
            raise Crash("Found invalid number of record headers %d" % n_headers)
        header_keys = []
        for _ in range(n_headers):
            key_size = r.varint()
            if key_size < 0:
                raise Crash("Invalid negative header key size %d" % key_size)
            header_keys.append(r.take(key_size))
            r.sized(r.varint())
        if r.pos != len(r.data):
            raise Crash("Invalid record size: expected to read %d bytes, read %d" % (len(r.data), r.pos))
        ts = self.max_ts if self.ts_type == "LogAppendTime" else i64(self.base_ts + ts_delta)
        seq = seq_increment(self.base_seq, offset_delta) if self.base_seq >= 0 else -1
        return i64(self.base_offset + offset_delta), ts, key, value, header_keys, seq

def gunzip(data):
    """GZIPInputStream (JDK 17): members one after another; bytes after a member that do not start another
    one are ignored."""
    result = b""
    while True:
        d = zlib.decompressobj(31)
        try:
            result += d.decompress(data)
        except zlib.error as e:
            raise Crash("gzip: %s" % e)
        if not d.eof:
            raise Crash("EOFException: Unexpected end of ZLIB input stream")
        data = d.unused_data
        if len(data) < 10 or data[:3] != b"\x1f\x8b\x08":
            return result

def decompress(codec, data):
    if codec == 1:
        return gunzip(data)
    if codec == 3:  # Kafka's Lz4BlockInputStream checks the FLG/BD bits; LZ4F does the rest
        if len(data) < 6 or data[:4] != b"\x04\x22\x4d\x18":
            raise Crash("lz4: premature end of stream or unsupported magic")
        flg, bd = data[4], data[5]
        if flg & 3 or not flg & 0x20 or flg >> 6 != 1 or bd & 0x8F or (bd >> 4) & 7 < 4:
            raise Crash("lz4: unsupported frame descriptor")
    try:
        from kafka import codec as kc  # the test venv's kafka-python
    except ImportError:
        raise Unsupported("kafka-python is needed for %s" % CODECS[codec])
    decode, available = {2: (kc.snappy_decode, kc.has_snappy), 3: (kc.lz4_decode, kc.has_lz4),
                         4: (kc.zstd_decode, kc.has_zstd)}[codec]
    if not available():
        raise Unsupported("no Python codec for %s" % CODECS[codec])
    try:
        return bytes(decode(bytes(data)))
    except Exception as e:  # noqa: BLE001 - any decoder failure is Kafka's "Failed to decompress" crash
        raise Crash("%s decompression failed: %r" % (CODECS[codec], e))

def batches(data, pos, end):
    """FileLogInputStream from `pos` to `end`: it stops when the 17 header bytes or the whole batch do not fit."""
    while pos < end - 17:
        size, magic = struct.unpack_from(">i4xb", data, pos + 8)
        if size < 14:
            raise Crash("Found record size %d smaller than minimum record overhead (14)" % size)
        if pos > end - LOG_OVERHEAD - size:
            return
        if magic < 2:
            raise Crash("legacy batch (magic %d) at position %d, not modelled" % (magic, pos))
        yield Batch(data, pos, size)
        pos += LOG_OVERHEAD + size

def control_text(key, value):
    if key is None or len(key) < 4:
        raise Crash("control record key is null or shorter than 4 bytes")
    version, type_id = struct.unpack_from(">hh", key)
    if version < 0:
        raise Crash("Invalid version found for control record: %d" % version)
    if type_id in (0, 1, 3, 4) and value is None:
        raise Crash("NullPointerException: control record without a value")
    if type_id in (0, 1):
        if len(value) < 6 or struct.unpack_from(">h", value)[0] < 0:
            raise Crash("Invalid end transaction marker value")
        return " endTxnMarker: %s coordinatorEpoch: %d" % (("ABORT", "COMMIT")[type_id],
                                                            struct.unpack_from(">i", value, 2)[0])
    if type_id == 2:
        raise Crash("unsupported: LeaderChange JSON")
    if type_id in (3, 4):  # SnapshotHeaderRecord / SnapshotFooterRecord v0 (flexible: tagged fields follow)
        r = Reader(value)
        fields = [("version", r.fixed("h"))] + ([("lastContainedLogTimestamp", r.fixed("q"))] if type_id == 3 else [])
        for _ in range(r.varint(zigzag=False)):
            r.varint(zigzag=False)
            size = r.varint(zigzag=False)
            if size < 0:
                raise Crash("NegativeArraySizeException")
            r.take(size)
        return " %s {%s}" % (("SnapshotHeader", "SnapshotFooter")[type_id - 3], ",".join('"%s":%d' % f for f in fields))
    if type_id in (5, 6):
        raise Crash("unsupported: control type %d JSON" % type_id)
    return " controlType: UNKNOWN(%d)" % type_id

# ---------------------------------------------------------------- the dumps

def dump_log(path, non_consecutive):
    name = name_of(path)
    if name.endswith(".log"):
        out("Log starting offset: %d" % parse_long(name.split(".")[0]))
    elif name == "bootstrap.checkpoint":
        out("KRaft bootstrap snapshot")
    elif len(name) < 31:  # Snapshots.parse: %020d-%010d.checkpoint
        raise Crash("StringIndexOutOfBoundsException: %s" % name)
    else:
        out("Snapshot end offset: %d, epoch: %d" % (parse_long(name[:20]), parse_long(name[21:31], 32)))
    data = read_all(path, "NoSuchFileException")
    valid_bytes, last, key = 0, -1, absolute(path)
    for batch in batches(data, 0, len(data)):
        out(batch.line())
        for offset, ts, k, v, header_keys, seq in batch.records():
            if offset != i64(last + 1):  # TreeMap.put: the last pair for an earlier offset wins
                non_consecutive.compute_if_absent(key, dict)[last] = offset
            last = offset
            line = "| offset: %d %s: %d keySize: %d valueSize: %d sequence: %d headerKeys: [%s]" % (
                offset, batch.ts_type, ts, -1 if k is None else len(k), -1 if v is None else len(v), seq,
                ",".join(jstr(h) for h in header_keys))
            if batch.control:
                line += control_text(k, v)
            else:
                line += ("" if k is None else " key: " + jstr(k)) + ("" if v is None else " payload: " + jstr(v))
            out(line)
        valid_bytes += batch.size
    if len(data) > valid_bytes:
        out("Found %d invalid bytes at the end of %s" % (len(data) - valid_bytes, name))

def open_index(path, what):
    if not os.path.isfile(path):  # Kafka creates the missing file, then fails: Invalid max index size: -1
        raise Crash("%s %s is missing" % (what, path))
    return read_all(path, what)

def index_entry(idx, base, i):
    rel, position = struct.unpack_from(">ii", idx, 8 * i)
    return i64(base + rel), position

def dump_index(path, verify_only, mismatches):
    stem = name_of(path).split(".")[0]
    base = parse_long(stem)
    log = read_all(sibling(path, stem + ".log"), "NoSuchFileException (log)")
    idx = open_index(absolute(path), "offset index")
    if len(idx) < 8:
        out("%s is empty." % path)
        return
    for i in range(len(idx) // 8):
        offset, position = index_entry(idx, base, i)
        if i > 0 and offset == base:
            return
        if position < 0 or position > len(log):
            raise Crash("IllegalArgumentException: Invalid position %d" % position)
        first = next(batches(log, position, min(position + MAX_MESSAGE_SIZE, len(log))), None)
        if first is None:
            raise Crash("NoSuchElementException: no batch at position %d" % position)
        if first.last_offset != offset:
            mismatches.compute_if_absent(absolute(path), dict)[offset] = first.last_offset
        if not verify_only:
            out("offset: %d position: %d" % (offset, position))

def index_lookup(idx, base, target):
    """OffsetIndex.lookup: the position of the largest lower bound of target (warm section first), else 0."""
    entries = len(idx) // 8
    if entries == 0:
        return 0
    def search(lo, hi):
        while lo < hi:
            mid = (lo + hi + 1) >> 1
            found = index_entry(idx, base, mid)[0]
            if found == target:
                return mid
            lo, hi = (lo, mid - 1) if found > target else (mid, hi)
        return lo

    first_hot = max(0, entries - 1 - WARM_INDEX_ENTRIES)
    if index_entry(idx, base, first_hot)[0] < target:
        return index_entry(idx, base, search(first_hot, entries - 1))[1]
    if index_entry(idx, base, 0)[0] > target:
        return 0
    return index_entry(idx, base, search(0, first_hot))[1]

def dump_time_index(path, verify_only, errors):
    stem = name_of(path).split(".")[0]
    base = parse_long(stem)
    log = read_all(sibling(path, stem + ".log"), "NoSuchFileException (log)")
    idx = open_index(sibling(path, stem + ".index"), "offset index")
    tidx = open_index(absolute(path), "time index")
    key, previous = absolute(path), -1
    for i in range(len(tidx) // 12):
        ts, rel = struct.unpack_from(">qi", tidx, 12 * i)
        offset = i64(base + rel)
        if i > 0 and offset == base:
            return
        position = index_lookup(idx, base, offset)
        if position < 0 or position > len(log):
            raise Crash("IllegalArgumentException: Invalid position %d" % position)
        found = next((b for b in batches(log, position, len(log)) if b.last_offset >= offset), None)
        if found is None or found.last_offset != offset:
            errors[2].compute_if_absent(key, list).append((offset, -1 if found is None else found.last_offset))
        else:
            max_ts = max([-1] + [r[1] for r in found.records()])
            if max_ts != ts:
                errors[0].compute_if_absent(key, list).append((ts, max_ts))
            if previous >= ts:
                errors[1].compute_if_absent(key, list).append((ts, previous))
        if not verify_only:
            out("timestamp: %d offset: %d" % (ts, offset))
        previous = ts

def dump_txn_index(path):
    name = name_of(path)
    parse_long(name[:name.index(".")])
    if not os.path.exists(path):
        return
    if not os.access(path, os.R_OK | os.W_OK):  # opened READ+WRITE
        raise Crash("AccessDeniedException: %s" % path)
    data, txns = read_all(path, "transaction index"), []
    for i in range(len(data) // 34):  # all are read before any is printed
        version = struct.unpack_from(">b", data, 34 * i)[0]
        if version > 0:
            raise Crash("Unexpected aborted transaction version %d in transaction index %s" % (version, absolute(path)))
        txns.append((0,) + struct.unpack_from(">qqqq", data, 34 * i + 2))  # 4.4 prints the current version
    for t in txns:
        out("version: %d producerId: %d firstOffset: %d lastOffset: %d lastStableOffset: %d" % t)

def dump_snapshot(path):
    data = read_all(path, "NoSuchFileException (snapshot)")
    if len(data) < 2:
        problem = "null"  # BufferUnderflowException has no message
    elif struct.unpack_from(">h", data)[0] != 1:
        problem = "Snapshot contained an unknown file version %d" % struct.unpack_from(">h", data)[0]
    elif len(data) < 10:
        problem = "null"
    else:
        crc, count = struct.unpack_from(">Ii", data, 2)
        problem = ("non-nullable field producerEntries was serialized as null" if count < 0 else
                   "Tried to allocate a collection of size %d, but there are only %d bytes remaining."
                   % (count, len(data) - 10) if count > len(data) - 10 else
                   "null" if len(data) - 10 < 46 * count else None)
    if problem is not None:
        err("Snapshot failed schema validation: %s" % problem)
        return
    computed = crc32c(data[6:])
    if crc != computed:
        err("Snapshot is corrupt (CRC is no longer valid). Stored crc: %d. Computed crc: %d" % (crc, computed))
        return
    for i in range(count):
        pid, epoch, last_seq, last_offset, delta, ts, coordinator_epoch, txn_first = struct.unpack_from(
            ">qhiqiqiq", data, 10 + 46 * i)
        line = "producerId: %d producerEpoch: %d coordinatorEpoch: %d currentTxnFirstOffset: %s lastTimestamp: %d" % (
            pid, epoch, coordinator_epoch, optional_long(txn_first if txn_first >= 0 else None), ts)
        if last_offset >= 0:
            line += " firstSequence: %d lastSequence: %d lastOffset: %d offsetDelta: %d timestamp: %d" % (
                seq_decrement(last_seq, delta), last_seq, last_offset, delta, ts)
        out(line)

# ---------------------------------------------------------------- end-of-run summaries

class JavaHashMap:
    """A java.util.HashMap of path -> pairs, for its iteration order: the table (16 slots) made on the first
    computeIfAbsent and doubled at the start of any later one that finds more than 0.75 * slots keys (or when a
    bucket reaches 8 keys in a table under 64 slots); bucket = spread & (slots - 1) with spread = h ^ (h >>> 16)
    of String.hashCode; a new key goes to the head of its bucket; a resize keeps each bucket's order."""

    def __init__(self):
        self.values, self.buckets = {}, []

    @staticmethod
    def spread(s):
        h, units = 0, s.encode("utf-16-be", "surrogatepass")
        for j in range(0, len(units), 2):
            h = (31 * h + (units[j] << 8 | units[j + 1])) & 0xFFFFFFFF
        return h ^ (h >> 16)

    def resize(self):
        n = 2 * len(self.buckets) if self.buckets else 16
        table = [[] for _ in range(n)]
        for bucket in self.buckets:
            for key in bucket:
                table[self.spread(key) & (n - 1)].append(key)
        self.buckets = table

    def compute_if_absent(self, key, make):
        if not self.buckets or len(self.values) > len(self.buckets) * 3 // 4:
            self.resize()
        if key not in self.values:
            bucket = self.buckets[self.spread(key) & (len(self.buckets) - 1)]
            bin_count = len(bucket)
            bucket.insert(0, key)
            self.values[key] = make()
            if bin_count >= 7 and len(self.buckets) < 64:
                self.resize()
        return self.values[key]

    def ordered(self):
        return [(key, self.values[key]) for bucket in self.buckets for key in bucket]

def print_summaries(mismatches, time_errors, non_consecutive):
    for path, pairs in mismatches.ordered():  # TreeMap(reverseOrder())
        err("Mismatches in :%s" % path)
        for index in sorted(pairs, reverse=True):
            err("  Index offset: %d, log offset: %d" % (index, pairs[index]))
    for table, title, item in [
            (time_errors[0], "Found timestamp mismatch in :%s", "  Index timestamp: %d, log timestamp: %d"),
            (time_errors[1], "Found out of order timestamp in :%s",
             "  Index timestamp: %d, Previously indexed timestamp: %d"),
            (time_errors[2], "The following indexed offsets are not found in :%s",
             "Indexed offset: %d, found log offset: %d")]:
        for path, pairs in table.ordered():
            err(title % path)
            for pair in pairs:
                err(item % pair)
    for path, pairs in non_consecutive.ordered():  # TreeMap
        err("Non-consecutive offsets in %s" % path)
        for first in sorted(pairs):
            err("  %d is followed by %d" % (first, pairs[first]))

def main(argv):
    verify_only = bool(argv) and argv[0] == "--verify-index-only"
    files = argv[1:] if verify_only else argv
    if not files:
        sys.exit(__doc__.split("\n\n")[1])
    mismatches, non_consecutive, time_errors = JavaHashMap(), JavaHashMap(), [JavaHashMap() for _ in range(3)]
    try:
        for arg in files:
            path = jfile(arg)
            out("Dumping %s" % path)
            name = name_of(path)
            if "." not in name:
                err("Ignoring unknown file %s" % path)
                continue
            dump = {".index": lambda: dump_index(path, verify_only, mismatches),
                    ".timeindex": lambda: dump_time_index(path, verify_only, time_errors),
                    ".snapshot": lambda: dump_snapshot(path), ".txnindex": lambda: dump_txn_index(path)}
            dump[".log"] = dump[".checkpoint"] = lambda: dump_log(path, non_consecutive)
            dump.get(name[name.rfind("."):], lambda: err("Ignoring unknown file %s" % path))()
    except (Crash, Unsupported) as e:
        sys.stdout.flush()
        err("%s: %s" % ("CRASH" if isinstance(e, Crash) else "UNSUPPORTED", e))
        sys.exit(1 if isinstance(e, Crash) else 2)
    sys.stdout.flush()
    print_summaries(mismatches, time_errors, non_consecutive)

if __name__ == "__main__":
    main(sys.argv[1:])
