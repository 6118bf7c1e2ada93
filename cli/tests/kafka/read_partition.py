"""An independent reader: every batch of every segment of a partition directory, read by kafka-python's
record-batch reader with its CRC checked, printed as JSON (batches with their attributes and records).

usage: read_partition.py DIR
"""
import json
import os
import struct
import sys

import segments


def main():
    directory = sys.argv[1]
    batches = []
    for name, _pos, raw, batch in segments.batches(directory):
        (attributes,) = struct.unpack_from(">h", raw, 21)
        (base_timestamp,) = struct.unpack_from(">q", raw, 27)
        records = []
        for r in batch:
            records.append({
                "offset": r.offset, "timestamp": r.timestamp,
                "key": None if r.key is None else r.key.decode(),
                "value": None if r.value is None else r.value.decode(),
                "headers": [[h, v.decode()] for h, v in r.headers],
            })
        batches.append({
            "segment": name, "base_offset": batch.base_offset, "last_offset": batch.last_offset,
            "attributes": attributes, "base_timestamp": base_timestamp, "producer_id": batch.producer_id,
            "records": records,
        })
    # Kafka's indexes: 8-byte and 12-byte entries.
    indexes = {n: os.path.getsize(os.path.join(directory, n)) for n in os.listdir(directory)
               if n.endswith(".index") or n.endswith(".timeindex")}
    json.dump({"batches": batches, "indexes": indexes}, sys.stdout)


if __name__ == "__main__":
    main()
