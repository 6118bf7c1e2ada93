"""A read_committed consumer's view of a partition directory, from kafka-python's record-batch reader (CRCs
checked) and the partition's .txnindex files, as a broker serves a read_committed fetch: records below the
last stable offset given, control batches skipped, and a transactional batch skipped when a .txnindex entry
of its producer spans its base offset (the aborted transactions a fetch response lists). Also every offset
any data batch still holds, for checks that no aborted record is left.

usage: read_committed.py DIR LSO
"""
import json
import os
import struct
import sys

import segments


def aborted_entries(directory):
    entries = []
    for name in sorted(n for n in os.listdir(directory) if n.endswith(".txnindex")):
        data = open(os.path.join(directory, name), "rb").read()
        if len(data) % 34:
            raise SystemExit("%s: not whole 34-byte entries" % name)
        for pos in range(0, len(data), 34):
            version, pid, first, last, _lso = struct.unpack_from(">hqqqq", data, pos)
            if version != 0:
                raise SystemExit("%s: entry version %d" % (name, version))
            entries.append((pid, first, last))
    return entries


def main():
    directory, lso = sys.argv[1], int(sys.argv[2])
    aborted = aborted_entries(directory)
    committed, all_data = [], []
    for _name, _pos, _raw, batch in segments.batches(directory):
        if batch.is_control_batch:
            continue
        skipped = batch.is_transactional and any(
            p == batch.producer_id and first <= batch.base_offset <= last for p, first, last in aborted)
        for r in batch:
            record = [r.offset, None if r.key is None else r.key.decode(),
                      None if r.value is None else r.value.decode()]
            all_data.append(record)
            if not skipped and r.offset < lso:
                committed.append(record)
    json.dump({"committed": committed, "data": all_data, "aborted": aborted}, sys.stdout)


if __name__ == "__main__":
    main()
