"""Writes Kafka partition directories with kafka-python's own record-batch builder, one per codec, and a JSON
file of every record written, for cli/tests/suite/kafka.rs to compare with what logcompact reads.

usage: make_partitions.py ROOT

Each partition `t-<codec>-0` holds three segments (the last one active) of magic 2 batches: 60 keys written
over and over (many duplicates), tombstones, headers, batches of an idempotent producer (producer id, epoch,
sequence), offset gaps inside batches and between them. `snappy-raw` holds raw snappy blocks as librdkafka
writes them (kafka-python writes the xerial framing Java clients use). ROOT/cleaner-offset-checkpoint names a
checkpoint for `t-none-0`.
"""
import json
import os
import random
import struct
import sys

import snappy
from kafka.record import default_records
from kafka.record.default_records import DefaultRecordBatchBuilder

CODECS = {"none": 0, "gzip": 1, "snappy": 2, "snappy-raw": 2, "lz4": 3, "zstd": 4}


def batch_bytes(codec, base_offset, records, producer=None):
    pid, epoch, seq = producer or (-1, -1, -1)
    builder = DefaultRecordBatchBuilder(
        magic=2, compression_type=CODECS[codec], is_transactional=False,
        producer_id=pid, producer_epoch=epoch, base_sequence=seq, batch_size=1 << 30)
    for r in records:
        builder.append(r["offset"] - base_offset, timestamp=r["timestamp"], key=r["key"], value=r["value"],
                       headers=r["headers"])
    data = bytearray(builder.build())
    # The base offset is outside the CRC: the producer leaves it 0 and the broker sets it, as here.
    struct.pack_into(">q", data, 0, base_offset)
    return bytes(data)


def write_partition(root, codec, seed):
    rng = random.Random(seed)
    directory = os.path.join(root, "t-%s-0" % codec)
    os.makedirs(directory)
    written = []
    offset = 0
    ts = 1_700_000_000_000
    segments = []
    for segment in range(3):
        base = offset
        chunks = []
        for b in range(12):
            records = []
            for _ in range(rng.randint(1, 25)):
                key = ("key-%02d" % rng.randrange(60)).encode()
                tombstone = rng.random() < 0.08
                value = None if tombstone else ("value-%d-%s" % (offset, "x" * rng.randrange(40))).encode()
                headers = [("h", b"%d" % offset)] if rng.random() < 0.3 else []
                ts += rng.randrange(1, 50)
                records.append({"offset": offset, "timestamp": ts, "key": key, "value": value, "headers": headers})
                offset += 1 + (1 if rng.random() < 0.05 else 0)  # a gap now and then
            producer = (1000 + segment, 3, b * 25) if b % 3 == 0 else None
            chunks.append(batch_bytes(codec, records[0]["offset"], records, producer))
            written.extend(records)
            offset += 2 if rng.random() < 0.1 else 0  # a gap between batches
        name = os.path.join(directory, "%020d.log" % base)
        with open(name, "wb") as f:
            f.write(b"".join(chunks))
        segments.append(base)
    with open(os.path.join(directory, "leader-epoch-checkpoint"), "w") as f:
        f.write("0\n1\n0 0\n")
    with open(os.path.join(directory, "partition.metadata"), "w") as f:
        f.write("version: 0\ntopic_id: AAAAAAAAAAAAAAAAAAAAAA\n")
    return {
        "dir": directory,
        "codec": codec,
        "segments": segments,
        "records": [
            {"offset": r["offset"], "timestamp": r["timestamp"], "key": r["key"].decode(),
             "value": None if r["value"] is None else r["value"].decode(),
             "headers": [[h, v.decode()] for h, v in r["headers"]]}
            for r in written
        ],
    }


def main():
    root = sys.argv[1]
    os.makedirs(root, exist_ok=True)
    out = []
    for i, codec in enumerate(CODECS):
        if codec == "snappy-raw":
            default_records.snappy_encode = lambda data: snappy.compress(bytes(data))
        out.append(write_partition(root, codec, i))
    with open(os.path.join(root, "cleaner-offset-checkpoint"), "w") as f:
        f.write("0\n1\nt-none 0 %d\n" % out[0]["segments"][1])
    json.dump(out, sys.stdout)


if __name__ == "__main__":
    main()
