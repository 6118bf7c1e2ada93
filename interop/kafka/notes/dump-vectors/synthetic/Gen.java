import java.io.*;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.*;
import java.util.*;
import org.apache.kafka.common.*;
import org.apache.kafka.common.compress.Compression;
import org.apache.kafka.common.record.TimestampType;
import org.apache.kafka.common.record.internal.*;
import org.apache.kafka.common.message.*;
import org.apache.kafka.common.protocol.ApiMessage;
import org.apache.kafka.clients.consumer.ConsumerPartitionAssignor;
import org.apache.kafka.clients.consumer.internals.ConsumerProtocol;
import org.apache.kafka.coordinator.common.runtime.CoordinatorRecord;
import org.apache.kafka.coordinator.group.GroupCoordinatorRecordSerde;
import org.apache.kafka.coordinator.group.GroupCoordinatorRecordHelpers;
import org.apache.kafka.coordinator.group.generated.*;
import org.apache.kafka.coordinator.transaction.TransactionCoordinatorRecordSerde;
import org.apache.kafka.coordinator.transaction.generated.TransactionLogKey;
import org.apache.kafka.coordinator.transaction.generated.TransactionLogValue;
import org.apache.kafka.coordinator.share.ShareCoordinatorRecordSerde;
import org.apache.kafka.server.common.ApiMessageAndVersion;

/** Writes synthetic segments of coordinator and control records with Kafka 4.4's own classes. */
public class Gen {
    static final long TS = 1700000000000L;
    record KV(byte[] k, byte[] v) {}

    static void write(Path file, List<KV> recs, long base) throws IOException {
        ByteBuffer buf = ByteBuffer.allocate(1 << 20);
        MemoryRecordsBuilder b = MemoryRecords.builder(buf, RecordBatch.MAGIC_VALUE_V2, Compression.NONE, TimestampType.CREATE_TIME, base);
        long o = base;
        for (KV kv : recs) b.appendWithOffset(o++, TS, kv.k, kv.v);
        MemoryRecords m = b.build();
        Files.createDirectories(file.getParent());
        try (FileChannel ch = FileChannel.open(file, StandardOpenOption.CREATE, StandardOpenOption.WRITE, StandardOpenOption.TRUNCATE_EXISTING)) {
            m.writeFullyTo(ch);
        }
    }
    static void writeRecords(Path file, MemoryRecords... ms) throws IOException {
        Files.createDirectories(file.getParent());
        try (FileChannel ch = FileChannel.open(file, StandardOpenOption.CREATE, StandardOpenOption.WRITE, StandardOpenOption.TRUNCATE_EXISTING)) {
            for (MemoryRecords m : ms) m.writeFullyTo(ch);
        }
    }
    static KV kv(org.apache.kafka.coordinator.common.runtime.CoordinatorRecordSerde s, CoordinatorRecord r) {
        return new KV(s.serializeKey(r), s.serializeValue(r));
    }
    static byte[] prefixed(short v, ApiMessage m) {
        return org.apache.kafka.common.protocol.MessageUtil.toVersionPrefixedBytes(v, m);
    }

