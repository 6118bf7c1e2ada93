"""Writes Kafka partition directories with librdkafka's transactional producer (the confluent-kafka package):
the minimal in-process broker of librdkafka_partitions.py, extended to act as the transaction coordinator too,
stores the producer's batches as produced and, when a transaction ends, appends to each partition it added
the control batch (commit or abort marker) a Kafka broker writes, and on abort the entry a Kafka broker adds
to the `.txnindex` of the segment holding the marker (unless --no-txnindex). Prints JSON describing every
partition: its records with offset, timestamp, transaction and outcome, the markers, the last stable offset
and what a read_committed consumer sees below it (the `committed` list of read_committed.py).

usage: librdkafka_transactions.py ROOT [--no-txnindex] [--verbose]

Per codec a topic `t-<codec>` partition 0 gets 12 seeded transactions of 10-40 records over 30 keys (about
8% tombstones), each produced in one to three flushed bursts so that batches, and transactions, straddle
segments. A first producer runs transactions 0-5 and leaves 5 open; a second producer with the same
transactional.id then initialises, which makes the coordinator abort transaction 5 (marker written with the
fenced epoch, e+1) and hand the second producer epoch e+2, as a Kafka coordinator does. The second producer
runs transactions 6-11 and leaves 11 open (flushed, never ended): a hanging transaction, so the last stable
offset is its first offset. Three transactions besides 5 end with abort_transaction(), the rest commit.
Producers are left by dropping them (rd_kafka_destroy(), which ends no transaction): Producer.close() would
abort the open one first.

JSON, a list with per partition: dir, codec, segments (base offsets), coordinator_epoch, transactional_id,
producer_ids, producer_epochs (of the two producers), txnindex (whether written), records ({offset,
timestamp, key, value, txn, outcome: commit|abort|open}), transactions, markers, aborted_index (the entries
[producerId, firstOffset, lastOffset, lastStableOffset] a broker keeps, written or not), last_stable_offset
and committed_view ([offset, key, value] of committed records below it, in offset order).

Requests served, all non-flexible: ApiVersions v0, Metadata v0-1, Produce v3-7, FindCoordinator v0-2 (any
key type: the broker is its own coordinator), InitProducerId v0-1 (with a transactional id: one producer id
per transactional id, epoch bumped on every re-initialisation), AddPartitionsToTxn v0-1, EndTxn v0-1. Fetch
is advertised (never served) as in librdkafka_partitions.py; AddOffsetsToTxn and TxnOffsetCommit are not
(librdkafka does not need them unless send_offsets_to_transaction() is called).
"""
import gc
import json
import os
import random
import struct
import sys
import time

from confluent_kafka import KafkaException, Producer
from kafka.record.util import calc_crc32c

import librdkafka_partitions
from librdkafka_partitions import Reader, string

CODECS = ["none", "lz4", "zstd"]
COORDINATOR_EPOCH = 7
TRANSACTIONS = 12
FENCED = 5  # the first producer's last transaction, aborted by the coordinator when the second one initialises
TIMEOUT = 10.0

ABORT, COMMIT = 0, 1
INVALID_PRODUCER_EPOCH, INVALID_PRODUCER_ID_MAPPING = 47, 49

# (api key, min version, max version) advertised in ApiVersions v0.
APIS = [(0, 3, 7), (1, 4, 11), (3, 0, 1), (10, 0, 2), (18, 0, 0), (22, 0, 1), (24, 0, 1), (26, 0, 1)]
SERVED = {key: (low, high) for key, low, high in APIS if key != 1}  # Fetch only advertised


