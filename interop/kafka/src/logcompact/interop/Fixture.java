package logcompact.interop;

import java.io.PrintWriter;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Paths;
import java.security.MessageDigest;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Random;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.AlterConfigOp;
import org.apache.kafka.clients.admin.ConfigEntry;
import org.apache.kafka.clients.admin.DescribeProducersResult;
import org.apache.kafka.clients.admin.ListOffsetsResult;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.clients.admin.ProducerState;
import org.apache.kafka.clients.admin.TopicDescription;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.IsolationLevel;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.errors.TransactionAbortedException;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.header.internals.RecordHeader;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;

/**
 * Writes a deterministic fixture into a running broker and prints a JSON summary on stdout.
 *
 * Profiles:
 *   main  creates the topics (compacted, one per codec, a transactional one, a delete-policy one), produces,
 *         commits 20 consumer groups (and deletes two), alters one topic config.
 *   hang  begins a transaction on the transactional topic, sends, flushes, prints the open transaction and halts
 *         the JVM without closing the producer: the transaction stays open in the log.
 */
public final class Fixture {
    static final String TXN_TOPIC = "txn";
    static final String[] WORDS = {
        "alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel", "india", "juliet", "kilo", "lima",
        "mike", "november", "oscar", "papa", "quebec", "romeo", "sierra", "tango", "uniform", "victor", "whiskey",
        "xray", "yankee", "zulu", "offset", "segment", "cleaner", "compaction", "tombstone", "marker", "batch",
        "record", "header", "producer", "consumer", "partition", "broker", "leader", "epoch", "sequence", "index"};

    public static void main(String[] argv) {
        Args.main("Fixture", () -> new Fixture(argv).run());
    }

    final Args args;
    final String bootstrap;
    final long seed;
    final int segmentBytes;
    final String segmentConfig;
    final double scale;
    final int txnTimeoutMs;

    Fixture(String[] argv) {
        args = new Args("Fixture", argv,
            Set.of("bootstrap", "profile", "seed", "segment-bytes", "segment-config", "expect-out", "scale",
                "txn-timeout-ms"),
            Set.of());
        bootstrap = args.required("bootstrap");
        seed = args.getLong("seed", 20240601L);
        segmentBytes = (int) args.getLong("segment-bytes", 65536);
        segmentConfig = args.get("segment-config", "internal.segment.bytes");
        scale = Double.parseDouble(args.get("scale", "1.0"));
        txnTimeoutMs = (int) args.getLong("txn-timeout-ms", 86_400_000L);
    }

    void run() throws Exception {
        String profile = args.required("profile");
        switch (profile) {
            case "main": runMain(); break;
            case "hang": runHang(); break;
            default: throw new Args.Fail("unknown --profile '" + profile + "' (main, hang)");
        }
    }

    // ---------------------------------------------------------------- topics

    enum Kind { PLAIN, IDEMPOTENT, TRANSACTIONAL, UNKEYED }

    static final class TopicSpec {
        final String name; final int partitions; final String codec; final Kind kind; final boolean headers;
        final int records; final int keys; final double tombstones; final int batchSize; final int lingerMs;
        final Map<String, String> configs = new TreeMap<>();
        TopicSpec(String name, int partitions, String codec, Kind kind, boolean headers, int records, int keys,
                  double tombstones, int batchSize, int lingerMs) {
            this.name = name; this.partitions = partitions; this.codec = codec; this.kind = kind;
            this.headers = headers; this.records = records; this.keys = keys; this.tombstones = tombstones;
            this.batchSize = batchSize; this.lingerMs = lingerMs;
        }
        TopicSpec cfg(String k, String v) { configs.put(k, v); return this; }
    }