    public static void main(String[] a) throws Exception {
        Path out = Paths.get(a[0]);
        GroupCoordinatorRecordSerde gs = new GroupCoordinatorRecordSerde();
        List<KV> g = new ArrayList<>();
        Uuid topicId = Uuid.fromString("emWlYSA7Ski_S45EhBtOcQ");
        // offset commits, value versions 0..4 (4.4 writes 4, or 1 with an expire timestamp)
        for (short v = 0; v <= 4; v++) {
            OffsetCommitValue val = new OffsetCommitValue().setOffset(100 + v).setMetadata(v == 2 ? "" : "meta-\u00e9\"\\/\n" + v).setCommitTimestamp(TS + v);
            if (v == 1) val.setExpireTimestamp(TS + 86400000L);
            if (v >= 3) val.setLeaderEpoch(7);
            if (v >= 4) val.setTopicId(topicId);
            g.add(kv(gs, CoordinatorRecord.record(new OffsetCommitKey().setGroup("g-offsets").setTopic("t").setPartition(v), new ApiMessageAndVersion(val, v))));
        }
        // legacy key type 0
        g.add(new KV(prefixed((short) 0, new LegacyOffsetCommitKey().setGroup("g-legacy").setTopic("t").setPartition(0)), prefixed((short) 1, new OffsetCommitValue().setOffset(5).setMetadata("m").setCommitTimestamp(TS).setExpireTimestamp(TS + 1))));
        g.add(kv(gs, CoordinatorRecord.tombstone(new LegacyOffsetCommitKey().setGroup("g-legacy").setTopic("t").setPartition(0))));
        g.add(kv(gs, GroupCoordinatorRecordHelpers.newOffsetCommitTombstoneRecord("g-offsets", "t", 0)));
        // group metadata, versions 0..4, consumer protocol with subscription/assignment decoded by the tool
        ByteBuffer sub = ConsumerProtocol.serializeSubscription(new ConsumerPartitionAssignor.Subscription(List.of("t1", "t2"), ByteBuffer.wrap(new byte[]{1, 2}), List.of(new TopicPartition("t1", 0)), 3, Optional.of("rack-a")));
        ByteBuffer sub0 = ConsumerProtocol.serializeSubscription(new ConsumerPartitionAssignor.Subscription(List.of("t1")), (short) 0);
        ByteBuffer asg = ConsumerProtocol.serializeAssignment(new ConsumerPartitionAssignor.Assignment(List.of(new TopicPartition("t1", 0), new TopicPartition("t2", 1)), ByteBuffer.wrap(new byte[]{9})));
        for (short v = 0; v <= 4; v++) {
            GroupMetadataValue.MemberMetadata m = new GroupMetadataValue.MemberMetadata().setMemberId("m1").setClientId("client-1").setClientHost("/127.0.0.1")
                .setSessionTimeout(45000).setSubscription(org.apache.kafka.common.utils.Utils.toArray(sub.duplicate())).setAssignment(org.apache.kafka.common.utils.Utils.toArray(asg.duplicate()));
            if (v >= 1) m.setRebalanceTimeout(300000);
            if (v >= 3) m.setGroupInstanceId(v == 3 ? "static-1" : null);
            GroupMetadataValue.MemberMetadata m2 = new GroupMetadataValue.MemberMetadata().setMemberId("m2").setClientId("client-2").setClientHost("/127.0.0.2")
                .setSessionTimeout(45000).setSubscription(org.apache.kafka.common.utils.Utils.toArray(sub0.duplicate())).setAssignment(new byte[]{0, 0, 0, 0, 0, 0, 0, 0, 0, 0});
            GroupMetadataValue val = new GroupMetadataValue().setProtocolType("consumer").setGeneration(3 + v).setProtocol("range").setLeader("m1").setMembers(List.of(m, m2));
            if (v >= 2) val.setCurrentStateTimestamp(TS);
            g.add(kv(gs, CoordinatorRecord.record(new GroupMetadataKey().setGroup("g-classic-v" + v), new ApiMessageAndVersion(val, v))));
        }
        // a non-consumer protocol: member bytes stay base64; an empty group as 4.4 writes it (version 3)
        g.add(kv(gs, CoordinatorRecord.record(new GroupMetadataKey().setGroup("g-connect"), new ApiMessageAndVersion(new GroupMetadataValue().setProtocolType("connect").setGeneration(1).setProtocol("sessioned").setLeader("w1").setCurrentStateTimestamp(TS)
            .setMembers(List.of(new GroupMetadataValue.MemberMetadata().setMemberId("w1").setClientId("c").setClientHost("/h").setSessionTimeout(10000).setRebalanceTimeout(60000).setSubscription(new byte[]{0, 1, 2, (byte) 0xff}).setAssignment(new byte[0]))), (short) 3))));
        g.add(kv(gs, CoordinatorRecord.record(new GroupMetadataKey().setGroup("g-empty"), new ApiMessageAndVersion(new GroupMetadataValue().setProtocolType("").setGeneration(0).setProtocol(null).setLeader(null).setCurrentStateTimestamp(TS).setMembers(List.of()), (short) 3))));
        g.add(kv(gs, GroupCoordinatorRecordHelpers.newGroupMetadataTombstoneRecord("g-classic-v0")));
        // the modern group records as 4.4's helpers write them
        g.add(kv(gs, GroupCoordinatorRecordHelpers.newConsumerGroupEpochRecord("g-modern", 5, 1234567L)));
        g.add(kv(gs, GroupCoordinatorRecordHelpers.newConsumerGroupTargetAssignmentMetadataRecord("g-modern", 5, TS)));
        g.add(kv(gs, GroupCoordinatorRecordHelpers.newConsumerGroupTargetAssignmentRecord("g-modern", "member-a", new TreeMap<>(Map.of(topicId, new TreeSet<>(Set.of(0, 1)))))));
        g.add(kv(gs, GroupCoordinatorRecordHelpers.newConsumerGroupTargetAssignmentTombstoneRecord("g-modern", "member-a")));
        g.add(kv(gs, GroupCoordinatorRecordHelpers.newConsumerGroupTargetAssignmentMetadataTombstoneRecord("g-modern")));
        g.add(kv(gs, GroupCoordinatorRecordHelpers.newConsumerGroupMemberSubscriptionTombstoneRecord("g-modern", "member-a")));
        g.add(kv(gs, GroupCoordinatorRecordHelpers.newConsumerGroupCurrentAssignmentTombstoneRecord("g-modern", "member-a")));
        g.add(kv(gs, GroupCoordinatorRecordHelpers.newConsumerGroupEpochTombstoneRecord("g-modern")));
        g.add(kv(gs, GroupCoordinatorRecordHelpers.newShareGroupEpochRecord("g-share", 2, 99L)));
        g.add(kv(gs, GroupCoordinatorRecordHelpers.newShareGroupEpochTombstoneRecord("g-share")));
        // every record type 3.. with default key and value, at each value version
        for (CoordinatorRecordType t : CoordinatorRecordType.values()) {
            if (t.id() == 1 || t.id() == 2) continue;
            for (short v = t.lowestSupportedVersion(); v <= t.highestSupportedVersion(); v++) {
                g.add(kv(gs, CoordinatorRecord.record(t.newRecordKey(), new ApiMessageAndVersion(t.newRecordValue(), v))));
            }
        }
        // an unknown record type; a known type whose key is cut short; an unsupported value version
        g.add(new KV(new byte[]{0, 99, 0, 1, 'x'}, new byte[]{0, 0}));
        g.add(new KV(new byte[]{0, 1, 0, 5, 'a'}, new byte[]{0, 4}));
        g.add(new KV(prefixed((short) 2, new GroupMetadataKey().setGroup("g-bad-version")), new byte[]{0, 9, 0, 0}));
        write(out.resolve("group-records/00000000000000000000.log"), g, 0);
        // a record without a key: the tool throws (not caught by the parser)
        write(out.resolve("group-missing-key/00000000000000000000.log"), List.of(g.get(0), new KV(null, g.get(0).v)), 0);

        // transaction log
        TransactionCoordinatorRecordSerde ts = new TransactionCoordinatorRecordSerde();
        List<KV> t = new ArrayList<>();
        byte[] statuses = {0, 1, 2, 3, 4, 5, 6, 7, 8, 42};
        for (short v = 0; v <= 1; v++) {
            for (byte st : statuses) {
                TransactionLogValue val = new TransactionLogValue().setProducerId(1000 + st).setProducerEpoch((short) 3).setTransactionTimeoutMs(60000)
                    .setTransactionStatus(st).setTransactionLastUpdateTimestampMs(TS).setTransactionStartTimestampMs(st == 0 ? -1 : TS - 10)
                    .setTransactionPartitions(st == 0 ? null : List.of(new TransactionLogValue.PartitionsSchema().setTopic("txn").setPartitionIds(List.of(0, 1))));
                if (v >= 1) { val.setPreviousProducerId(st == 4 ? 999 : -1); val.setNextProducerId(st == 5 ? 2000 : -1); val.setClientTransactionVersion((short) (st % 3)); val.setNextProducerEpoch((short) (st == 5 ? 0 : -1)); }
                t.add(kv(ts, CoordinatorRecord.record(new TransactionLogKey().setTransactionalId("tid-v" + v + "-s" + st), new ApiMessageAndVersion(val, v))));
            }
        }
        t.add(kv(ts, CoordinatorRecord.tombstone(new TransactionLogKey().setTransactionalId("tid-gone"))));
        t.add(new KV(new byte[]{0, 7, 0, 1, 'x'}, new byte[]{0, 0}));
        write(out.resolve("txn-records/00000000000000000000.log"), t, 0);

        // share group state
        ShareCoordinatorRecordSerde ss = new ShareCoordinatorRecordSerde();
        List<KV> s = new ArrayList<>();
        for (org.apache.kafka.coordinator.share.generated.CoordinatorRecordType ty : org.apache.kafka.coordinator.share.generated.CoordinatorRecordType.values()) {
            for (short v = ty.lowestSupportedVersion(); v <= ty.highestSupportedVersion(); v++)
                s.add(kv(ss, CoordinatorRecord.record(ty.newRecordKey(), new ApiMessageAndVersion(ty.newRecordValue(), v))));
            s.add(kv(ss, CoordinatorRecord.tombstone(ty.newRecordKey())));
        }
        write(out.resolve("share-state-records/00000000000000000000.log"), s, 0);

        // control records of every type, and an unknown control type
        ByteBuffer bb = ByteBuffer.allocate(4096);
        MemoryRecords lc = MemoryRecords.withLeaderChangeMessage(0, TS, 3, ByteBuffer.allocate(256),
            new LeaderChangeMessage().setLeaderId(1).setVoters(List.of(new LeaderChangeMessage.Voter().setVoterId(1), new LeaderChangeMessage.Voter().setVoterId(2)))
                .setGrantingVoters(List.of(new LeaderChangeMessage.Voter().setVoterId(1))));
        MemoryRecords sh = MemoryRecords.withSnapshotHeaderRecord(1, TS, 3, ByteBuffer.allocate(256), new SnapshotHeaderRecord().setVersion((short) 0).setLastContainedLogTimestamp(TS));
        MemoryRecords kv0 = MemoryRecords.withKRaftVersionRecord(2, TS, 3, ByteBuffer.allocate(256), new KRaftVersionRecord().setVersion((short) 0).setKRaftVersion((short) 1));
        MemoryRecords vo = MemoryRecords.withVotersRecord(3, TS, 3, ByteBuffer.allocate(512), new VotersRecord().setVersion((short) 0).setVoters(List.of(
            new VotersRecord.Voter().setVoterId(1).setVoterDirectoryId(Uuid.fromString("s0ZMW8unTLKRydCNTjuEsw"))
                .setEndpoints(new VotersRecord.EndpointCollection(List.of(new VotersRecord.Endpoint().setName("CONTROLLER").setHost("127.0.0.1").setPort(9093)).iterator()))
                .setKRaftVersionFeature(new VotersRecord.KRaftVersionFeature().setMinSupportedVersion((short) 0).setMaxSupportedVersion((short) 1)))));
        MemoryRecords sf = MemoryRecords.withSnapshotFooterRecord(4, TS, 3, ByteBuffer.allocate(256), new SnapshotFooterRecord().setVersion((short) 0));
        MemoryRecords ab = MemoryRecords.withEndTransactionMarker(5, TS, 3, 77L, (short) 2, new EndTransactionMarker(ControlRecordType.ABORT, 11));
        MemoryRecords cm = MemoryRecords.withEndTransactionMarker(6, TS, 3, 77L, (short) 2, new EndTransactionMarker(ControlRecordType.COMMIT, 12));
        MemoryRecords un = MemoryRecords.withEndTransactionMarker(7, TS, 3, 77L, (short) 2, new EndTransactionMarker(ControlRecordType.COMMIT, 13));
        {   // turn the marker's key (version 0, type 1) into type 7, then fix the batch CRC (CRC-32C from the attributes on)
            ByteBuffer ubuf = un.buffer();
            byte[] arr = new byte[ubuf.remaining()]; ubuf.duplicate().get(arr);
            int at = -1;
            for (int i = 61; i + 3 < arr.length; i++) if (arr[i] == 0 && arr[i + 1] == 0 && arr[i + 2] == 0 && arr[i + 3] == 1) { at = i; break; }
            arr[at + 3] = 7;
            java.util.zip.CRC32C c = new java.util.zip.CRC32C(); c.update(arr, 21, arr.length - 21);
            long crc = c.getValue();
            arr[17] = (byte) (crc >>> 24); arr[18] = (byte) (crc >>> 16); arr[19] = (byte) (crc >>> 8); arr[20] = (byte) crc;
            un = MemoryRecords.readableRecords(ByteBuffer.wrap(arr));
        }
        writeRecords(out.resolve("control-records/00000000000000000000.log"), lc, sh, kv0, vo, sf, ab, cm, un);
        // a kraft.version 1 bootstrap-style snapshot: header, KRaftVersion, Voters, footer
        ByteBuffer sb = ByteBuffer.allocate(4096);
        MemoryRecordsBuilder snap = MemoryRecords.builder(sb, RecordBatch.CURRENT_MAGIC_VALUE, Compression.NONE, TimestampType.CREATE_TIME, 0, TS, RecordBatch.NO_PRODUCER_ID, RecordBatch.NO_PRODUCER_EPOCH, RecordBatch.NO_SEQUENCE, false, true, 0);
        snap.appendSnapshotHeaderMessage(TS, new SnapshotHeaderRecord().setVersion((short) 0).setLastContainedLogTimestamp(TS));
        snap.appendKRaftVersionMessage(TS, new KRaftVersionRecord().setVersion((short) 0).setKRaftVersion((short) 1));
        snap.appendVotersMessage(TS, new VotersRecord().setVersion((short) 0).setVoters(List.of(new VotersRecord.Voter().setVoterId(1).setVoterDirectoryId(Uuid.fromString("s0ZMW8unTLKRydCNTjuEsw"))
            .setEndpoints(new VotersRecord.EndpointCollection(List.of(new VotersRecord.Endpoint().setName("CONTROLLER").setHost("localhost").setPort(9093)).iterator()))
            .setKRaftVersionFeature(new VotersRecord.KRaftVersionFeature().setMinSupportedVersion((short) 0).setMaxSupportedVersion((short) 1)))));
        MemoryRecords snapHead = snap.build();
        MemoryRecords snapFoot = MemoryRecords.withSnapshotFooterRecord(3, TS, 0, ByteBuffer.allocate(256), new SnapshotFooterRecord().setVersion((short) 0));
        writeRecords(out.resolve("control-records/00000000000000000000-0000000000.checkpoint"), snapHead, snapFoot);
    }
}