def varint(n):
    """A zigzag varint, as record fields are encoded."""
    n = (n << 1) ^ (n >> 63)
    out = bytearray()
    while n >= 0x80:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def control_batch(producer_id, producer_epoch, marker_type, coordinator_epoch, timestamp):
    """A magic-2 control batch holding one end-transaction marker (base offset 0: the partition assigns it)."""
    key = struct.pack(">hh", 0, marker_type)
    value = struct.pack(">hi", 0, coordinator_epoch)
    body = (struct.pack(">b", 0) + varint(0) + varint(0) + varint(len(key)) + key + varint(len(value)) + value
            + varint(0))
    record = varint(len(body)) + body
    # attributes: transactional (0x10) | control (0x20), create-time timestamps, no compression.
    tail = struct.pack(">hiqqqhii", 0x30, 0, timestamp, timestamp, producer_id, producer_epoch, -1, 1) + record
    crc = calc_crc32c(memoryview(tail))
    return struct.pack(">qiibI", 0, 4 + 1 + 4 + len(tail), 0, 2, crc) + tail


class TxnPartition(librdkafka_partitions.Partition):
    """A partition that also tracks, per producer id, the first offset of its open transaction, and writes
    the end markers and .txnindex entries."""

    def __init__(self, directory, broker, topic, index):
        super().__init__(directory)
        self.broker, self.topic, self.index = broker, topic, index
        self.open_txns = {}  # producer id -> first offset of its transaction's data here
        self.markers = []
        self.aborted_index = []

    def append(self, records):
        pos, base = 0, self.next_offset
        while pos + 12 <= len(records):
            (length,) = struct.unpack_from(">i", records, pos + 8)
            attributes, last_delta = struct.unpack_from(">hi", records, pos + 21)
            producer_id, epoch = struct.unpack_from(">qh", records, pos + 43)
            if attributes & 0x10 and not attributes & 0x20:
                self.broker.check_txn_data(self, producer_id, epoch)
                self.open_txns.setdefault(producer_id, base)
            base += last_delta + 1
            pos += 12 + length
        return super().append(records)

    def end_txn(self, producer_id, producer_epoch, marker_type, write_txnindex):
        """Appends the marker; on abort, the .txnindex entry of the segment it lands in. Caller holds the lock."""
        now = int(time.time() * 1000)
        offset = super().append(control_batch(producer_id, producer_epoch, marker_type, COORDINATOR_EPOCH, now))
        first = self.open_txns.pop(producer_id, None)
        segment_base = int(os.path.basename(self.segment)[:20])
        self.markers.append({"offset": offset, "type": "commit" if marker_type == COMMIT else "abort",
                             "producer_id": producer_id, "producer_epoch": producer_epoch, "timestamp": now,
                             "segment": segment_base, "first_offset": first})
        if marker_type == ABORT and first is not None:
            entry = [producer_id, first, offset, self.last_stable_offset()]
            self.aborted_index.append(entry)
            if write_txnindex:
                with open(os.path.join(self.directory, "%020d.txnindex" % segment_base), "ab") as f:
                    f.write(struct.pack(">hqqqq", 0, *entry))

    def last_stable_offset(self):
        return min(self.open_txns.values()) if self.open_txns else self.next_offset