    List<TopicSpec> mainTopics() {
        int n = (int) Math.max(50, Math.round(3000 * scale));
        List<TopicSpec> l = new ArrayList<>();
        l.add(compacted(new TopicSpec("codec-none", 2, "none", Kind.PLAIN, true, n, 600, 0.08, 4096, 0))
            .cfg("delete.retention.ms", "60000").cfg("min.cleanable.dirty.ratio", "0.1"));
        l.add(compacted(new TopicSpec("codec-gzip", 1, "gzip", Kind.IDEMPOTENT, false, n, 600, 0.08, 16384, 5))
            .cfg("delete.retention.ms", "1000").cfg("min.cleanable.dirty.ratio", "0.25"));
        l.add(compacted(new TopicSpec("codec-snappy", 1, "snappy", Kind.PLAIN, true, n, 600, 0.08, 16384, 5))
            .cfg("delete.retention.ms", "3600000").cfg("min.compaction.lag.ms", "600000")
            .cfg("min.cleanable.dirty.ratio", "0.2"));
        l.add(compacted(new TopicSpec("codec-lz4", 1, "lz4", Kind.IDEMPOTENT, true, n, 600, 0.08, 8192, 5))
            .cfg("min.cleanable.dirty.ratio", "0.05"));
        l.add(compacted(new TopicSpec("codec-zstd", 2, "zstd", Kind.IDEMPOTENT, false, n, 600, 0.08, 16384, 5))
            .cfg("delete.retention.ms", "120000").cfg("min.cleanable.dirty.ratio", "0.01"));
        l.add(compacted(new TopicSpec(TXN_TOPIC, 2, "lz4", Kind.TRANSACTIONAL, true, n, 300, 0.10, 16384, 5))
            .cfg("delete.retention.ms", "5000").cfg("min.cleanable.dirty.ratio", "0.1"));
        TopicSpec del = new TopicSpec("unkeyed-delete", 1, "none", Kind.UNKEYED, true, n / 2, 0, 0, 8192, 0);
        del.cfg("cleanup.policy", "delete").cfg("retention.ms", "-1").cfg(segmentConfig, "" + segmentBytes);
        l.add(del);
        return l;
    }

    TopicSpec compacted(TopicSpec t) {
        return t.cfg("cleanup.policy", "compact").cfg(segmentConfig, "" + segmentBytes)
            .cfg("min.compaction.lag.ms", "0");
    }

    // ---------------------------------------------------------------- expectations

    /** One record the log is expected to hold as committed data. */
    static final class Rec {
        final int partition; final byte[] key; final byte[] value; final Header[] headers;
        volatile long offset = -1; volatile long timestamp = -1;
        Rec(int partition, byte[] key, byte[] value, Header[] headers) {
            this.partition = partition; this.key = key; this.value = value; this.headers = headers;
        }
    }

    static final class PartStats {
        long sent, tombstones, aborted, withHeaders;
        final List<Rec> committed = new ArrayList<>();
    }

    final Map<String, PartStats[]> stats = new LinkedHashMap<>();
    final ConcurrentLinkedQueue<Throwable> sendErrors = new ConcurrentLinkedQueue<>();

    PartStats ps(String topic, int p) { return stats.get(topic)[p]; }

    // ---------------------------------------------------------------- data

    static byte[] key(int k) { return String.format("key-%05d", k).getBytes(StandardCharsets.UTF_8); }

    static byte[] value(Random r, String topic, int k, int i) {
        StringBuilder sb = new StringBuilder();
        sb.append(topic).append('/').append(k).append('/').append(i).append(':');
        int target = 40 + r.nextInt(360);
        while (sb.length() < target) {
            sb.append(' ');
            if (r.nextInt(4) == 0) sb.append(Long.toHexString(r.nextLong()));
            else sb.append(WORDS[r.nextInt(WORDS.length)]);
        }
        return sb.toString().getBytes(StandardCharsets.UTF_8);
    }

    static Header[] headers(Random r, int i) {
        if (i % 5 != 0) return null;
        List<Header> h = new ArrayList<>();
        h.add(new RecordHeader("trace", ("t-" + i).getBytes(StandardCharsets.UTF_8)));
        h.add(new RecordHeader("src", "fixture".getBytes(StandardCharsets.UTF_8)));
        if (i % 25 == 0) {
            h.add(new RecordHeader("trace", ("again-" + r.nextInt(1000)).getBytes(StandardCharsets.UTF_8)));
            h.add(new RecordHeader("empty", null));
        }
        return h.toArray(new Header[0]);
    }

