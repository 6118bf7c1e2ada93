#!/usr/bin/env bash
# Reference walkthrough: a real Kafka 4.4 KRaft node end to end, with only the resolved jars and the compiled
# interop classes (see README.md for resolving and compiling). Run from anywhere:
#
#   interop/kafka/node-walkthrough.sh [WORK_DIR]
#
# WORK_DIR (default: a new mktemp dir) receives the node, its copies, every tool's output and timings.txt.
# Environment: KAFKA_JARS (default target/kafka-interop/jars), KAFKA_CLASSES (default target/kafka-interop/classes),
# HEAP (default 256m), TXV (transaction.version to format with; empty: the 4.4 default, 2).
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
HERE=$ROOT/interop/kafka
JARS=${KAFKA_JARS:-$ROOT/target/kafka-interop/jars}
CLASSES=${KAFKA_CLASSES:-$ROOT/target/kafka-interop/classes}
CP="$CLASSES:$JARS/*"
WORK=${1:-$(mktemp -d /tmp/kafka-walk.XXXXXX)}
mkdir -p "$WORK"
WORK=$(cd "$WORK" && pwd)
HEAP=${HEAP:-256m}
JVM=(-Xmx"$HEAP" -Duser.language=en -Duser.country=US)
TOOLS=(java "${JVM[@]}" -Dlog4j2.configurationFile="$HERE/log4j2-tools.xml" -cp "$CP")
TIMINGS=$WORK/timings.txt
: > "$TIMINGS"
BROKER_PID=

[ -f "$JARS/kafka_2.13-4.4.0.jar" ] || { echo "no Kafka jars in $JARS (resolve them first, see README.md)" >&2; exit 1; }
[ -f "$CLASSES/logcompact/interop/Fixture.class" ] || { echo "no compiled classes in $CLASSES" >&2; exit 1; }

say() { printf '\n=== %s\n' "$*"; }
now_s() { date +%s.%N; }
# step NAME COMMAND...: runs COMMAND, appends "NAME seconds" to timings.txt
step() {
  local name=$1; shift
  local t0; t0=$(now_s)
  "$@"
  local t1; t1=$(now_s)
  printf '%-28s %6.1f s\n' "$name" "$(echo "$t1 - $t0" | bc)" | tee -a "$TIMINGS"
}

# to FILE COMMAND...: COMMAND's stdout into FILE; to2 FILE ERRFILE COMMAND...: and its stderr into ERRFILE
to() { local f=$1; shift; "$@" > "$f"; }
to2() { local f=$1 e=$2; shift 2; "$@" > "$f" 2> "$e"; }

cleanup() {
  if [ -n "$BROKER_PID" ] && kill -0 "$BROKER_PID" 2>/dev/null; then
    kill -TERM "$BROKER_PID" 2>/dev/null || true
    wait "$BROKER_PID" 2>/dev/null || true
  fi
}
trap cleanup EXIT

