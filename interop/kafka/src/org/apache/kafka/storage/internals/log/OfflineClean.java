package org.apache.kafka.storage.internals.log;

import java.io.File;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.Delayed;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;

import org.apache.kafka.common.Uuid;
import org.apache.kafka.common.utils.Time;
import org.apache.kafka.server.util.Scheduler;
import org.apache.kafka.storage.internals.utils.Throttler;
import org.apache.kafka.storage.log.metrics.BrokerTopicStats;

import logcompact.interop.Args;
import logcompact.interop.Json;

/**
 * Runs Kafka's own log cleaner (`Cleaner.doClean`) offline on one partition directory, which it rewrites: give
 * it a copy. Declared in Kafka's package to reach the package-private `LogCleanerManager.cleanableOffsets`.
 *
 *   OfflineClean --dir PARTITION_DIR --now-ms T --buffer-bytes B [--config key=value ...] [--until-clean]
 *                [--checkpoint FIRST_DIRTY] [--high-watermark HW] [--log-start-offset L] [--recover]
 *                [--respect-ratio] [--io-buffer-bytes N] [--max-passes N]
 *
 * The log is opened with a fixed clock at --now-ms (producer expiry and the delete horizons read it); the
 * cleaner's own stats use the system clock (CleanerStats is built with Time.SYSTEM inside doClean). Deferred file
 * deletions run inline (file.delete.delay.ms=0), periodic tasks never run. Closes the log as a clean broker stop
 * does (prepareActiveSegmentForClose, flush, close). Prints one JSON object on stdout.
 */
public final class OfflineClean {
    public static void main(String[] argv) {
        Args.main("OfflineClean", () -> run(argv));
    }

    /** A clock that stands still at the given time. */
    static final class FixedTime implements Time {
        final long ms;
        FixedTime(long ms) { this.ms = ms; }
        @Override public long milliseconds() { return ms; }
        @Override public long nanoseconds() { return ms * 1_000_000L; }
        @Override public void sleep(long millis) { }
        @Override public void waitObject(Object obj, java.util.function.Supplier<Boolean> condition, long deadlineMs)
            throws InterruptedException {
            if (!condition.get()) throw new org.apache.kafka.common.errors.TimeoutException("fixed clock");
        }
    }

    /** Runs one-shot tasks at once on the caller's thread; never runs periodic ones. */
    static final class InlineScheduler implements Scheduler {
        int inlineRuns;
        @Override public void startup() { }
        @Override public void shutdown() { }
        @Override public void resizeThreadPool(int n) { }
        @Override public ScheduledFuture<?> schedule(String name, Runnable task, long delayMs, long periodMs) {
            if (periodMs <= 0) {
                task.run();
                inlineRuns++;
            }
            return new Done();
        }
    }

    static final class Done implements ScheduledFuture<Object> {
        @Override public long getDelay(TimeUnit unit) { return 0; }
        @Override public int compareTo(Delayed o) { return 0; }
        @Override public boolean cancel(boolean b) { return false; }
        @Override public boolean isCancelled() { return false; }
        @Override public boolean isDone() { return true; }
        @Override public Object get() { return null; }
        @Override public Object get(long t, TimeUnit u) { return null; }
    }

    static void run(String[] argv) throws Exception {
        System.out.println(Json.write(clean(argv)));
    }