class TxnBroker(librdkafka_partitions.Broker):
    def __init__(self, root, txnindex=True):
        self.txnindex = txnindex
        self.txns = {}  # transactional id -> {"pid", "epoch", "partitions": set of topics (partition 0)}
        self.errors = []
        self.seen = set()  # (api key, version) of every request
        self.end_txn_requests = 0
        self.connections = 0
        super().__init__(root)

    def client(self, conn):
        with self.lock:
            self.connections += 1
        try:
            super().client(conn)
        except Exception as e:  # a request this broker misread: fail the run rather than leave the client waiting
            self.errors.append("%s: %s" % (type(e).__name__, e))
        finally:
            conn.close()
            with self.lock:
                self.connections -= 1

    def partition(self, topic, index):
        """Caller holds the lock."""
        if index != 0:
            raise ConnectionError("only partition 0 exists (got %s-%d)" % (topic, index))
        if topic not in self.partitions:
            self.partitions[topic] = TxnPartition(os.path.join(self.root, "%s-%d" % (topic, index)), self, topic, index)
        return self.partitions[topic]

    def check_txn_data(self, partition, producer_id, epoch):
        """A transactional batch must come from the current epoch of a transaction that added its partition."""
        for tid, t in self.txns.items():
            if t["pid"] == producer_id:
                if t["epoch"] != epoch or partition.topic not in t["partitions"]:
                    self.errors.append("transactional batch of %s (pid %d epoch %d) for %s outside its transaction"
                                       % (tid, producer_id, epoch, partition.topic))
                return
        self.errors.append("transactional batch of unknown producer id %d" % producer_id)

    def txn(self, tid, pid, epoch):
        t = self.txns.get(tid)
        if t is None or t["pid"] != pid:
            return None, INVALID_PRODUCER_ID_MAPPING
        if t["epoch"] != epoch:
            return None, INVALID_PRODUCER_EPOCH
        return t, 0

    def end(self, t, marker_type):
        """Writes the markers of transaction t, with its current epoch. Caller holds the lock."""
        for topic in sorted(t["partitions"]):
            self.partitions[topic].end_txn(t["pid"], t["epoch"], marker_type, self.txnindex)
        t["partitions"] = set()

    def handle(self, key, version, r):
        self.seen.add((key, version))
        if key != 18 and not SERVED.get(key, (0, -1))[0] <= version <= SERVED.get(key, (0, -1))[1]:
            self.errors.append("unserved request: api key %d v%d" % (key, version))
            raise ConnectionError("unserved api key %d v%d" % (key, version))
        if key == 18:  # ApiVersions, in v0 form; error 35 asks a client that sent v1+ for v0
            error = 0 if version == 0 else 35
            return struct.pack(">hi", error, len(APIS)) + b"".join(struct.pack(">hhh", *a) for a in APIS)
        if key == 0:  # Produce: make sure its partitions are TxnPartitions, then store as the base broker does
            peek = Reader(r.data)
            peek.pos = r.pos
            peek.string()
            peek.take("hi")
            with self.lock:
                for _ in range(peek.take("i")):
                    topic = peek.string()
                    for _ in range(peek.take("i")):
                        self.partition(topic, peek.take("i"))
                        peek.bytes_()
            return super().handle(key, version, r)
        if key == 10:  # FindCoordinator v0-2: whatever the key (type), this broker
            r.string()
            if version == 0:
                return struct.pack(">hi", 0, 0) + string("127.0.0.1") + struct.pack(">i", self.port)
            return struct.pack(">ih", 0, 0) + string(None) + struct.pack(">i", 0) + string("127.0.0.1") \
                + struct.pack(">i", self.port)
        if key == 22:  # InitProducerId v0-1
            tid = r.string()
            r.take("i")  # transaction timeout
            with self.lock:
                if tid is None:  # idempotent only: a fresh producer id
                    self.next_pid += 1
                    return struct.pack(">ihqh", 0, 0, self.next_pid, 0)
                t = self.txns.get(tid)
                if t is None:
                    self.next_pid += 1
                    t = self.txns[tid] = {"pid": self.next_pid, "epoch": 0, "partitions": set()}
                else:
                    if t["partitions"]:
                        # A transaction still open: fence its producer (epoch + 1), abort it with that epoch.
                        t["epoch"] += 1
                        self.end(t, ABORT)
                    t["epoch"] += 1
                return struct.pack(">ihqh", 0, 0, t["pid"], t["epoch"])
        if key == 24:  # AddPartitionsToTxn v0-1
            tid = r.string()
            pid, epoch = r.take("qh")
            topics = []
            for _ in range(r.take("i")):
                topics.append((r.string(), [r.take("i") for _ in range(r.take("i"))]))
            with self.lock:
                t, error = self.txn(tid, pid, epoch)
                if error:
                    self.errors.append("AddPartitionsToTxn %s pid %d epoch %d: error %d" % (tid, pid, epoch, error))
                for topic, parts in topics:
                    for index in parts:
                        if not error:
                            self.partition(topic, index)
                            t["partitions"].add(topic)
            out = struct.pack(">ii", 0, len(topics))
            for topic, parts in topics:
                out += string(topic) + struct.pack(">i", len(parts))
                out += b"".join(struct.pack(">ih", index, error) for index in parts)
            return out
        if key == 26:  # EndTxn v0-1
            tid = r.string()
            pid, epoch, committed = r.take("qhb")
            with self.lock:
                self.end_txn_requests += 1
                t, error = self.txn(tid, pid, epoch)
                if error:
                    self.errors.append("EndTxn %s pid %d epoch %d: error %d" % (tid, pid, epoch, error))
                else:
                    self.end(t, COMMIT if committed else ABORT)
            return struct.pack(">ih", 0, error)
        return super().handle(key, version, r)