    Properties producerProps(String codec, Kind kind, int batchSize, int lingerMs, String txnId) {
        Properties p = new Properties();
        p.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class.getName());
        p.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class.getName());
        p.put(ProducerConfig.COMPRESSION_TYPE_CONFIG, codec);
        p.put(ProducerConfig.BATCH_SIZE_CONFIG, "" + batchSize);
        p.put(ProducerConfig.LINGER_MS_CONFIG, "" + lingerMs);
        p.put(ProducerConfig.CLIENT_ID_CONFIG, "fixture-" + (txnId != null ? txnId : codec + "-" + kind));
        if (kind == Kind.PLAIN || kind == Kind.UNKEYED) {
            p.put(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, "false");
            p.put(ProducerConfig.ACKS_CONFIG, "1");
            p.put(ProducerConfig.MAX_IN_FLIGHT_REQUESTS_PER_CONNECTION, "1");
        } else {
            p.put(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, "true");
            p.put(ProducerConfig.ACKS_CONFIG, "all");
        }
        if (txnId != null) {
            p.put(ProducerConfig.TRANSACTIONAL_ID_CONFIG, txnId);
            p.put(ProducerConfig.TRANSACTION_TIMEOUT_CONFIG, "" + txnTimeoutMs);
        }
        return p;
    }

    void send(KafkaProducer<byte[], byte[]> producer, String topic, Rec rec, boolean keyed) {
        ProducerRecord<byte[], byte[]> pr = new ProducerRecord<>(topic, rec.partition, null, keyed ? rec.key : null,
            rec.value, rec.headers == null ? null : Arrays.asList(rec.headers));
        producer.send(pr, (RecordMetadata md, Exception e) -> {
            if (e != null) {
                if (!(e instanceof TransactionAbortedException)) sendErrors.add(e);
            } else {
                rec.offset = md.offset();
                rec.timestamp = md.timestamp();
            }
        });
    }

    void checkSendErrors() {
        Throwable t = sendErrors.peek();
        if (t != null) throw new RuntimeException("a send failed: " + t, t);
    }

    Rec newRec(Random r, TopicSpec t, int i, boolean keyed) {
        int k = keyed ? r.nextInt(t.keys) : -1;
        int partition = keyed ? Math.floorMod(Arrays.hashCode(key(k)), t.partitions) : r.nextInt(t.partitions);
        boolean tomb = keyed && r.nextDouble() < t.tombstones;
        byte[] v = tomb ? null : value(r, t.name, k, i);
        Header[] h = t.headers ? headers(r, i) : null;
        PartStats s = ps(t.name, partition);
        s.sent++;
        if (tomb) s.tombstones++;
        if (h != null) s.withHeaders++;
        return new Rec(partition, keyed ? key(k) : null, v, h);
    }

    void produceSimple(TopicSpec t, Random r) {
        boolean keyed = t.kind != Kind.UNKEYED;
        try (KafkaProducer<byte[], byte[]> producer =
                 new KafkaProducer<>(producerProps(t.codec, t.kind, t.batchSize, t.lingerMs, null))) {
            for (int i = 0; i < t.records; i++) {
                Rec rec = newRec(r, t, i, keyed);
                ps(t.name, rec.partition).committed.add(rec);
                send(producer, t.name, rec, keyed);
            }
            producer.flush();
        }
        checkSendErrors();
    }

    int txCommitted, txAborted;

    /** Two transactional producers with interleaved (overlapping) transactions, commits and aborts, plus
     *  non-transactional idempotent writes between them, all on the same keys. */
    void produceTransactional(TopicSpec t, Random r) {
        String[] ids = {"fixture-txn-a", "fixture-txn-b"};
        List<KafkaProducer<byte[], byte[]>> txp = new ArrayList<>();
        try (KafkaProducer<byte[], byte[]> plain =
                 new KafkaProducer<>(producerProps(t.codec, Kind.IDEMPOTENT, t.batchSize, t.lingerMs, null))) {
            for (String id : ids) {
                KafkaProducer<byte[], byte[]> p =
                    new KafkaProducer<>(producerProps(t.codec, Kind.TRANSACTIONAL, t.batchSize, t.lingerMs, id));
                p.initTransactions();
                txp.add(p);
            }
            int i = 0;
            while (i < t.records) {
                List<List<Rec>> pending = new ArrayList<>();
                for (KafkaProducer<byte[], byte[]> p : txp) {
                    p.beginTransaction();
                    pending.add(new ArrayList<>());
                }
                int sends = 5 + r.nextInt(40);
                for (int j = 0; j < sends && i < t.records; j++, i++) {
                    int which = r.nextInt(txp.size() + 1); // the last one: non-transactional
                    Rec rec = newRec(r, t, i, true);
                    if (which == txp.size()) {
                        ps(t.name, rec.partition).committed.add(rec);
                        send(plain, t.name, rec, true);
                        if (r.nextInt(3) == 0) plain.flush();
                    } else {
                        pending.get(which).add(rec);
                        send(txp.get(which), t.name, rec, true);
                        if (r.nextInt(6) == 0) txp.get(which).flush();
                    }
                }
                List<Integer> order = new ArrayList<>(List.of(0, 1));
                Collections.shuffle(order, r);
                for (int w : order) {
                    KafkaProducer<byte[], byte[]> p = txp.get(w);
                    if (r.nextDouble() < 0.3) {
                        p.flush(); // so the aborted batches reach the log
                        p.abortTransaction();
                        txAborted++;
                        for (Rec rec : pending.get(w)) ps(t.name, rec.partition).aborted++;
                    } else {
                        p.commitTransaction();
                        txCommitted++;
                        for (Rec rec : pending.get(w)) ps(t.name, rec.partition).committed.add(rec);
                    }
                }
                plain.flush();
                checkSendErrors();
            }
        } finally {
            for (KafkaProducer<byte[], byte[]> p : txp) p.close();
        }
        checkSendErrors();
    }

    // ---------------------------------------------------------------- main profile

    Admin admin() {
        Properties p = new Properties();
        p.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(AdminClientConfig.CLIENT_ID_CONFIG, "fixture-admin");
        return Admin.create(p);
    }

    void runMain() throws Exception {
        long t0 = System.nanoTime();
        List<TopicSpec> topics = mainTopics();
        Random root = new Random(seed);
        Map<String, Object> out = new LinkedHashMap<>();
        out.put("profile", "main");
        out.put("seed", seed);
        out.put("segment_config", segmentConfig);
        out.put("segment_bytes", segmentBytes);
        try (Admin admin = admin()) {
            List<NewTopic> nts = new ArrayList<>();
            for (TopicSpec t : topics) {
                nts.add(new NewTopic(t.name, t.partitions, (short) 1).configs(t.configs));
                PartStats[] a = new PartStats[t.partitions];
                for (int i = 0; i < a.length; i++) a[i] = new PartStats();
                stats.put(t.name, a);
            }
            try {
                admin.createTopics(nts).all().get(60, TimeUnit.SECONDS);
            } catch (ExecutionException e) {
                throw new Args.Fail("creating the topics failed: " + e.getCause(), 1);
            }
            log("created " + nts.size() + " topics");
            out.put("internal_topics", prepareInternalTopics(admin));
            for (TopicSpec t : topics) {
                Random r = new Random(root.nextLong());
                long s = System.nanoTime();
                if (t.kind == Kind.TRANSACTIONAL) produceTransactional(t, r);
                else produceSimple(t, r);
                log("produced " + t.name + " in " + (System.nanoTime() - s) / 1_000_000 + " ms");
            }
            // A config change after creation: one more ConfigRecord in the metadata log.
            ConfigResource gz = new ConfigResource(ConfigResource.Type.TOPIC, "codec-gzip");
            admin.incrementalAlterConfigs(Map.of(gz, List.of(new AlterConfigOp(
                new ConfigEntry("min.cleanable.dirty.ratio", "0.3"), AlterConfigOp.OpType.SET))))
                .all().get(30, TimeUnit.SECONDS);
            for (TopicSpec t : topics) if (t.name.equals("codec-gzip")) t.configs.put("min.cleanable.dirty.ratio", "0.3");

            Map<String, Object> groups = commitGroups(admin, topics, new Random(root.nextLong()));

            Map<String, TopicDescription> desc = admin.describeTopics(stats.keySet()).allTopicNames()
                .get(30, TimeUnit.SECONDS);
            Map<TopicPartition, OffsetSpec> latest = new HashMap<>();
            for (TopicSpec t : topics)
                for (int p = 0; p < t.partitions; p++) latest.put(new TopicPartition(t.name, p), OffsetSpec.latest());
            Map<TopicPartition, ListOffsetsResult.ListOffsetsResultInfo> hw =
                admin.listOffsets(latest).all().get(30, TimeUnit.SECONDS);
            Map<TopicPartition, ListOffsetsResult.ListOffsetsResultInfo> lso = admin.listOffsets(latest,
                new org.apache.kafka.clients.admin.ListOffsetsOptions(IsolationLevel.READ_COMMITTED))
                .all().get(30, TimeUnit.SECONDS);

            List<Object> tl = new ArrayList<>();
            PrintWriter expect = args.has("expect-out")
                ? new PrintWriter(Files.newBufferedWriter(Paths.get(args.get("expect-out", null)))) : null;
            for (TopicSpec t : topics) {
                Map<String, Object> to = new LinkedHashMap<>();
                to.put("name", t.name);
                to.put("topic_id", desc.get(t.name).topicId().toString());
                to.put("partitions", t.partitions);
                to.put("compression", t.codec);
                to.put("producer", t.kind.name().toLowerCase());
                to.put("headers", t.headers);
                to.put("configs", t.configs);
                List<Object> pl = new ArrayList<>();
                for (int p = 0; p < t.partitions; p++) {
                    PartStats s = ps(t.name, p);
                    TopicPartition tp = new TopicPartition(t.name, p);
                    Map<String, Object> po = new LinkedHashMap<>();
                    po.put("partition", p);
                    po.put("records_sent", s.sent);
                    po.put("tombstones_sent", s.tombstones);
                    po.put("records_with_headers", s.withHeaders);
                    po.put("aborted_records", s.aborted);
                    po.put("committed_records", (long) s.committed.size());
                    po.put("end_offset", hw.get(tp).offset());
                    po.put("last_stable_offset", lso.get(tp).offset());
                    if (t.kind != Kind.UNKEYED) latestPerKey(t.name, p, s.committed, po, expect);
                    pl.add(po);
                }
                to.put("partition_stats", pl);
                tl.add(to);
            }
            if (expect != null) expect.close();
            out.put("topics", tl);
            Map<String, Object> tx = new LinkedHashMap<>();
            tx.put("transactional_ids", List.of("fixture-txn-a", "fixture-txn-b"));
            tx.put("committed", txCommitted);
            tx.put("aborted", txAborted);
            out.put("transactions", tx);
            out.put("groups", groups);
        }
        out.put("elapsed_ms", (System.nanoTime() - t0) / 1_000_000);
        System.out.println(Json.write(out));
    }

    /** Makes the group and transaction coordinators create __consumer_offsets and __transaction_state, then gives
     *  them small segments with the topic setting `internal.segment.bytes` (the broker settings
     *  offsets.topic.segment.bytes and transaction.state.log.segment.bytes become the topics' segment.bytes, which
     *  refuses values below 1 MiB: auto-creation then fails in a loop). */
    Map<String, Object> prepareInternalTopics(Admin admin) throws Exception {
        try {
            admin.listConsumerGroupOffsets("fixture-group-00").partitionsToOffsetAndMetadata().get(60, TimeUnit.SECONDS);
        } catch (ExecutionException e) {
            log("listConsumerGroupOffsets: " + e.getCause());
        }
        try {
            admin.describeTransactions(List.of("fixture-txn-a")).all().get(60, TimeUnit.SECONDS);
        } catch (ExecutionException e) {
            // TransactionalIdNotFound: expected, the coordinator lookup created the topic
        }
        List<String> internal = List.of("__consumer_offsets", "__transaction_state");
        long deadline = System.currentTimeMillis() + 60_000;
        while (true) {
            try {
                admin.describeTopics(internal).allTopicNames().get(30, TimeUnit.SECONDS);
                break;
            } catch (ExecutionException e) {
                if (System.currentTimeMillis() > deadline)
                    throw new Args.Fail("the internal topics were not created: " + e.getCause(), 1);
                Thread.sleep(200);
            }
        }
        Map<ConfigResource, java.util.Collection<AlterConfigOp>> ops = new HashMap<>();
        for (String t : internal)
            ops.put(new ConfigResource(ConfigResource.Type.TOPIC, t), List.of(new AlterConfigOp(
                new ConfigEntry(segmentConfig, "" + segmentBytes), AlterConfigOp.OpType.SET)));
        admin.incrementalAlterConfigs(ops).all().get(30, TimeUnit.SECONDS);
        Map<String, Object> m = new LinkedHashMap<>();
        for (String t : internal) m.put(t, Map.of(segmentConfig, "" + segmentBytes));
        return m;
    }

    /** The latest committed record of each key (the records a full compaction keeps, tombstones aside), with
     *  SHA-256 digests (see README.md for the byte layout). */
    void latestPerKey(String topic, int p, List<Rec> committed, Map<String, Object> po, PrintWriter expect)
        throws Exception {
        Map<String, Rec> latest = new HashMap<>();
        for (Rec r : committed) {
            if (r.offset < 0) throw new IllegalStateException("a committed record of " + topic + " has no offset");
            String k = new String(r.key, StandardCharsets.UTF_8);
            Rec old = latest.get(k);
            if (old == null || old.offset < r.offset) latest.put(k, r);
        }
        List<Rec> l = new ArrayList<>(latest.values());
        l.sort((a, b) -> Long.compare(a.offset, b.offset));
        MessageDigest all = MessageDigest.getInstance("SHA-256");
        MessageDigest live = MessageDigest.getInstance("SHA-256");
        int liveKeys = 0;
        for (Rec r : l) {
            byte[] enc = encode(r);
            all.update(enc);
            if (r.value != null) {
                live.update(enc);
                liveKeys++;
            }
            if (expect != null) {
                Map<String, Object> e = new LinkedHashMap<>();
                e.put("topic", topic);
                e.put("partition", p);
                e.put("offset", r.offset);
                e.put("timestamp", r.timestamp);
                e.put("key", r.key);
                e.put("value", r.value);
                e.put("headers", headersJson(r.headers));
                expect.println(Json.write(e));
            }
        }
        po.put("distinct_keys", l.size());
        po.put("live_keys", liveKeys);
        po.put("latest_digest", hex(all.digest()));
        po.put("live_digest", hex(live.digest()));
    }

    static List<Object> headersJson(Header[] hs) {
        List<Object> l = new ArrayList<>();
        if (hs != null) for (Header h : hs) l.add(Arrays.asList(h.key(), Json.b64(h.value())));
        return l;
    }

    /** i64 offset, i32 key length, key, i32 value length (-1: null), value, i32 header count, then per header
     *  i32 key length, UTF-8 key, i32 value length (-1: null), value; all big-endian. */
    static byte[] encode(Rec r) {
        int n = 8 + 4 + r.key.length + 4 + (r.value == null ? 0 : r.value.length) + 4;
        if (r.headers != null)
            for (Header h : r.headers)
                n += 8 + h.key().getBytes(StandardCharsets.UTF_8).length + (h.value() == null ? 0 : h.value().length);
        ByteBuffer b = ByteBuffer.allocate(n);
        b.putLong(r.offset).putInt(r.key.length).put(r.key);
        if (r.value == null) b.putInt(-1);
        else b.putInt(r.value.length).put(r.value);
        b.putInt(r.headers == null ? 0 : r.headers.length);
        if (r.headers != null)
            for (Header h : r.headers) {
                byte[] k = h.key().getBytes(StandardCharsets.UTF_8);
                b.putInt(k.length).put(k);
                if (h.value() == null) b.putInt(-1);
                else b.putInt(h.value().length).put(h.value());
            }
        return b.array();
    }

    static String hex(byte[] b) {
        StringBuilder sb = new StringBuilder();
        for (byte x : b) sb.append(String.format("%02x", x));
        return sb.toString();
    }

    /** 20 groups commit offsets in several rounds (commitSync, no group membership); then two groups are deleted
     *  and one group's offset for one partition is deleted: tombstones in __consumer_offsets. */
    Map<String, Object> commitGroups(Admin admin, List<TopicSpec> topics, Random r) throws Exception {
        List<TopicPartition> tps = new ArrayList<>();
        for (TopicSpec t : topics) for (int p = 0; p < t.partitions; p++) tps.add(new TopicPartition(t.name, p));
        List<String> names = new ArrayList<>();
        int commits = 0;
        for (int g = 0; g < 20; g++) {
            String group = String.format("fixture-group-%02d", g);
            names.add(group);
            Properties p = new Properties();
            p.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
            p.put(ConsumerConfig.GROUP_ID_CONFIG, group);
            p.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
            p.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
            p.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
            try (KafkaConsumer<byte[], byte[]> c = new KafkaConsumer<>(p)) {
                int rounds = 3 + r.nextInt(6);
                for (int round = 0; round < rounds; round++) {
                    Map<TopicPartition, OffsetAndMetadata> m = new HashMap<>();
                    for (TopicPartition tp : tps) {
                        if (r.nextInt(3) == 0) continue;
                        long end = ps(tp.topic(), tp.partition()).sent;
                        long off = (long) ((round + 1) * end / rounds);
                        String meta = r.nextInt(4) == 0 ? "g" + g + "-r" + round : "";
                        m.put(tp, new OffsetAndMetadata(off, meta));
                    }
                    if (m.isEmpty()) continue;
                    c.commitSync(m, java.time.Duration.ofSeconds(30));
                    commits++;
                }
            }
        }
        List<String> deleted = List.of("fixture-group-18", "fixture-group-19");
        admin.deleteConsumerGroups(deleted).all().get(30, TimeUnit.SECONDS);
        TopicPartition dropped = new TopicPartition("codec-none", 0);
        boolean offsetDeleted = true;
        try {
            admin.deleteConsumerGroupOffsets("fixture-group-17", Set.of(dropped)).all().get(30, TimeUnit.SECONDS);
        } catch (ExecutionException e) {
            offsetDeleted = false; // the group never committed that partition
            log("deleteConsumerGroupOffsets: " + e.getCause());
        }
        Map<String, Object> g = new LinkedHashMap<>();
        g.put("groups", names);
        g.put("commit_requests", commits);
        g.put("deleted_groups", deleted);
        g.put("deleted_offset", offsetDeleted ? Map.of("group", "fixture-group-17", "topic", dropped.topic(),
            "partition", dropped.partition()) : null);
        return g;
    }

    // ---------------------------------------------------------------- hang profile

    void runHang() throws Exception {
        String id = "fixture-txn-hang";
        Random r = new Random(seed ^ 0x5eedL);
        TopicSpec t = null;
        for (TopicSpec s : mainTopics()) if (s.name.equals(TXN_TOPIC)) t = s;
        PartStats[] a = {new PartStats(), new PartStats()};
        stats.put(TXN_TOPIC, a);
        KafkaProducer<byte[], byte[]> p =
            new KafkaProducer<>(producerProps(t.codec, Kind.TRANSACTIONAL, t.batchSize, t.lingerMs, id));
        p.initTransactions();
        p.beginTransaction();
        List<Rec> recs = new ArrayList<>();
        for (int i = 0; i < 12; i++) {
            Rec rec = newRec(r, t, 1_000_000 + i, true);
            recs.add(rec);
            send(p, TXN_TOPIC, rec, true);
            if (i == 5) p.flush();
        }
        p.flush();
        checkSendErrors();
        Map<String, Object> out = new LinkedHashMap<>();
        out.put("profile", "hang");
        out.put("transactional_id", id);
        out.put("transaction_timeout_ms", txnTimeoutMs);
        List<Object> parts = new ArrayList<>();
        try (Admin admin = admin()) {
            List<TopicPartition> tps = List.of(new TopicPartition(TXN_TOPIC, 0), new TopicPartition(TXN_TOPIC, 1));
            DescribeProducersResult dp = admin.describeProducers(tps);
            for (TopicPartition tp : tps) {
                List<Long> offsets = new ArrayList<>();
                for (Rec rec : recs) if (rec.partition == tp.partition()) offsets.add(rec.offset);
                if (offsets.isEmpty()) continue;
                Map<String, Object> po = new LinkedHashMap<>();
                po.put("partition", tp.partition());
                po.put("offsets", offsets);
                for (ProducerState s : dp.partitionResult(tp).get(30, TimeUnit.SECONDS).activeProducers()) {
                    if (s.currentTransactionStartOffset().isPresent()) {
                        po.put("producer_id", s.producerId());
                        po.put("producer_epoch", s.producerEpoch());
                        po.put("coordinator_epoch", s.coordinatorEpoch().orElse(-1));
                        po.put("current_txn_start_offset", s.currentTransactionStartOffset().getAsLong());
                        po.put("last_sequence", s.lastSequence());
                    }
                }
                parts.add(po);
            }
        }
        out.put("partitions", parts);
        System.out.println(Json.write(out));
        System.out.flush();
        log("halting with the transaction open");
        Runtime.getRuntime().halt(0);
    }

    static void log(String s) {
        System.err.println("Fixture: " + s);
    }
}
