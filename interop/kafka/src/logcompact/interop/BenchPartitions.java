package logcompact.interop;

import java.nio.charset.StandardCharsets;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Random;
import java.util.Set;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.AlterConfigOp;
import org.apache.kafka.clients.admin.ConfigEntry;
import org.apache.kafka.clients.admin.ListOffsetsResult;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.KafkaFuture;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.serialization.ByteArraySerializer;

/**
 * Partitions for benchmarks, written by the broker from its Java clients as an application would: a compacted
 * topic a codec ({@code bench-<codec>}, one partition, the default idempotent producer with its default 16 KiB
 * batches), an exactly-once changelog ({@code bench-txn}: one transactional producer, transactions of 500
 * records, one in 20 aborted) and {@code __consumer_offsets} (groups committing the offsets of 20 partitions at a
 * time through the Admin client). Every topic gets the same {@code --records} records over {@code --keys} keys
 * (16-byte keys, {@code --value-bytes} values of words, 1% tombstones), from the same seed, so that a compaction
 * of any of them keeps the same records. The node's cleaner is off: the partitions stay dirty. Prints a JSON
 * summary: each partition's name, codec, records and end offset.
 */
public final class BenchPartitions {
    static final String[] WORDS = {
        "alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel", "india", "juliet", "kilo", "lima",
        "mike", "november", "oscar", "papa", "quebec", "romeo", "sierra", "tango", "uniform", "victor", "whiskey"};

    public static void main(String[] argv) {
        Args.main("BenchPartitions", () -> new BenchPartitions(argv).run());
    }

    final Args args;
    final String bootstrap;
    final long seed;
    final int records;
    final int keys;
    final int valueBytes;
    final int segmentBytes;
    final String segmentConfig;
    final List<String> codecs;
    final ConcurrentLinkedQueue<Throwable> sendErrors = new ConcurrentLinkedQueue<>();

    BenchPartitions(String[] argv) {
        args = new Args("BenchPartitions", argv,
            Set.of("bootstrap", "seed", "records", "keys", "value-bytes", "segment-bytes", "segment-config",
                "codecs"),
            Set.of());
        bootstrap = args.required("bootstrap");
        seed = args.getLong("seed", 1L);
        records = (int) args.getLong("records", 200_000);
        keys = (int) args.getLong("keys", 20_000);
        valueBytes = (int) args.getLong("value-bytes", 100);
        segmentBytes = (int) args.getLong("segment-bytes", 16 << 20);
        segmentConfig = args.get("segment-config", "segment.bytes");
        codecs = List.of(args.get("codecs", "none,lz4,gzip,snappy,zstd").split(","));
        if (records <= 0 || keys <= 0 || valueBytes < 0) throw new Args.Fail("--records and --keys must be positive");
    }

    static byte[] key(int k) {
        return String.format("bench-key-%06d", k % 1_000_000).getBytes(StandardCharsets.UTF_8);
    }

    /** The i-th record's key and value (null: a tombstone), the same for every topic. */
    static final class Source {
        final Random r;
        final int keys;
        final int valueBytes;
        Source(long seed, int keys, int valueBytes) {
            this.r = new Random(seed);
            this.keys = keys;
            this.valueBytes = valueBytes;
        }
        byte[] k;
        byte[] v;
        void next() {
            k = key(r.nextInt(keys));
            if (r.nextInt(100) == 0) {
                v = null;
                return;
            }
            StringBuilder sb = new StringBuilder(valueBytes + 16);
            while (sb.length() < valueBytes) sb.append(WORDS[r.nextInt(WORDS.length)]).append(' ');
            sb.setLength(valueBytes);
            v = sb.toString().getBytes(StandardCharsets.UTF_8);
        }
    }

