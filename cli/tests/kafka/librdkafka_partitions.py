"""Writes Kafka partition directories with librdkafka (the confluent-kafka package): its producer sends
record batches, as it builds and compresses them, to a minimal in-process broker that stores them as a Kafka
broker does (base offset assigned, the bytes otherwise as produced) in `<topic>-0/` segments. Prints JSON of
every record the producer had acknowledged, with its offset and timestamp.

usage: librdkafka_partitions.py ROOT

librdkafka's own mock cluster keeps its log in memory and no client API hands out the stored batches, so the
broker here speaks the few requests a producer needs (ApiVersions v0, Metadata v0-1, InitProducerId v0-1 for
idempotent producers, Produce v3-7) and nothing else.
"""
import json
import os
import random
import socket
import struct
import sys
import threading

from confluent_kafka import Producer

CODECS = ["none", "gzip", "snappy", "lz4", "zstd"]
BATCHES_PER_SEGMENT = 6


class Reader:
    def __init__(self, data):
        self.data, self.pos = data, 0

    def take(self, fmt):
        v = struct.unpack_from(">" + fmt, self.data, self.pos)
        self.pos += struct.calcsize(">" + fmt)
        return v[0] if len(v) == 1 else v

    def string(self):
        n = self.take("h")
        if n < 0:
            return None
        s = self.data[self.pos:self.pos + n].decode()
        self.pos += n
        return s

    def bytes_(self):
        n = self.take("i")
        if n < 0:
            return None
        b = self.data[self.pos:self.pos + n]
        self.pos += n
        return b


def string(s):
    if s is None:
        return struct.pack(">h", -1)
    b = s.encode()
    return struct.pack(">h", len(b)) + b


class Partition:
    def __init__(self, directory):
        self.directory = directory
        os.makedirs(directory, exist_ok=True)
        # The files a broker keeps beside the segments.
        with open(os.path.join(directory, "leader-epoch-checkpoint"), "w") as f:
            f.write("0\n1\n0 0\n")
        with open(os.path.join(directory, "partition.metadata"), "w") as f:
            f.write("version: 0\ntopic_id: AAAAAAAAAAAAAAAAAAAAAA\n")
        self.next_offset = 0
        self.batches = 0
        self.segment = None

    def append(self, records):
        pos, first = 0, None
        while pos + 12 <= len(records):
            (length,) = struct.unpack_from(">i", records, pos + 8)
            batch = bytearray(records[pos:pos + 12 + length])
            (last_delta,) = struct.unpack_from(">i", batch, 23)
            if self.segment is None or self.batches % BATCHES_PER_SEGMENT == 0:
                self.segment = os.path.join(self.directory, "%020d.log" % self.next_offset)
            # A broker assigns the base offset; it is outside the CRC, as is the leader epoch.
            struct.pack_into(">q", batch, 0, self.next_offset)
            struct.pack_into(">i", batch, 12, 0)
            with open(self.segment, "ab") as f:
                f.write(batch)
            first = self.next_offset if first is None else first
            self.next_offset += last_delta + 1
            self.batches += 1
            pos += 12 + length
        return first