    /** One run as `main` does it, returning what it prints (for OfflineCleanServer, which runs many). */
    static Map<String, Object> clean(String[] argv) throws Exception {
        Args a = new Args("OfflineClean", argv,
            Set.of("dir", "now-ms", "buffer-bytes", "config", "checkpoint", "high-watermark", "log-start-offset",
                "io-buffer-bytes", "max-passes", "load-factor"),
            Set.of("until-clean", "recover", "respect-ratio"));
        File dir = new File(a.required("dir"));
        if (!dir.isDirectory()) throw new Args.Fail("--dir " + dir + " is not a directory");
        long now = a.getLong("now-ms", System.currentTimeMillis());
        long bufferBytes = a.getLong("buffer-bytes", 128L * 1024 * 1024);
        // LogCleaner: SkimpyOffsetMap(min(dedupe buffer / threads, Int.MAX_VALUE)); io buffer = io.buffer.size /
        // threads / 2 (broker default log.cleaner.io.buffer.size 512 KiB, one thread).
        int mapBytes = (int) Math.min(bufferBytes, Integer.MAX_VALUE);
        int ioBuffer = (int) (a.getLong("io-buffer-bytes", 512 * 1024) / 2);
        double loadFactor = Double.parseDouble(a.get("load-factor", "0.9"));
        long maxPasses = a.getLong("max-passes", 1000);

        Map<String, Object> props = new HashMap<>();
        props.put("cleanup.policy", "compact");
        for (String kv : a.all("config")) {
            int eq = kv.indexOf('=');
            if (eq <= 0) throw new Args.Fail("--config wants key=value, got '" + kv + "'");
            props.put(kv.substring(0, eq), kv.substring(eq + 1));
        }
        props.put("file.delete.delay.ms", "0");
        LogConfig config = new LogConfig(props);

        Time time = new FixedTime(now);
        InlineScheduler scheduler = new InlineScheduler();
        boolean recover = a.flag("recover");
        Map<String, Object> out = new LinkedHashMap<>();
        out.put("dir", dir.getPath());
        out.put("now_ms", now);
        out.put("buffer_bytes", (long) mapBytes);
        out.put("io_buffer_bytes", (long) ioBuffer);
        out.put("files_before", files(dir));

        long loadStart = System.nanoTime();
        UnifiedLog log = UnifiedLog.create(dir, config, a.getLong("log-start-offset", 0L), 0L, scheduler,
            new BrokerTopicStats(), time, 900_000, new ProducerStateManagerConfig(86_400_000, false),
            Integer.MAX_VALUE, new LogDirFailureChannel(1), !recover, Optional.<Uuid>empty());
        out.put("load_secs", (System.nanoTime() - loadStart) / 1e9);
        try {
            long hw = a.getLong("high-watermark", log.logEndOffset());
            log.updateHighWatermark(hw);
            out.put("topic", log.topicPartition().topic());
            out.put("partition", log.topicPartition().partition());
            out.put("log_start_offset", log.logStartOffset());
            out.put("log_end_offset", log.logEndOffset());
            out.put("high_watermark", log.highWatermark());
            out.put("last_stable_offset", log.lastStableOffset());
            out.put("active_segment_base", log.activeSegment().baseOffset());
            out.put("segments_before", log.numberOfSegments());
            out.put("bytes_before", log.size());

            Cleaner cleaner = new Cleaner(0, new SkimpyOffsetMap(mapBytes, "MD5"), ioBuffer, config.maxMessageSize(),
                loadFactor, new Throttler(Double.MAX_VALUE, 300, "cleaner-io", "bytes", time), time, tp -> { });
            Optional<Long> checkpoint = a.has("checkpoint") ? Optional.of(a.getLong("checkpoint", 0)) : Optional.empty();
            List<Object> passes = new ArrayList<>();
            long firstDirty = -1;
            String stop = null;
            for (int pass = 0; ; pass++) {
                LogCleanerManager.OffsetsToClean o = LogCleanerManager.cleanableOffsets(log, checkpoint, now);
                firstDirty = o.firstDirtyOffset();
                LogToClean ltc = new LogToClean(log, o.firstDirtyOffset(), o.firstUncleanableDirtyOffset(), false);
                if (pass > 0 && !a.flag("until-clean")) { stop = "one pass"; break; }
                if (ltc.cleanableBytes() <= 0 && o.firstDirtyOffset() >= o.firstUncleanableDirtyOffset()) {
                    stop = "nothing cleanable"; break;
                }
                if (a.flag("respect-ratio") && !(ltc.cleanableRatio() > config.minCleanableRatio)) {
                    stop = "cleanable ratio " + ltc.cleanableRatio() + " not above min.cleanable.dirty.ratio";
                    break;
                }
                if (pass >= maxPasses) { stop = "max passes"; break; }
                Map<String, Object> po = new LinkedHashMap<>();
                po.put("pass", pass);
                po.put("first_dirty", o.firstDirtyOffset());
                po.put("first_uncleanable", o.firstUncleanableDirtyOffset());
                po.put("force_update_checkpoint", o.forceUpdateCheckpoint());
                po.put("clean_bytes", ltc.cleanBytes());
                po.put("cleanable_bytes", ltc.cleanableBytes());
                po.put("cleanable_ratio", ltc.cleanableRatio());
                long t0 = System.nanoTime();
                Map.Entry<Long, CleanerStats> r = cleaner.doClean(ltc, now);
                double secs = (System.nanoTime() - t0) / 1e9;
                CleanerStats s = r.getValue();
                po.put("next_dirty", r.getKey());
                po.put("elapsed_secs", secs);
                Map<String, Object> so = new LinkedHashMap<>();
                so.put("bytes_read", s.bytesRead());
                so.put("bytes_written", s.bytesWritten());
                so.put("map_bytes_read", s.mapBytesRead);
                so.put("messages_read", s.messagesRead());
                so.put("messages_written", s.messagesWritten());
                so.put("map_messages_read", s.mapMessagesRead());
                so.put("invalid_messages_read", s.invalidMessagesRead());
                so.put("elapsed_secs", s.elapsedSecs());
                so.put("elapsed_index_secs", s.elapsedIndexSecs());
                so.put("buffer_utilization", s.bufferUtilization());
                po.put("stats", so);
                po.put("segments_after", log.numberOfSegments());
                po.put("bytes_after", log.size());
                passes.add(po);
                if (r.getKey() <= o.firstDirtyOffset()) { stop = "no progress"; break; }
                checkpoint = Optional.of(r.getKey());
            }
            out.put("passes", passes);
            out.put("stop", stop);
            out.put("first_dirty_offset", checkpoint.orElse(firstDirty));
            out.put("segments_after", log.numberOfSegments());
            out.put("bytes_after", log.size());
            out.put("log_end_offset_after", log.logEndOffset());
            out.put("inline_tasks", scheduler.inlineRuns);
            // As LogManager.shutdown does on a clean broker stop: without it the active segment keeps the
            // .index/.timeindex the load preallocated (10 MiB, zero-filled) instead of trimmed ones.
            log.prepareActiveSegmentForClose();
            log.flush(true);
        } finally {
            log.close();
        }
        out.put("files_after", files(dir));
        out.put("peak_rss_kib", vmHwmKib());
        return out;
    }

    static List<Object> files(File dir) throws Exception {
        List<Object> l = new ArrayList<>();
        try (Stream<Path> s = Files.list(dir.toPath())) {
            for (Path p : new TreeSet<>(s.toList())) {
                Map<String, Object> f = new LinkedHashMap<>();
                f.put("name", p.getFileName().toString());
                f.put("size", Files.size(p));
                l.add(f);
            }
        }
        return l;
    }

    static Long vmHwmKib() {
        try {
            for (String line : Files.readAllLines(Path.of("/proc/self/status"))) {
                if (line.startsWith("VmHWM:")) return Long.parseLong(line.replaceAll("[^0-9]", ""));
            }
        } catch (Exception e) {
            // not Linux: no figure
        }
        return null;
    }
}
