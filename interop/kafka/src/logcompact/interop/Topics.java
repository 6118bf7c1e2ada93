package logcompact.interop;

import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.concurrent.TimeUnit;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.Config;
import org.apache.kafka.clients.admin.ConfigEntry;
import org.apache.kafka.clients.admin.ListTopicsOptions;
import org.apache.kafka.clients.admin.TopicDescription;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.common.Node;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.TopicPartitionInfo;
import org.apache.kafka.common.config.ConfigResource;

/**
 * Describes topics (and with --groups the consumer groups' committed offsets) as one JSON object on stdout:
 * {"topics":[{"name":..,"topic_id":..,"internal":bool,"partitions":[{"partition":0,"leader":1,"replicas":[1],
 *   "isr":[1]}],"overrides":{name:value (topic-level settings, source DYNAMIC_TOPIC_CONFIG)},
 *   "effective":{name:value (every setting as the broker resolves it)}}],
 *  "groups":[{"group":..,"offsets":[{"topic":..,"partition":..,"offset":..,"metadata":..,"leader_epoch":..}]}]}
 * Topics: every non-internal topic, or those named with --topic (repeatable); --internal adds internal ones.
 */
public final class Topics {
    public static void main(String[] argv) {
        Args.main("Topics", () -> run(argv));
    }

    static void run(String[] argv) throws Exception {
        Args a = new Args("Topics", argv, Set.of("bootstrap", "topic"), Set.of("internal", "groups"));
        Properties p = new Properties();
        p.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, a.required("bootstrap"));
        p.put(AdminClientConfig.CLIENT_ID_CONFIG, "interop-topics");
        Map<String, Object> out = new LinkedHashMap<>();
        try (Admin admin = Admin.create(p)) {
            Collection<String> names = a.all("topic");
            if (names.isEmpty())
                names = new TreeSet<>(admin.listTopics(new ListTopicsOptions().listInternal(a.flag("internal")))
                    .names().get(30, TimeUnit.SECONDS));
            Map<String, TopicDescription> desc = admin.describeTopics(names).allTopicNames().get(30, TimeUnit.SECONDS);
            List<ConfigResource> res = new ArrayList<>();
            for (String n : names) res.add(new ConfigResource(ConfigResource.Type.TOPIC, n));
            Map<ConfigResource, Config> cfgs = admin.describeConfigs(res).all().get(30, TimeUnit.SECONDS);
            List<Object> tl = new ArrayList<>();
            for (String n : names) {
                TopicDescription d = desc.get(n);
                Map<String, Object> t = new LinkedHashMap<>();
                t.put("name", n);
                t.put("topic_id", d.topicId().toString());
                t.put("internal", d.isInternal());
                List<Object> pl = new ArrayList<>();
                for (TopicPartitionInfo i : d.partitions()) {
                    Map<String, Object> po = new LinkedHashMap<>();
                    po.put("partition", i.partition());
                    po.put("leader", i.leader() == null ? null : i.leader().id());
                    po.put("replicas", ids(i.replicas()));
                    po.put("isr", ids(i.isr()));
                    pl.add(po);
                }
                t.put("partitions", pl);
                Map<String, Object> over = new TreeMap<>();
                Map<String, Object> eff = new TreeMap<>();
                for (ConfigEntry e : cfgs.get(new ConfigResource(ConfigResource.Type.TOPIC, n)).entries()) {
                    eff.put(e.name(), e.value());
                    if (e.source() == ConfigEntry.ConfigSource.DYNAMIC_TOPIC_CONFIG) over.put(e.name(), e.value());
                }
                t.put("overrides", over);
                t.put("effective", eff);
                tl.add(t);
            }
            out.put("topics", tl);
            if (a.flag("groups")) {
                List<Object> gl = new ArrayList<>();
                List<String> groups = new ArrayList<>();
                admin.listGroups().all().get(30, TimeUnit.SECONDS).forEach(g -> groups.add(g.groupId()));
                groups.sort(null);
                for (String g : groups) {
                    Map<TopicPartition, OffsetAndMetadata> m = admin.listConsumerGroupOffsets(g)
                        .partitionsToOffsetAndMetadata().get(30, TimeUnit.SECONDS);
                    List<TopicPartition> tps = new ArrayList<>(m.keySet());
                    tps.sort((x, y) -> x.topic().equals(y.topic()) ? Integer.compare(x.partition(), y.partition())
                        : x.topic().compareTo(y.topic()));
                    List<Object> ol = new ArrayList<>();
                    for (TopicPartition tp : tps) {
                        OffsetAndMetadata om = m.get(tp);
                        if (om == null) continue;
                        Map<String, Object> o = new LinkedHashMap<>();
                        o.put("topic", tp.topic());
                        o.put("partition", tp.partition());
                        o.put("offset", om.offset());
                        o.put("metadata", om.metadata());
                        o.put("leader_epoch", om.leaderEpoch().orElse(null));
                        ol.add(o);
                    }
                    Map<String, Object> go = new LinkedHashMap<>();
                    go.put("group", g);
                    go.put("offsets", ol);
                    gl.add(go);
                }
                out.put("groups", gl);
            }
        }
        System.out.println(Json.write(out));
    }

    static List<Integer> ids(List<Node> nodes) {
        List<Integer> l = new ArrayList<>();
        for (Node n : nodes) l.add(n.id());
        return l;
    }
}