    Properties producerProps(String codec, String transactionalId) {
        Properties p = new Properties();
        p.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class.getName());
        p.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class.getName());
        p.put(ProducerConfig.COMPRESSION_TYPE_CONFIG, codec);
        p.put(ProducerConfig.LINGER_MS_CONFIG, "5");
        p.put(ProducerConfig.CLIENT_ID_CONFIG, "bench-" + codec + (transactionalId != null ? "-txn" : ""));
        if (transactionalId != null) p.put(ProducerConfig.TRANSACTIONAL_ID_CONFIG, transactionalId);
        return p;
    }

    /** Sends the next record; the first one and waits for it, so that nothing else is in flight while a partition
     *  just created gets its leader (a first batch retried behind later ones that got in would fail for good with
     *  OUT_OF_ORDER_SEQUENCE_NUMBER, as the broker remembers only a producer's last five batches). */
    void send(KafkaProducer<byte[], byte[]> producer, String topic, Source s, boolean first) throws Exception {
        var sent = producer.send(new ProducerRecord<>(topic, 0, s.k, s.v), (md, e) -> {
            if (e != null) sendErrors.add(e);
        });
        if (first) sent.get(120, TimeUnit.SECONDS);
    }

    void checkSendErrors() {
        Throwable t = sendErrors.peek();
        if (t != null) throw new RuntimeException("a send failed: " + t, t);
    }

    void producePlain(String topic, String codec) throws Exception {
        Source s = new Source(seed, keys, valueBytes);
        try (KafkaProducer<byte[], byte[]> p = new KafkaProducer<>(producerProps(codec, null))) {
            for (int i = 0; i < records; i++) {
                s.next();
                send(p, topic, s, i == 0);
            }
            p.flush();
        }
        checkSendErrors();
    }

    /** Transactions of 500 records; one in 20 aborted (its records flushed first, so that they reach the log). */
    int[] produceTransactional(String topic) throws Exception {
        Source s = new Source(seed, keys, valueBytes);
        int committed = 0, aborted = 0;
        try (KafkaProducer<byte[], byte[]> p = new KafkaProducer<>(producerProps("none", "bench-txn"))) {
            p.initTransactions();
            int i = 0;
            for (int t = 0; i < records; t++) {
                p.beginTransaction();
                for (int j = 0; j < 500 && i < records; j++, i++) {
                    s.next();
                    send(p, topic, s, i == 0);
                }
                if (t % 20 == 19) {
                    p.flush();
                    p.abortTransaction();
                    aborted++;
                } else {
                    p.commitTransaction();
                    committed++;
                }
                checkSendErrors();
            }
        }
        return new int[] {committed, aborted};
    }

    /** Offsets of 20 partitions of {@code source} committed by groups in turn, 64 commits in flight, until the
     *  commits hold about {@code --records} records. Returns the commits. */
    int commitOffsets(Admin admin, String source) throws Exception {
        int groups = Math.max(1, keys / 200);
        Random r = new Random(seed ^ 0x0ff5e75L);
        ArrayDeque<KafkaFuture<Void>> inFlight = new ArrayDeque<>();
        int commits = records / 20;
        for (int c = 0; c < commits; c++) {
            Map<TopicPartition, OffsetAndMetadata> m = new HashMap<>();
            for (int p = 0; p < 20; p++) m.put(new TopicPartition(source, p), new OffsetAndMetadata(c + r.nextInt(1000)));
            String group = String.format("bench-group-%05d", r.nextInt(groups));
            inFlight.add(admin.alterConsumerGroupOffsets(group, m).all());
            if (inFlight.size() >= 64) inFlight.poll().get(60, TimeUnit.SECONDS);
        }
        for (KafkaFuture<Void> f : inFlight) f.get(60, TimeUnit.SECONDS);
        return commits;
    }

    void run() throws Exception {
        Properties ap = new Properties();
        ap.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        ap.put(AdminClientConfig.CLIENT_ID_CONFIG, "bench-admin");
        Map<String, Object> out = new LinkedHashMap<>();
        try (Admin admin = Admin.create(ap)) {
            Map<String, String> compacted = Map.of("cleanup.policy", "compact", segmentConfig, "" + segmentBytes,
                "min.compaction.lag.ms", "0");
            List<NewTopic> nts = new ArrayList<>();
            Map<String, String> topics = new LinkedHashMap<>();
            for (String c : codecs) topics.put("bench-" + c, c);
            topics.put("bench-txn", "none");
            for (String t : topics.keySet()) nts.add(new NewTopic(t, 1, (short) 1).configs(compacted));
            String source = "bench-offsets-source";
            nts.add(new NewTopic(source, 20, (short) 1));
            try {
                admin.createTopics(nts).all().get(60, TimeUnit.SECONDS);
            } catch (ExecutionException e) {
                throw new Args.Fail("creating the topics failed: " + e.getCause(), 1);
            }
            int[] txns = null;
            for (Map.Entry<String, String> t : topics.entrySet()) {
                long s = System.nanoTime();
                if (t.getKey().equals("bench-txn")) txns = produceTransactional(t.getKey());
                else producePlain(t.getKey(), t.getValue());
                log("produced " + t.getKey() + " in " + (System.nanoTime() - s) / 1_000_000 + " ms");
            }
            // The first commit creates __consumer_offsets; then its segment size is set as the others'.
            admin.alterConsumerGroupOffsets("bench-group-first", Map.of(new TopicPartition(source, 0),
                new OffsetAndMetadata(0))).all().get(60, TimeUnit.SECONDS);
            ConfigResource offsetsTopic = new ConfigResource(ConfigResource.Type.TOPIC, "__consumer_offsets");
            admin.incrementalAlterConfigs(Map.of(offsetsTopic, List.of(new AlterConfigOp(
                new ConfigEntry(segmentConfig, "" + segmentBytes), AlterConfigOp.OpType.SET))))
                .all().get(30, TimeUnit.SECONDS);
            long s = System.nanoTime();
            int commits = commitOffsets(admin, source);
            log("committed " + commits + " offsets in " + (System.nanoTime() - s) / 1_000_000 + " ms");

            Map<TopicPartition, OffsetSpec> latest = new HashMap<>();
            for (String t : topics.keySet()) latest.put(new TopicPartition(t, 0), OffsetSpec.latest());
            latest.put(new TopicPartition("__consumer_offsets", 0), OffsetSpec.latest());
            Map<TopicPartition, ListOffsetsResult.ListOffsetsResultInfo> end =
                admin.listOffsets(latest).all().get(30, TimeUnit.SECONDS);
            List<Object> parts = new ArrayList<>();
            for (Map.Entry<String, String> t : topics.entrySet()) {
                Map<String, Object> po = new LinkedHashMap<>();
                po.put("partition", t.getKey() + "-0");
                po.put("shape", t.getKey().equals("bench-txn") ? "transactions" : "plain");
                po.put("codec", t.getValue());
                po.put("records", records);
                po.put("keys", keys);
                po.put("end_offset", end.get(new TopicPartition(t.getKey(), 0)).offset());
                parts.add(po);
            }
            Map<String, Object> po = new LinkedHashMap<>();
            po.put("partition", "__consumer_offsets-0");
            po.put("shape", "consumer_offsets");
            po.put("codec", "none");
            po.put("records", commits * 20);
            po.put("keys", Math.max(1, keys / 200) * 21);
            po.put("end_offset", end.get(new TopicPartition("__consumer_offsets", 0)).offset());
            parts.add(po);
            out.put("partitions", parts);
            if (txns != null) out.put("transactions", Map.of("committed", txns[0], "aborted", txns[1]));
        }
        System.out.println(Json.write(out));
        System.out.flush();
    }

    static void log(String s) {
        System.err.println("BenchPartitions: " + s);
    }
}
