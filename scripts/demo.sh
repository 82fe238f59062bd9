#!/usr/bin/env bash
# make demo: starts shardplan-server on free loopback ports with its elite store under
# <build_dir>/demo/, asks it for a plan for llama-3.1-70b on 16 H100s (2048 prompt / 512
# output tokens), shows the plans as the stream delivers them, evaluates the final plan for
# its full breakdown, shows a few metrics, and stops the server with SIGTERM.
# Usage: scripts/demo.sh [build_dir]   (run it twice: the second search warm-starts)
set -euo pipefail

BUILD_DIR="${1:-build}"
SERVER="$BUILD_DIR/bin/shardplan-server"
CLI="$BUILD_DIR/bin/shardplan"
DEMO_DIR="$BUILD_DIR/demo"
SCRIPTS="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# A realistic interactive-serving SLO: without one, throughput alone favours huge batches.
MODEL=(--model llama-3.1-70b --gpus 16 --isl 2048 --osl 512 --max-tpot-ms 50)

for binary in "$SERVER" "$CLI"; do
  if [ ! -x "$binary" ]; then
    echo "demo: $binary not found; run \`make\` first" >&2
    exit 1
  fi
done
mkdir -p "$DEMO_DIR"
READY="$DEMO_DIR/ready.json"
LOG="$DEMO_DIR/server.log"
rm -f "$READY"

"$SERVER" --grpc_address=127.0.0.1:0 --metrics_address=127.0.0.1:0 \
  --ready_file="$READY" --store="$DEMO_DIR/store.db" 2>"$LOG" &
SERVER_PID=$!
stop_server() {
  if kill -0 "$SERVER_PID" 2>/dev/null; then
    kill -TERM "$SERVER_PID" 2>/dev/null || true
    wait "$SERVER_PID" 2>/dev/null || true
  fi
}
trap stop_server EXIT

# Wait for the ready file (deadline 60 s; the server writes it once it serves).
deadline=$((SECONDS + 60))
until [ -s "$READY" ]; do
  if ! kill -0 "$SERVER_PID" 2>/dev/null; then
    echo "demo: the server exited during startup:" >&2
    cat "$LOG" >&2
    exit 1
  fi
  if [ "$SECONDS" -ge "$deadline" ]; then
    echo "demo: the server did not become ready within 60 s; log: $LOG" >&2
    exit 1
  fi
  sleep 0.1
done
GRPC_PORT=$(sed -n 's/.*"grpc_port":\([0-9]*\).*/\1/p' "$READY")
METRICS_PORT=$(sed -n 's/.*"metrics_port":\([0-9]*\).*/\1/p' "$READY")
ADDR="127.0.0.1:$GRPC_PORT"
echo "== shardplan-server (pid $SERVER_PID) serving gRPC on $ADDR, metrics on" \
     "http://127.0.0.1:$METRICS_PORT/metrics, store $DEMO_DIR/store.db, log $LOG"
echo
echo "== shardplan plan ${MODEL[*]} (streamed updates as they arrive)"
FLAGS_FILE="$DEMO_DIR/final-plan.flags"
rm -f "$FLAGS_FILE"
if command -v python3 >/dev/null 2>&1; then
  "$CLI" plan --server "$ADDR" "${MODEL[@]}" -o json | python3 -u "$SCRIPTS/demo_format.py" "$FLAGS_FILE"
else
  "$CLI" plan --server "$ADDR" "${MODEL[@]}" -o json
fi

if [ -s "$FLAGS_FILE" ]; then
  echo
  echo "== shardplan evaluate: the final plan with its full breakdown"
  # shellcheck disable=SC2046
  "$CLI" evaluate --server "$ADDR" "${MODEL[@]}" $(cat "$FLAGS_FILE")
fi

echo
echo "== a few metrics (http://127.0.0.1:$METRICS_PORT/metrics)"
if command -v curl >/dev/null 2>&1; then
  curl -s "http://127.0.0.1:$METRICS_PORT/metrics" |
    grep -E '^shardplan_(plan_requests_total\{code="OK"|cost_model_evaluations_total|rl_iterations_total|elite_store_plans|warm_starts_total|time_to_first_plan_seconds_(sum|count)|search_duration_seconds_(sum|count))' || true
fi

echo
echo "== stopping the server (SIGTERM)"
kill -TERM "$SERVER_PID"
rc=0
wait "$SERVER_PID" || rc=$?
trap - EXIT
echo "shardplan-server exited with status $rc"
exit "$rc"
