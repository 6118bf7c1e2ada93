package org.apache.kafka.storage.internals.log;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.LinkedHashMap;
import java.util.Map;

import logcompact.interop.Args;
import logcompact.interop.Json;

/**
 * Runs Kafka's own cleaner offline on many partitions in one JVM, so that a case costs milliseconds rather than
 * a JVM's start: each line of standard input is one OfflineClean command line, its arguments separated by tab
 * characters; each answer is one line of JSON on standard output, `{"ok": WHAT_OFFLINECLEAN_PRINTS}` or
 * `{"error": MESSAGE}`. Ends at the end of its input. Kafka's own logging goes to standard error.
 */
public final class OfflineCleanServer {
    public static void main(String[] argv) throws Exception {
        // Kafka's classes print nothing on standard output; anything that does goes to standard error, so that
        // the answers stay one a line.
        PrintStream answers = new PrintStream(new java.io.FileOutputStream(java.io.FileDescriptor.out), true,
            StandardCharsets.UTF_8);
        System.setOut(System.err);
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        String line;
        while ((line = in.readLine()) != null) {
            Map<String, Object> answer = new LinkedHashMap<>();
            try {
                answer.put("ok", OfflineClean.clean(line.isEmpty() ? new String[0] : line.split("\t", -1)));
            } catch (Args.Fail f) {
                answer.put("error", f.getMessage());
            } catch (Throwable t) {
                java.io.StringWriter trace = new java.io.StringWriter();
                t.printStackTrace(new java.io.PrintWriter(trace));
                answer.put("error", t.toString());
                answer.put("trace", trace.toString());
            }
            answers.println(Json.write(answer));
        }
        answers.flush();
    }
}
