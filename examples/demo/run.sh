#!/usr/bin/env bash
# make demo: start the collector on loopback, run a simulated 16-rank training job through
# it for about half a minute, stop the collector (it flushes on shutdown), then print the
# attribution results next to the simulator's injected ground truth, and the reference and
# the evidence mode side by side on the same job.
#
# Everything it starts is stopped on exit. Ports and durations can be changed:
#   DEMO_DURATION=30s DEMO_OTLP_HTTP_PORT=24318 DEMO_HEALTH_PORT=24133 bash examples/demo/run.sh
set -euo pipefail
cd "$(dirname "$0")/../.."

OTELCOL=${OTELCOL:-build/otelcol-collectiveattr-demo}
SIM=${SIM:-bin/gpujobsim}
CLI=${CLI:-bin/collectiveattr}
DURATION=${DEMO_DURATION:-30s}
export DEMO_OUT_DIR=${DEMO_OUT_DIR:-$PWD/.demo}
export DEMO_HEALTH_PORT=${DEMO_HEALTH_PORT:-24133}
export DEMO_OTLP_GRPC_PORT=${DEMO_OTLP_GRPC_PORT:-24317}
export DEMO_OTLP_HTTP_PORT=${DEMO_OTLP_HTTP_PORT:-24318}

for f in "$OTELCOL" "$SIM" "$CLI"; do
  [[ -x $f ]] || { echo "demo: $f is missing: run make demo (or make build and set OTELCOL)" >&2; exit 1; }
done
rm -rf "$DEMO_OUT_DIR"
mkdir -p "$DEMO_OUT_DIR/reference" "$DEMO_OUT_DIR/evidence"
log=$DEMO_OUT_DIR/collector.log

collector_pid=""
stop_collector() {
  if [[ -n $collector_pid ]] && kill -0 "$collector_pid" 2>/dev/null; then
    kill -TERM "$collector_pid"
    wait "$collector_pid" || true
  fi
  collector_pid=""
}
trap stop_collector EXIT
trap 'exit 130' INT TERM

healthy() {
  local status
  exec 3<>"/dev/tcp/127.0.0.1/$DEMO_HEALTH_PORT" || return 1
  printf 'GET / HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n' >&3
  read -r -t 2 status <&3 || true
  exec 3<&- 3>&-
  [[ $status == *" 200 "* ]]
}

echo "==> starting the collector (log: $log)"
"$OTELCOL" --config examples/demo/config.yaml >"$log" 2>&1 &
collector_pid=$!
for _ in $(seq 1 200); do
  if healthy 2>/dev/null; then break; fi
  if ! kill -0 "$collector_pid" 2>/dev/null; then
    echo "demo: the collector exited during start-up:" >&2
    tail -n 30 "$log" >&2
    exit 1
  fi
  sleep 0.1
done
healthy 2>/dev/null || { echo "demo: the collector did not become healthy" >&2; tail -n 30 "$log" >&2; exit 1; }

# Beyond the simulator's defaults: a non-collective spike on every rank during an all_reduce
# (the reference calls it collective; only NCCL's accounting tells it apart) and NCCL's
# accounting itself (the nccl.comm.memory.total gauge, comm_memory_stats records).
echo "==> running a simulated training job for $DURATION (16 ranks on 2 hosts, 10 Hz memory samples)"
"$SIM" -duration "$DURATION" -otlp-endpoint "127.0.0.1:$DEMO_OTLP_HTTP_PORT" -truth-json "$DEMO_OUT_DIR/truth.json" \
  -stormlog "$DEMO_OUT_DIR/stormlog.jsonl" -cotimed-decoys 1 -nccl-stats

echo "==> stopping the collector (it evaluates every job once more and flushes)"
stop_collector

# The pages are the CLI's attribution of the same job's stormlog records (same engines, whole
# job at once), one per mode; written before the checks so that a failing demo still leaves
# them to look at.
"$CLI" report --phases "$DEMO_OUT_DIR/stormlog.jsonl" -o "$DEMO_OUT_DIR/report.html"
"$CLI" report --mode evidence --phases "$DEMO_OUT_DIR/stormlog.jsonl" -o "$DEMO_OUT_DIR/report-evidence.html"

ref=$DEMO_OUT_DIR/reference ev=$DEMO_OUT_DIR/evidence
status=0
echo
echo "==> the reference mode (the collector's default, stormlog's heuristic) against the ground truth"
"$SIM" report -check -truth "$DEMO_OUT_DIR/truth.json" "$ref/logs.json" "$ref/traces.json" || status=1
echo
echo "==> both modes side by side, a verdict per mode, and which one to trust"
"$SIM" modes -check -truth "$DEMO_OUT_DIR/truth.json" -reference "$ref/logs.json" -reference "$ref/traces.json" \
  -evidence "$ev/logs.json" -evidence "$ev/traces.json" || status=1
echo
echo "Collector log: $log; each mode's result spans, metrics and logs (file exporter, OTLP JSON): $ref, $ev"
echo "HTML reports of the job (open them in a browser): $DEMO_OUT_DIR/report.html (reference), $DEMO_OUT_DIR/report-evidence.html (evidence)"
exit $status
