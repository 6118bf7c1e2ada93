import sys, os, struct, glob
def varint(b, i):
    shift = 0; r = 0
    while True:
        x = b[i]; i += 1
        r |= (x & 0x7f) << shift; shift += 7
        if not x & 0x80: break
    return (r >> 1) ^ -(r & 1), i
vals = []
for f in sorted(glob.glob(sys.argv[1] + "/*.log")) + sorted(glob.glob(sys.argv[1] + "/*.checkpoint")):
    b = open(f, 'rb').read(); p = 0
    while p + 61 <= len(b):
        ln = struct.unpack('>i', b[p+8:p+12])[0]
        attrs = struct.unpack('>h', b[p+21:p+23])[0]
        n = struct.unpack('>i', b[p+57:p+61])[0]
        body = b[p+61:p+12+ln]
        if attrs & 7 == 0:
            i = 0
            for _ in range(n):
                l, i = varint(body, i); end = i + l
                i += 1; _, i = varint(body, i); _, i = varint(body, i)
                kl, i = varint(body, i); i += max(kl, 0)
                vl, i = varint(body, i)
                if vl >= 0: vals.append(body[i:i+vl])
                i = end
        p += 12 + ln
out = sys.argv[2]; os.makedirs(out, exist_ok=True)
seen = set()
for v in vals:
    if v in seen: continue
    seen.add(v)
    open(os.path.join(out, "rec-%03d" % len(seen)), 'wb').write(b'\x08' + v)
open(os.path.join(out, "all"), 'wb').write(bytes([0x50]) + b'\xfe\xfd'.join(vals))
open(os.path.join(out, "all-zstd"), 'wb').write(bytes([0x54]) + b'\xfe\xfd'.join(vals))
print(len(vals), len(seen))
