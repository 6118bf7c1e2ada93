package logcompact.interop;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Properties;
import java.util.Set;
import java.util.concurrent.TimeUnit;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.NewPartitionReassignment;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.TopicDescription;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.ElectionType;
import org.apache.kafka.common.Node;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.TopicPartitionInfo;
import org.apache.kafka.common.serialization.ByteArraySerializer;

/**
 * Drives a replicated partition through the steps of a replica-divergence scenario, one step a run:
 *   create   --topic T --replicas 1,2,3 [--config k=v]...   a one-partition topic on those brokers, in that order
 *   produce  --topic T --from N --count C [--tombstones] [--value V] [--sleep-ms S]   keys k000000.. with acks=all
 *   txn      --topic T --id TID --from N --count C (--commit|--abort|--open)   one transaction of those keys;
 *            --init-only: the id's producer starts (its coordinator aborts a transaction left open) and ends;
 *            --ready-file R --go-file G: once the records are flushed, R is made, and the end waits for G
 *   lead     --topic T --leader ID      makes ID the preferred replica and elects it
 *   describe --topic T                  {"leader":L,"replicas":[..],"isr":[..]} on stdout
 *   wait-isr --topic T --size N         waits until the ISR has N replicas
 * Every step takes --bootstrap; --timeout-ms bounds its waits (60 s).
 */
public final class Replicas {
    public static void main(String[] argv) {
        Args.main("Replicas", () -> run(argv));
    }

    static void run(String[] argv) throws Exception {
        if (argv.length == 0) throw new Args.Fail("name a step: create, produce, txn, lead, describe or wait-isr");
        String step = argv[0];
        String[] rest = java.util.Arrays.copyOfRange(argv, 1, argv.length);
        Args a = new Args("Replicas " + step, rest,
            Set.of("bootstrap", "topic", "replicas", "config", "from", "count", "value", "sleep-ms", "id", "leader",
                "size", "timeout-ms", "ready-file", "go-file"),
            Set.of("tombstones", "commit", "abort", "open", "init-only"));
        long timeoutMs = a.getLong("timeout-ms", 60_000);
        switch (step) {
            case "create" -> create(a, timeoutMs);
            case "produce" -> produce(a);
            case "txn" -> txn(a);
            case "lead" -> lead(a, timeoutMs);
            case "describe" -> System.out.println(Json.write(describe(a)));
            case "wait-isr" -> waitIsr(a, timeoutMs);
            default -> throw new Args.Fail("unknown step '" + step + "'");
        }
    }