free_port() {
  local p
  for _ in $(seq 1 200); do
    p=$(( 20000 + RANDOM % 40000 ))
    if ! (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then echo "$p"; return; fi
  done
  echo "no free port found" >&2; exit 1
}

BPORT=$(free_port)
CPORT=$(free_port)
while [ "$CPORT" = "$BPORT" ]; do CPORT=$(free_port); done
BOOT=127.0.0.1:$BPORT
NODE=$WORK/node

write_props() { # NODE_DIR
  local n=$1
  mkdir -p "$n/logs"
  cat > "$n/server.properties" <<EOF
process.roles=broker,controller
node.id=1
controller.quorum.voters=1@127.0.0.1:$CPORT
listeners=PLAINTEXT://127.0.0.1:$BPORT,CONTROLLER://127.0.0.1:$CPORT
advertised.listeners=PLAINTEXT://127.0.0.1:$BPORT
inter.broker.listener.name=PLAINTEXT
controller.listener.names=CONTROLLER
listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT
# Two log dirs; without metadata.log.dir the KRaft metadata log lies in the first one.
log.dirs=$n/data-0,$n/data-1
num.partitions=1
offsets.topic.replication.factor=1
offsets.topic.num.partitions=1
transaction.state.log.replication.factor=1
transaction.state.log.min.isr=1
transaction.state.log.num.partitions=1
share.coordinator.state.topic.replication.factor=1
share.coordinator.state.topic.min.isr=1
share.coordinator.state.topic.num.partitions=1
group.initial.rebalance.delay.ms=0
transaction.max.timeout.ms=86400000
# We compact, not the broker (deprecated since 4.1, still honoured by 4.4; it logs a WARN).
log.cleaner.enable=false
# offsets.topic.segment.bytes / transaction.state.log.segment.bytes below 1 MiB make the internal topics'
# auto-creation fail (segment.bytes >= 1 MiB); the Fixture sets internal.segment.bytes on them instead.
# The KRaft metadata log: roll every 2 s (no-op records every 500 ms keep it appending) and snapshot often.
# (metadata.log.segment.bytes has a floor of 8 MiB; internal.metadata.log.segment.bytes goes lower but makes
# every start log an ERROR line "Overriding internal.metadata.log.segment.bytes is only supported for testing".)
metadata.log.segment.ms=2000
metadata.log.max.record.bytes.between.snapshots=16384
metadata.log.max.snapshot.interval.ms=5000
EOF
}

start_broker() { # NODE_DIR
  local n=$1 log=$1/logs/server.log
  local before=0
  [ -f "$log" ] && before=$(wc -l < "$log")
  echo "$before" > "$n/logs/.start-line"
  # The java process itself in the background (not a shell function): $! is the broker.
  java "${JVM[@]}" -Dlog4j2.configurationFile="$HERE/log4j2-broker.xml" -Dkafka.logs.dir="$n/logs" \
    -cp "$CP" kafka.Kafka "$n/server.properties" >> "$n/logs/stdout.txt" 2>&1 &
  BROKER_PID=$!
  for _ in $(seq 1 600); do
    if tail -n +"$((before + 1))" "$log" 2>/dev/null | grep -q 'Kafka Server started'; then return 0; fi
    kill -0 "$BROKER_PID" 2>/dev/null || { echo "broker exited; see $n/logs" >&2; tail -20 "$n/logs/stdout.txt" >&2; exit 1; }
    sleep 0.1
  done
  echo "broker did not start within 60 s" >&2; exit 1
}

stop_broker() {
  kill -TERM "$BROKER_PID"
  wait "$BROKER_PID" || true
  BROKER_PID=
}

# Lines of server.log since the last start that mean the broker judged files bad, then all WARN/ERROR lines.
check_restart_log() { # NODE_DIR OUT
  local n=$1 out=$2 from; from=$(cat "$n/logs/.start-line")
  tail -n +"$((from + 1))" "$n/logs/server.log" > "$out.all"
  grep -E 'Found an orphaned index file|Could not find offset index file|Found a corrupted index file|Found invalid messages in log segment|Corruption found in segment|Found invalid offset during recovery|Deleting all segments because logEndOffset|Failed to load producer snapshot|Resetting first dirty offset|which is larger than the log end offset|Failed to access checkpoint file|is not in the form of topic-partition' \
    "$out.all" > "$out.failures" || true
  grep -E '^\[[^]]*\] (WARN|ERROR) ' "$out.all" > "$out.warn" || true
  # WARN lines every start of this node prints, whatever its files hold
  grep -v -E 'Performing controller activation|The config `log.cleaner.enable` is deprecated' "$out.warn" \
    > "$out.warn-unexpected" || true
  grep -o 'Completed load of .*' "$out.all" > "$out.loads" || true
  echo "failure lines: $(wc -l < "$out.failures"), WARN/ERROR lines: $(wc -l < "$out.warn")" \
    "(unexpected: $(wc -l < "$out.warn-unexpected")), logs loaded: $(wc -l < "$out.loads")," \
    "segments recovered: $(grep -c 'Recovering unflushed segment' "$out.all" || true)"
}

layout() { # NODE_DIR OUT
  (cd "$1" && find data-* -type f -printf '%p %s\n' | sort) > "$2"
}

topic_configs() { # TOPIC -> --config flags as the Fixture set them (and the internal topics' broker settings)
  local seg="--config internal.segment.bytes=65536"
  case $1 in
    codec-none)   echo "$seg --config delete.retention.ms=60000 --config min.cleanable.dirty.ratio=0.1 --config min.compaction.lag.ms=0";;
    codec-gzip)   echo "$seg --config delete.retention.ms=1000 --config min.cleanable.dirty.ratio=0.3 --config min.compaction.lag.ms=0";;
    codec-snappy) echo "$seg --config delete.retention.ms=3600000 --config min.cleanable.dirty.ratio=0.2 --config min.compaction.lag.ms=600000";;
    codec-lz4)    echo "$seg --config min.cleanable.dirty.ratio=0.05 --config min.compaction.lag.ms=0";;
    codec-zstd)   echo "$seg --config delete.retention.ms=120000 --config min.cleanable.dirty.ratio=0.01 --config min.compaction.lag.ms=0";;
    txn)          echo "$seg --config delete.retention.ms=5000 --config min.cleanable.dirty.ratio=0.1 --config min.compaction.lag.ms=0";;
    __consumer_offsets|__transaction_state) echo "$seg";;
    *) return 1;;
  esac
}

