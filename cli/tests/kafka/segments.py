"""The batches of a partition directory's segments, read by kafka-python's record-batch reader with each CRC
checked: shared by the test readers."""
import os
import struct

from kafka.record.default_records import DefaultRecordBatch


def batches(directory):
    """Yields (segment name, byte position, raw bytes, DefaultRecordBatch) for every batch, in offset order."""
    for name in sorted(n for n in os.listdir(directory) if n.endswith(".log")):
        data = open(os.path.join(directory, name), "rb").read()
        pos = 0
        while pos < len(data):
            (length,) = struct.unpack_from(">i", data, pos + 8)
            raw = data[pos:pos + 12 + length]
            batch = DefaultRecordBatch(raw)
            if not batch.validate_crc():
                raise SystemExit("%s at byte %d: CRC mismatch" % (name, pos))
            yield name, pos, raw, batch
            pos += 12 + length
