import java.io.FileOutputStream;
import java.lang.reflect.*;
import java.nio.ByteBuffer;
import java.util.*;
import org.apache.kafka.common.Uuid;
import org.apache.kafka.common.compress.Compression;
import org.apache.kafka.common.metadata.MetadataRecordType;
import org.apache.kafka.common.protocol.*;
import org.apache.kafka.common.record.internal.*;
import org.apache.kafka.metadata.MetadataRecordSerde;
import org.apache.kafka.server.common.ApiMessageAndVersion;

/** Writes one metadata record of every type and version Kafka 4.4 defines, each scalar, string, bytes, uuid
 *  and list-of-scalars field set to a value that is not its default (where the version allows it). */
public class GenMetadata {
    static int n = 0;
    static Object value(Type t) {
        n++;
        if (t == int.class) return 100 + n;
        if (t == short.class) return (short) (n % 7 + 1);
        if (t == byte.class) return (byte) (n % 3 + 1);
        if (t == long.class) return 1700000000000L + n;
        if (t == boolean.class) return true;
        if (t == double.class) return n % 2 == 0 ? 12345678.9 : 0.25 * n;
        if (t == String.class) return "v" + n + "-é\"\\/\n\t\u0001";
        if (t == Uuid.class) return new Uuid(n, 3L * n + 1);
        if (t == byte[].class) return new byte[] {(byte) n, 2, (byte) 0xff};
        if (t instanceof ParameterizedType p && p.getRawType() == List.class) {
            Type e = p.getActualTypeArguments()[0];
            if (e == Integer.class) return new ArrayList<>(List.of(n, n + 1));
            if (e == Uuid.class) return new ArrayList<>(List.of(new Uuid(n, n)));
            if (e == String.class) return new ArrayList<>(List.of("a" + n, "b"));
        }
        return null;
    }
    static void fill(Object m) throws Exception {
        for (Method s : m.getClass().getMethods()) {
            if (!s.getName().startsWith("set") || s.getParameterCount() != 1 || s.getName().equals("setUnknownTaggedFields")) continue;
            Object v = value(s.getGenericParameterTypes()[0]);
            if (v != null) s.invoke(m, v);
        }
    }
    static byte[] bytes(ApiMessage m, short v) {
        ObjectSerializationCache cache = new ObjectSerializationCache();
        ApiMessageAndVersion amv = new ApiMessageAndVersion(m, v);
        int size = MetadataRecordSerde.INSTANCE.recordSize(amv, cache);
        ByteBufferAccessor w = new ByteBufferAccessor(ByteBuffer.allocate(size));
        MetadataRecordSerde.INSTANCE.write(amv, cache, w);
        return w.buffer().array();
    }
    public static void main(String[] args) throws Exception {
        List<SimpleRecord> records = new ArrayList<>();
        for (MetadataRecordType t : MetadataRecordType.values()) {
            for (short v = t.lowestSupportedVersion(); v <= t.highestSupportedVersion(); v++) {
                ApiMessage m = t.newMetadataRecord();
                fill(m);
                byte[] b;
                try { b = bytes(m, v); } catch (Exception e) { b = bytes(t.newMetadataRecord(), v); }
                records.add(new SimpleRecord(1700000000000L, (byte[]) null, b));
            }
        }
        // Frames and bodies that do not read.
        records.add(new SimpleRecord(1700000000000L, (byte[]) null, new byte[] {1, 6, 0, 0}));
        records.add(new SimpleRecord(1700000000000L, (byte[]) null, new byte[] {0, 2, 0}));
        records.add(new SimpleRecord(1700000000000L, (byte[]) null, new byte[] {1, 2, 0, 5, 'a'}));
        records.add(new SimpleRecord(1700000000000L, (byte[]) null, new byte[] {1, 20, 0, 0, 9, 9}));
        records.add(new SimpleRecord(1700000000000L, (byte[]) null, new byte[] {1, (byte) 0x80}));
        records.add(new SimpleRecord(1700000000000L, (byte[]) null, (byte[]) null));
        MemoryRecords mr = MemoryRecords.withRecords(Compression.NONE, records.toArray(new SimpleRecord[0]));
        ByteBuffer bb = mr.buffer();
        byte[] a = new byte[bb.remaining()]; bb.get(a);
        try (FileOutputStream out = new FileOutputStream(args[0])) { out.write(a); }
        System.err.println(records.size() + " records");
    }
}
