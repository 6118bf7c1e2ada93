import java.io.FileOutputStream;
import java.nio.ByteBuffer;
import org.apache.kafka.common.compress.Compression;
import org.apache.kafka.common.record.TimestampType;
import org.apache.kafka.common.record.internal.*;

public class GenLegacy {
    static void add(FileOutputStream out, byte magic, Compression c, TimestampType t, long base, long logAppend, int n, String tag) throws Exception {
        ByteBuffer buf = ByteBuffer.allocate(1 << 16);
        MemoryRecordsBuilder b = MemoryRecords.builder(buf, magic, c, t, base, logAppend);
        for (int i = 0; i < n; i++) {
            byte[] k = (i % 3 == 2) ? null : (tag + "-k" + i).getBytes("UTF-8");
            byte[] v = (i % 4 == 3) ? null : (tag + "-value-" + i + "-é").getBytes("UTF-8");
            b.append(1700000000000L + i * 7, k, v);
        }
        MemoryRecords r = b.build();
        ByteBuffer bb = r.buffer();
        byte[] a = new byte[bb.remaining()]; bb.get(a); out.write(a);
    }
    public static void main(String[] args) throws Exception {
        try (FileOutputStream out = new FileOutputStream(args[0])) {
            add(out, (byte) 1, Compression.gzip().build(), TimestampType.CREATE_TIME, 100, -1, 4, "g1");
            add(out, (byte) 1, Compression.snappy().build(), TimestampType.CREATE_TIME, 104, -1, 3, "s1");
            add(out, (byte) 1, Compression.lz4().build(), TimestampType.CREATE_TIME, 107, -1, 5, "l1");
            add(out, (byte) 1, Compression.gzip().build(), TimestampType.LOG_APPEND_TIME, 112, 1700000009999L, 3, "a1");
            add(out, (byte) 0, Compression.gzip().build(), TimestampType.NO_TIMESTAMP_TYPE, 115, -1, 3, "g0");
            add(out, (byte) 0, Compression.snappy().build(), TimestampType.NO_TIMESTAMP_TYPE, 118, -1, 2, "s0");
            add(out, (byte) 0, Compression.lz4().build(), TimestampType.NO_TIMESTAMP_TYPE, 120, -1, 3, "l0");
            add(out, (byte) 1, Compression.NONE, TimestampType.CREATE_TIME, 130, -1, 1, "n1");
        }
    }
}