def check(ok, what):
    if not ok:
        raise SystemExit("librdkafka_transactions: %s" % what)


def produce(broker, codec, seed):
    rng = random.Random(seed)
    topic, tid = "t-%s" % codec, "txn-%s" % codec
    # Which transactions end with abort_transaction(): one of each producer's, and one more.
    aborted = {rng.randrange(0, FENCED), rng.randrange(FENCED + 1, TRANSACTIONS - 1)}
    aborted.add(rng.choice([i for i in range(TRANSACTIONS - 1) if i != FENCED and i not in aborted]))
    outcomes = ["abort" if i in aborted or i == FENCED else "commit" for i in range(TRANSACTIONS - 1)] + ["open"]
    acked, failed = [], []

    def new_producer():
        p = Producer({
            "bootstrap.servers": "127.0.0.1:%d" % broker.port,
            "transactional.id": tid,
            "enable.idempotence": True,
            "linger.ms": 5,
            "batch.num.messages": 40,
            "compression.codec": codec,
            "broker.address.family": "v4",
        })
        try:
            p.init_transactions(TIMEOUT)
        except KafkaException as e:
            raise SystemExit("librdkafka_transactions: init_transactions (%s): %s" % (codec, e))
        return p

    def flush(p):
        check(p.flush(TIMEOUT) == 0, "flush timed out (%s)" % codec)
        check(not failed, "delivery failed (%s): %s" % (codec, failed[:3]))

    epochs = []
    producer = new_producer()
    epochs.append(broker.txns[tid]["epoch"])
    for txn in range(TRANSACTIONS):
        if txn == FENCED + 1:
            # A second instance fences the first, whose transaction FENCED is still open.
            second = new_producer()
            epochs.append(broker.txns[tid]["epoch"])
            producer = second  # the first instance's rd_kafka_destroy(): see below
            del second
        producer.begin_transaction()
        n = rng.randint(10, 40)
        cuts = sorted(rng.sample(range(1, n), rng.randint(0, 2)))
        for i in range(n):
            if i in cuts:
                flush(producer)
            key = ("key-%02d" % rng.randrange(30)).encode()
            value = None if rng.random() < 0.08 else ("txn-%d-%d-%s" % (txn, i, "x" * rng.randrange(50))).encode()
            producer.produce(topic, key=key, value=value, partition=0,
                             on_delivery=lambda err, msg, t=txn: failed.append(err) if err else acked.append((t, msg)))
        flush(producer)
        try:
            if outcomes[txn] == "commit":
                producer.commit_transaction(TIMEOUT)
            elif outcomes[txn] == "abort" and txn != FENCED:
                producer.abort_transaction(TIMEOUT)
        except KafkaException as e:
            raise SystemExit("librdkafka_transactions: ending transaction %d (%s): %s (broker: %s)"
                             % (txn, codec, e, "; ".join(broker.errors)))
    # The last transaction stays open. Dropping the last reference to a producer is rd_kafka_destroy(), which
    # leaves an open transaction open (for a coordinator to abort after transaction.timeout.ms), whereas
    # Producer.close() aborts it first (EndTxn) and, for the fenced first producer, fails with _FENCED.
    # Checked: the producer's connections close and no EndTxn arrives.
    ends = broker.end_txn_requests
    del producer
    gc.collect()
    deadline = time.time() + TIMEOUT
    while broker.connections and time.time() < deadline:
        time.sleep(0.01)
    check(not broker.connections, "the producer was not destroyed (%s)" % codec)

    p = broker.partitions[topic]
    with broker.lock:
        check(broker.end_txn_requests == ends and broker.txns[tid]["partitions"] == {topic},
              "destroying the producer ended its open transaction (%s)" % codec)
        check(not broker.errors, "broker: %s" % "; ".join(broker.errors))
        lso = p.last_stable_offset()
        markers = list(p.markers)
        aborted_index = list(p.aborted_index)
    check(len(markers) == TRANSACTIONS - 1, "%d markers for %d ended transactions" % (len(markers), TRANSACTIONS - 1))
    segments = sorted(int(n[:20]) for n in os.listdir(p.directory) if n.endswith(".log"))

    def segment_of(offset):
        return max(s for s in segments if s <= offset)

    records = []
    for txn, m in sorted(acked, key=lambda a: a[1].offset()):
        records.append({
            "offset": m.offset(), "timestamp": m.timestamp()[1], "key": m.key().decode(),
            "value": None if m.value() is None else m.value().decode(), "txn": txn, "outcome": outcomes[txn],
        })
    transactions = []
    for txn in range(TRANSACTIONS):
        offsets = [r["offset"] for r in records if r["txn"] == txn]
        marker = markers[txn] if txn < len(markers) else None
        check(marker is None or marker["type"] == outcomes[txn], "transaction %d ended %s" % (txn, marker))
        check(marker is None or marker["first_offset"] == min(offsets), "transaction %d first offset" % txn)
        ends_at = [marker["offset"]] if marker else []
        transactions.append({
            "txn": txn, "outcome": outcomes[txn], "producer_epoch": epochs[0] if txn <= FENCED else epochs[1],
            "ended_by": None if marker is None else "fencing" if txn == FENCED else
            "commit_transaction" if outcomes[txn] == "commit" else "abort_transaction",
            "first_offset": min(offsets), "last_data_offset": max(offsets),
            "marker_offset": marker["offset"] if marker else None,
            "segments": sorted({segment_of(o) for o in offsets + ends_at}),
        })
    check(any(len(t["segments"]) > 1 for t in transactions), "no transaction spans a segment boundary (%s)" % codec)
    check(lso == transactions[-1]["first_offset"], "last stable offset %d is not the open transaction's" % lso)
    for txn, m in enumerate(markers):
        m["txn"] = txn
    return {
        "dir": p.directory, "codec": codec, "segments": segments, "coordinator_epoch": COORDINATOR_EPOCH,
        "transactional_id": tid, "producer_ids": [broker.txns[tid]["pid"]], "producer_epochs": epochs,
        "txnindex": broker.txnindex, "records": records, "transactions": transactions, "markers": markers,
        "aborted_index": aborted_index, "last_stable_offset": lso,
        "committed_view": [[r["offset"], r["key"], r["value"]] for r in records
                           if r["outcome"] == "commit" and r["offset"] < lso],
    }


def main():
    args = sys.argv[1:]
    flags = {a for a in args if a.startswith("--")}
    check(len(args) - len(flags) == 1 and flags <= {"--no-txnindex", "--verbose"},
          "usage: librdkafka_transactions.py ROOT [--no-txnindex] [--verbose]")
    root = [a for a in args if not a.startswith("--")][0]
    os.makedirs(root, exist_ok=True)
    broker = TxnBroker(root, txnindex="--no-txnindex" not in flags)
    out = [produce(broker, codec, i) for i, codec in enumerate(CODECS)]
    if "--verbose" in flags:
        print("requests: %s" % sorted(broker.seen), file=sys.stderr)
    json.dump(out, sys.stdout)


if __name__ == "__main__":
    main()
