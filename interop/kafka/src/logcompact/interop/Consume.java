package logcompact.interop;

import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;

import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;

/**
 * Reads partitions from their beginning to their end offset (the last stable offset under read_committed) and
 * prints one JSON line per record on stdout:
 *   {"isolation":I,"topic":T,"partition":P,"offset":N,"timestamp":T,"timestamp_type":"CreateTime",
 *    "key":B64|null,"value":B64|null,"headers":[["k",B64|null],...],"leader_epoch":E|null}
 * Partitions: `--topic T --partition P`, or `--tp T:P` (repeatable). `--isolation both` reads every partition
 * under read_uncommitted, then under read_committed, in one JVM. A summary line a partition and isolation goes
 * to stderr: {"topic":..,"partition":..,"isolation":..,"begin_offset":..,"end_offset":..,"records":N}.
 */
public final class Consume {
    public static void main(String[] argv) {
        Args.main("Consume", () -> run(argv));
    }

    static void run(String[] argv) throws Exception {
        Args a = new Args("Consume", argv, Set.of("bootstrap", "topic", "partition", "tp", "isolation", "timeout-ms"),
            Set.of());
        String isolation = a.get("isolation", "read_uncommitted");
        List<String> levels;
        if (isolation.equals("both")) levels = List.of("read_uncommitted", "read_committed");
        else if (isolation.equals("read_committed") || isolation.equals("read_uncommitted")) levels = List.of(isolation);
        else throw new Args.Fail("--isolation is read_committed, read_uncommitted or both, not '" + isolation + "'");
        List<TopicPartition> tps = new ArrayList<>();
        if (a.get("topic", null) != null) tps.add(new TopicPartition(a.required("topic"), (int) a.getLong("partition", 0)));
        for (String tp : a.all("tp")) {
            int colon = tp.lastIndexOf(':');
            if (colon <= 0) throw new Args.Fail("--tp takes TOPIC:PARTITION, not '" + tp + "'");
            tps.add(new TopicPartition(tp.substring(0, colon), Integer.parseInt(tp.substring(colon + 1))));
        }
        if (tps.isEmpty()) throw new Args.Fail("name a partition: --topic T --partition P, or --tp T:P");
        long timeoutMs = a.getLong("timeout-ms", 60_000);
        for (String level : levels)
            for (TopicPartition tp : tps) consume(a.required("bootstrap"), level, tp, timeoutMs);
    }

    static void consume(String bootstrap, String isolation, TopicPartition tp, long timeoutMs) {
        Properties p = new Properties();
        p.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, isolation);
        p.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
        p.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        p.put(ConsumerConfig.CLIENT_ID_CONFIG, "interop-consume");
        p.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
        p.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
        long count = 0;
        StringBuilder sb = new StringBuilder();
        try (KafkaConsumer<byte[], byte[]> c = new KafkaConsumer<>(p)) {
            c.assign(List.of(tp));
            c.seekToBeginning(List.of(tp));
            long begin = c.beginningOffsets(List.of(tp)).get(tp);
            long end = c.endOffsets(List.of(tp)).get(tp);
            long deadline = System.currentTimeMillis() + timeoutMs;
            while (c.position(tp) < end) {
                if (System.currentTimeMillis() > deadline)
                    throw new Args.Fail("timed out at offset " + c.position(tp) + " before end offset " + end, 1);
                for (ConsumerRecord<byte[], byte[]> r : c.poll(Duration.ofMillis(500))) {
                    if (r.offset() >= end) continue;
                    Map<String, Object> o = new LinkedHashMap<>();
                    o.put("isolation", isolation);
                    o.put("topic", tp.topic());
                    o.put("partition", tp.partition());
                    o.put("offset", r.offset());
                    o.put("timestamp", r.timestamp());
                    o.put("timestamp_type", r.timestampType().name);
                    o.put("key", r.key());
                    o.put("value", r.value());
                    List<Object> hs = new ArrayList<>();
                    for (Header h : r.headers()) hs.add(java.util.Arrays.asList(h.key(), Json.b64(h.value())));
                    o.put("headers", hs);
                    o.put("leader_epoch", r.leaderEpoch().orElse(null));
                    sb.setLength(0);
                    Json.write(sb, o);
                    System.out.println(sb);
                    count++;
                }
            }
            Map<String, Object> s = new LinkedHashMap<>();
            s.put("topic", tp.topic());
            s.put("partition", tp.partition());
            s.put("isolation", isolation);
            s.put("begin_offset", begin);
            s.put("end_offset", end);
            s.put("records", count);
            System.err.println(Json.write(s));
        }
    }
}