# ------------------------------------------------------------------------------------------------- the walk
say "work dir $WORK, broker $BOOT, controller 127.0.0.1:$CPORT"
write_props "$NODE"

say "cluster id and format (transaction.version ${TXV:-default})"
CLUSTER_ID=$(java "${JVM[@]}" -cp "$CP" kafka.tools.StorageTool random-uuid)
echo "cluster id $CLUSTER_ID"
FEATURES=()
[ -n "${TXV:-}" ] && FEATURES=(-f "transaction.version=$TXV")
step format java "${JVM[@]}" -Dlog4j2.configurationFile="$HERE/log4j2-tools.xml" -cp "$CP" \
  kafka.tools.StorageTool format -t "$CLUSTER_ID" -c "$NODE/server.properties" "${FEATURES[@]}"
# The same with the pre-KIP-890 transactions, on a throwaway node: -f transaction.version=1.
write_props "$WORK/node-tv1"
step format-tv1 java "${JVM[@]}" -Dlog4j2.configurationFile="$HERE/log4j2-tools.xml" -cp "$CP" \
  kafka.tools.StorageTool format -t "$CLUSTER_ID" -c "$WORK/node-tv1/server.properties" -f transaction.version=1

say "start"
step start start_broker "$NODE"

say "fixture: main, then hang"
step fixture-main to "$WORK/fixture-main.json" "${TOOLS[@]}" logcompact.interop.Fixture \
  --bootstrap "$BOOT" --profile main --expect-out "$WORK/fixture-expect.jsonl"
step fixture-hang to "$WORK/fixture-hang.json" "${TOOLS[@]}" logcompact.interop.Fixture \
  --bootstrap "$BOOT" --profile hang
step topics to "$WORK/topics.json" "${TOOLS[@]}" logcompact.interop.Topics \
  --bootstrap "$BOOT" --internal --groups
# Let the metadata log roll past the last records and take a snapshot of them.
sleep 6

say "stop (SIGTERM, wait)"
step stop stop_broker
grep -q 'shut down completed' "$NODE/logs/server.log" && echo "shut down completed"
layout "$NODE" "$WORK/layout-after-fixture.txt"
cat "$WORK/layout-after-fixture.txt"
cp -a "$NODE" "$WORK/node-fixture"   # the fixture as the broker left it: one transaction still open

say "restart on its own files"
step restart start_broker "$NODE"
check_restart_log "$NODE" "$WORK/restart"

say "consume the transactional topic under both isolations"
for p in 0 1; do
  for iso in read_uncommitted read_committed; do
    step "consume-txn-$p-${iso#read_}" to2 "$WORK/consume-txn-$p-$iso.jsonl" "$WORK/consume-txn-$p-$iso.summary" \
      "${TOOLS[@]}" logcompact.interop.Consume --bootstrap "$BOOT" --topic txn --partition "$p" --isolation "$iso"
    cat "$WORK/consume-txn-$p-$iso.summary"
  done
done