class Broker:
    def __init__(self, root):
        self.root = root
        self.partitions = {}
        self.lock = threading.Lock()
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.port = self.sock.getsockname()[1]
        self.next_pid = 4000
        threading.Thread(target=self.serve, daemon=True).start()

    def serve(self):
        while True:
            conn, _ = self.sock.accept()
            threading.Thread(target=self.client, args=(conn,), daemon=True).start()

    def client(self, conn):
        try:
            while True:
                head = self.recv(conn, 4)
                if head is None:
                    return
                (size,) = struct.unpack(">i", head)
                r = Reader(self.recv(conn, size))
                key, version, correlation = r.take("hhi")
                r.string()  # client id
                body = self.handle(key, version, r)
                out = struct.pack(">i", correlation) + body
                conn.sendall(struct.pack(">i", len(out)) + out)
        except (ConnectionError, OSError):
            return

    @staticmethod
    def recv(conn, n):
        data = b""
        while len(data) < n:
            chunk = conn.recv(n - len(data))
            if not chunk:
                return None
            data += chunk
        return data

    def handle(self, key, version, r):
        if key == 18:  # ApiVersions: answered in v0 form; error 35 asks a client that sent v1+ for v0
            # Fetch and FindCoordinator are advertised (never served): librdkafka enables magic 2, zstd and lz4
            # only for brokers that have them.
            apis = [(0, 3, 7), (1, 4, 11), (3, 0, 1), (10, 0, 0), (18, 0, 0), (22, 0, 1)]
            error = 0 if version == 0 else 35
            return struct.pack(">hi", error, len(apis)) + b"".join(struct.pack(">hhh", *a) for a in apis)
        if key == 3:  # Metadata v0-1
            n = r.take("i")
            topics = [r.string() for _ in range(max(n, 0))] if n >= 0 else sorted(self.partitions)
            out = struct.pack(">i", 1) + struct.pack(">i", 0) + string("127.0.0.1") + struct.pack(">i", self.port)
            if version >= 1:
                out += string(None) + struct.pack(">i", 0)
            out += struct.pack(">i", len(topics))
            for t in topics:
                out += struct.pack(">h", 0) + string(t)
                if version >= 1:
                    out += struct.pack(">b", 0)
                out += struct.pack(">i", 1) + struct.pack(">hii", 0, 0, 0) + struct.pack(">ii", 1, 0) + struct.pack(">ii", 1, 0)
            return out
        if key == 22:  # InitProducerId v0-1
            with self.lock:
                self.next_pid += 1
                pid = self.next_pid
            return struct.pack(">ihqh", 0, 0, pid, 0)
        if key == 0:  # Produce v3-7
            r.string()  # transactional id
            r.take("h")  # acks
            r.take("i")  # timeout
            responses = []
            for _ in range(r.take("i")):
                topic = r.string()
                parts = []
                for _ in range(r.take("i")):
                    index = r.take("i")
                    records = r.bytes_() or b""
                    with self.lock:
                        p = self.partitions.setdefault(topic, Partition(os.path.join(self.root, "%s-%d" % (topic, index))))
                        base = p.append(records)
                    parts.append((index, base if base is not None else p.next_offset))
                responses.append((topic, parts))
            out = struct.pack(">i", len(responses))
            for topic, parts in responses:
                out += string(topic) + struct.pack(">i", len(parts))
                for index, base in parts:
                    out += struct.pack(">ihq", index, 0, base) + struct.pack(">q", -1)
                    if version >= 5:
                        out += struct.pack(">q", 0)
            return out + struct.pack(">i", 0)
        raise ConnectionError("unsupported api key %d" % key)


def produce(broker, codec, seed):
    rng = random.Random(seed)
    topic = "r-%s" % codec
    producer = Producer({
        "bootstrap.servers": "127.0.0.1:%d" % broker.port,
        "compression.codec": codec,
        "enable.idempotence": True,
        "linger.ms": 5,
        "batch.num.messages": 40,
        "broker.address.family": "v4",
    })
    acked = []

    def on_delivery(err, msg, headers):
        if err is not None:
            raise SystemExit("delivery failed: %s" % err)
        # A delivery report does not carry the headers: keep those that were sent.
        acked.append((msg, headers or []))

    for burst in range(12):
        for i in range(rng.randint(20, 60)):
            key = ("key-%02d" % rng.randrange(50)).encode()
            value = None if rng.random() < 0.08 else ("librdkafka-%d-%d-%s" % (burst, i, "y" * rng.randrange(60))).encode()
            headers = [("src", b"rdkafka")] if rng.random() < 0.3 else None
            producer.produce(topic, key=key, value=value, headers=headers, partition=0,
                             on_delivery=lambda err, msg, h=headers: on_delivery(err, msg, h))
        producer.flush(10)
    records = []
    for m, headers in sorted(acked, key=lambda a: a[0].offset()):
        records.append({
            "offset": m.offset(), "timestamp": m.timestamp()[1], "key": m.key().decode(),
            "value": None if m.value() is None else m.value().decode(),
            "headers": [[h, v.decode()] for h, v in headers],
        })
    p = broker.partitions[topic]
    segments = sorted(int(n[:20]) for n in os.listdir(p.directory) if n.endswith(".log"))
    return {"dir": p.directory, "codec": codec, "segments": segments, "records": records}


def main():
    root = sys.argv[1]
    os.makedirs(root, exist_ok=True)
    broker = Broker(root)
    json.dump([produce(broker, codec, i) for i, codec in enumerate(CODECS)], sys.stdout)


if __name__ == "__main__":
    main()