    static Admin admin(Args a) {
        Properties p = new Properties();
        p.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, a.required("bootstrap"));
        p.put(AdminClientConfig.CLIENT_ID_CONFIG, "interop-replicas");
        return Admin.create(p);
    }

    static List<Integer> ids(String list) {
        List<Integer> out = new ArrayList<>();
        for (String s : list.split(",")) out.add(Integer.parseInt(s.trim()));
        return out;
    }

    static void create(Args a, long timeoutMs) throws Exception {
        Map<String, String> configs = new LinkedHashMap<>();
        for (String c : a.all("config")) {
            int eq = c.indexOf('=');
            if (eq <= 0) throw new Args.Fail("--config takes NAME=VALUE, not '" + c + "'");
            configs.put(c.substring(0, eq), c.substring(eq + 1));
        }
        String topic = a.required("topic");
        NewTopic t = new NewTopic(topic, Map.of(0, ids(a.required("replicas")))).configs(configs);
        try (Admin admin = admin(a)) {
            admin.createTopics(List.of(t)).all().get(30, TimeUnit.SECONDS);
            long deadline = System.currentTimeMillis() + timeoutMs;
            while (true) {
                try {
                    TopicPartitionInfo p = info(admin, topic);
                    if (p.leader() != null && p.isr().size() == p.replicas().size()) return;
                } catch (Exception retry) {
                    // Not yet known to every broker.
                }
                if (System.currentTimeMillis() > deadline) throw new Args.Fail("topic " + topic + " not ready", 1);
                Thread.sleep(100);
            }
        }
    }

    static Properties producerProps(Args a) {
        Properties p = new Properties();
        p.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, a.required("bootstrap"));
        p.put(ProducerConfig.ACKS_CONFIG, "all");
        p.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class.getName());
        p.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class.getName());
        p.put(ProducerConfig.LINGER_MS_CONFIG, "0");
        return p;
    }

    static byte[] key(long i) {
        return String.format("k%06d", i).getBytes();
    }

    static void produce(Args a) throws Exception {
        String topic = a.required("topic");
        long from = a.getLong("from", 0), count = a.getLong("count", 1), sleep = a.getLong("sleep-ms", 0);
        boolean tombstones = a.flag("tombstones");
        String value = a.get("value", "v");
        try (KafkaProducer<byte[], byte[]> p = new KafkaProducer<>(producerProps(a))) {
            for (long i = from; i < from + count; i++) {
                byte[] v = tombstones ? null : (value + "-" + i).getBytes();
                p.send(new ProducerRecord<>(topic, 0, key(i), v)).get(30, TimeUnit.SECONDS);
                if (sleep > 0) Thread.sleep(sleep);
            }
        }
    }

    static void txn(Args a) throws Exception {
        String topic = a.required("topic");
        long from = a.getLong("from", 0), count = a.getLong("count", 1);
        String value = a.get("value", "t");
        Properties props = producerProps(a);
        props.put(ProducerConfig.TRANSACTIONAL_ID_CONFIG, a.required("id"));
        KafkaProducer<byte[], byte[]> p = new KafkaProducer<>(props);
        p.initTransactions();
        if (a.flag("init-only")) {
            p.close();
            return;
        }
        p.beginTransaction();
        for (long i = from; i < from + count; i++)
            p.send(new ProducerRecord<>(topic, 0, key(i), (value + "-" + i).getBytes()));
        p.flush();
        if (a.get("ready-file", null) != null) {
            java.nio.file.Files.createFile(java.nio.file.Path.of(a.required("ready-file")));
            java.nio.file.Path go = java.nio.file.Path.of(a.required("go-file"));
            long deadline = System.currentTimeMillis() + 120_000;
            while (!java.nio.file.Files.exists(go)) {
                if (System.currentTimeMillis() > deadline) throw new Args.Fail("no " + go + " in 120 s", 1);
                Thread.sleep(50);
            }
        }
        if (a.flag("commit")) p.commitTransaction();
        else if (a.flag("abort")) p.abortTransaction();
        else if (a.flag("open")) Runtime.getRuntime().halt(0);
        else throw new Args.Fail("say --commit, --abort or --open");
        p.close();
    }

    static TopicPartitionInfo info(Admin admin, String topic) throws Exception {
        TopicDescription d = admin.describeTopics(List.of(topic)).allTopicNames().get(30, TimeUnit.SECONDS).get(topic);
        return d.partitions().get(0);
    }

    static Map<String, Object> describe(Args a) throws Exception {
        try (Admin admin = admin(a)) {
            TopicPartitionInfo p = info(admin, a.required("topic"));
            Map<String, Object> o = new LinkedHashMap<>();
            o.put("leader", p.leader() == null ? -1 : p.leader().id());
            List<Object> replicas = new ArrayList<>(), isr = new ArrayList<>();
            for (Node n : p.replicas()) replicas.add(n.id());
            for (Node n : p.isr()) isr.add(n.id());
            o.put("replicas", replicas);
            o.put("isr", isr);
            return o;
        }
    }

    static void waitIsr(Args a, long timeoutMs) throws Exception {
        long size = a.getLong("size", 3);
        long deadline = System.currentTimeMillis() + timeoutMs;
        while (true) {
            Map<String, Object> d = describe(a);
            if (((List<?>) d.get("isr")).size() >= size) return;
            if (System.currentTimeMillis() > deadline) throw new Args.Fail("ISR still " + d.get("isr"), 1);
            Thread.sleep(200);
        }
    }

    static void lead(Args a, long timeoutMs) throws Exception {
        String topic = a.required("topic");
        int leader = (int) a.getLong("leader", -1);
        TopicPartition tp = new TopicPartition(topic, 0);
        try (Admin admin = admin(a)) {
            TopicPartitionInfo p = info(admin, topic);
            List<Integer> order = new ArrayList<>();
            order.add(leader);
            for (Node n : p.replicas()) if (n.id() != leader) order.add(n.id());
            admin.alterPartitionReassignments(Map.of(tp, Optional.of(new NewPartitionReassignment(order))))
                .all().get(30, TimeUnit.SECONDS);
            long deadline = System.currentTimeMillis() + timeoutMs;
            while (true) {
                TopicPartitionInfo now = info(admin, topic);
                if (now.replicas().get(0).id() == leader) break;
                if (System.currentTimeMillis() > deadline) throw new Args.Fail("reassignment did not finish", 1);
                Thread.sleep(100);
            }
            while (true) {
                try {
                    admin.electLeaders(ElectionType.PREFERRED, Set.of(tp)).all().get(30, TimeUnit.SECONDS);
                } catch (Exception e) {
                    // ElectionNotNeeded once it leads.
                }
                TopicPartitionInfo now = info(admin, topic);
                if (now.leader() != null && now.leader().id() == leader) return;
                if (System.currentTimeMillis() > deadline) throw new Args.Fail("broker " + leader + " does not lead", 1);
                Thread.sleep(200);
            }
        }
    }
}