say "DumpLogSegments"
D0=$NODE/data-0
dir_of() { ls -d "$NODE"/data-*/"$1" | head -1; }
first_file() { ls "$(dir_of "$1")"/*"$2" | head -1; }
DUMP=("${TOOLS[@]}" org.apache.kafka.tools.DumpLogSegments)
step dump-gzip to "$WORK/dump-codec-gzip.txt" "${DUMP[@]}" --deep-iteration --print-data-log \
  --files "$(first_file codec-gzip-0 .log)"
step dump-txn to2 "$WORK/dump-txn.txt" "$WORK/dump-txn.txt.stderr" "${DUMP[@]}" --deep-iteration --print-data-log \
  --files "$(first_file txn-0 .log),$(ls "$(dir_of txn-0)"/*.txnindex | head -1)"
step dump-offsets to "$WORK/dump-consumer-offsets.txt" "${DUMP[@]}" --offsets-decoder \
  --files "$(first_file __consumer_offsets-0 .log)"
step dump-txn-state to "$WORK/dump-transaction-state.txt" "${DUMP[@]}" \
  --transaction-log-decoder --files "$(first_file __transaction_state-0 .log)"
step dump-metadata to "$WORK/dump-cluster-metadata.txt" "${DUMP[@]}" \
  --cluster-metadata-decoder --files "$(first_file __cluster_metadata-0 .log)"
SNAP=$(ls "$D0"/__cluster_metadata-0/*.checkpoint | tail -1)
step dump-snapshot to "$WORK/dump-metadata-snapshot.txt" "${DUMP[@]}" \
  --cluster-metadata-decoder --files "$SNAP"
wc -l "$WORK"/dump-*.txt

say "the open transaction: TransactionsCommand"
TXC=("${TOOLS[@]}" org.apache.kafka.tools.TransactionsCommand --bootstrap-server "$BOOT")
step txn-list "${TXC[@]}" list | tee "$WORK/txn-list.txt"
step txn-find-hanging "${TXC[@]}" find-hanging --broker-id 1 | tee "$WORK/txn-find-hanging.txt"
step txn-find-hanging-0 "${TXC[@]}" find-hanging --broker-id 1 --max-transaction-timeout 0 | tee "$WORK/txn-find-hanging-0.txt"
step txn-describe "${TXC[@]}" describe --transactional-id fixture-txn-hang | tee "$WORK/txn-describe.txt"
for p in 0 1; do "${TXC[@]}" describe-producers --topic txn --partition "$p" | tee "$WORK/txn-producers-$p.txt"; done
# abort with the values the hang profile printed (producer id/epoch, coordinator epoch) for each partition
jq -c '.partitions[]' "$WORK/fixture-hang.json" | while read -r part; do
  p=$(jq -r .partition <<<"$part")
  step "txn-abort-$p" "${TXC[@]}" abort --topic txn --partition "$p" --producer-id "$(jq -r .producer_id <<<"$part")" \
    --producer-epoch "$(jq -r .producer_epoch <<<"$part")" --coordinator-epoch "$(jq -r .coordinator_epoch <<<"$part")"
done
for p in 0 1; do
  "${TOOLS[@]}" logcompact.interop.Consume --bootstrap "$BOOT" --topic txn --partition "$p" --isolation read_committed \
    > "$WORK/consume-txn-$p-read_committed-after-abort.jsonl" 2> "$WORK/consume-txn-$p-after-abort.summary"
  cat "$WORK/consume-txn-$p-after-abort.summary"
done
step stop-2 stop_broker

say "OfflineClean (Kafka's Cleaner) on a copy of every compacted partition of the fixture node"
rm -rf "$WORK/node-cleaned"
cp -a "$WORK/node-fixture" "$WORK/node-cleaned"
NOW=$(( $(date +%s%3N) + 3600000 ))   # an hour ahead: past codec-snappy's min.compaction.lag.ms
echo "now-ms $NOW" | tee "$WORK/offline-clean-now.txt"
for d in "$WORK"/node-cleaned/data-*; do
  : > "$d/.cleaner-lines"
  for pd in "$d"/*-[0-9]*; do
    name=$(basename "$pd"); topic=${name%-*}; part=${name##*-}
    cfg=$(topic_configs "$topic") || continue
    # shellcheck disable=SC2086
    step "clean-$name" to2 "$WORK/offline-clean-$name.json" "$WORK/offline-clean-$name.log" \
      "${TOOLS[@]}" -ea org.apache.kafka.storage.internals.log.OfflineClean --dir "$pd" --now-ms "$NOW" \
      --buffer-bytes 16777216 --until-clean $cfg
    jq -c '{tp: "\(.topic)-\(.partition)", passes: (.passes|length), stop, first_dirty_offset, segments_before,
            segments_after, bytes_before, bytes_after, secs: [.passes[].elapsed_secs], peak_rss_kib}' \
      "$WORK/offline-clean-$name.json"
    echo "$topic $part $(jq .first_dirty_offset "$WORK/offline-clean-$name.json")" >> "$d/.cleaner-lines"
  done
  # the cleaner checkpoint a broker would have written, then no clean-shutdown marker and no recovery points:
  # the broker re-reads (recovers) every segment it loads.
  { echo 0; wc -l < "$d/.cleaner-lines"; cat "$d/.cleaner-lines"; } > "$d/cleaner-offset-checkpoint"
  rm -f "$d/.cleaner-lines" "$d/.kafka_cleanshutdown" "$d/recovery-point-offset-checkpoint"
done
layout "$WORK/node-cleaned" "$WORK/layout-cleaned.txt"

say "start a broker over the cleaned copy"
sed -i "s#$NODE/#$WORK/node-cleaned/#g" "$WORK/node-cleaned/server.properties"
: > "$WORK/node-cleaned/logs/server.log"
step start-cleaned start_broker "$WORK/node-cleaned"
check_restart_log "$WORK/node-cleaned" "$WORK/cleaned-start"
for p in 0 1; do
  for iso in read_uncommitted read_committed; do
    "${TOOLS[@]}" logcompact.interop.Consume --bootstrap "$BOOT" --topic txn --partition "$p" --isolation "$iso" \
      > "$WORK/cleaned-consume-txn-$p-$iso.jsonl" 2> "$WORK/cleaned-consume-txn-$p-$iso.summary"
    cat "$WORK/cleaned-consume-txn-$p-$iso.summary"
  done
done
step stop-cleaned stop_broker

say "timings"
cat "$TIMINGS"
echo "work dir: $WORK"
