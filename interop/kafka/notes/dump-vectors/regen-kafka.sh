#!/bin/sh
# Re-runs Kafka 4.4's DumpLogSegments on every case and rewrites cases/*/{stdout,stderr,exit}.
# The summaries print absolute paths (and order files by their hash), so this directory must be
# /tmp/logcompact-dump-vectors. KAFKA_CP: the classpath of the Kafka 4.4 jars (kafka-tools and its dependencies).
set -u
V=/tmp/logcompact-dump-vectors
[ "$(cd "$(dirname "$0")" && pwd)" = "$V" ] || { echo "copy this directory to $V first" >&2; exit 2; }
: "${KAFKA_CP:=/work/main/target/kafka-jars/*}"
for c in "$V"/cases/*/; do
  (
    cd "$V/$(cat "$c/cwd")" || exit 1
    # one argument a line in args
    set --; while IFS= read -r a; do set -- "$@" "$a"; done < "$c/args"
    java -Duser.language=en -Duser.country=US -Dlog4j2.configurationFile=/work/main/interop/kafka/log4j2-tools.xml \
      -cp "$KAFKA_CP" org.apache.kafka.tools.DumpLogSegments "$@" > "$c/stdout" 2> "$c/stderr"
    echo $? > "$c/exit"
  )
done
