# Sourced by the client e2e scripts: starts the real shardplan-server on free loopback ports
# (127.0.0.1:0 + --ready_file) in a temp dir, and stops it on exit.
#   start_server SERVER_BIN  -> sets WORK, SERVER_PID, GRPC_PORT, METRICS_PORT, SERVER
set -euo pipefail

WORK="$(mktemp -d -t shardplan-client-e2e.XXXXXX)"
SERVER_PID=""
cleanup_server() {
  local rc=$?
  if [[ -n "${SERVER_PID}" ]] && kill -0 "${SERVER_PID}" 2>/dev/null; then
    kill -TERM "${SERVER_PID}" 2>/dev/null || true
    wait "${SERVER_PID}" 2>/dev/null || true
  fi
  if [[ ${rc} -ne 0 && -f "${WORK}/server.log" ]]; then
    echo "---- server log (last 30 lines) ----" >&2
    tail -n 30 "${WORK}/server.log" >&2
  fi
  rm -rf "${WORK}"
  exit ${rc}
}
trap cleanup_server EXIT
trap 'exit 130' INT TERM

fail() { echo "FAIL: $*" >&2; exit 1; }

# Polls `cmd` until it succeeds or `seconds` pass.
wait_for() {
  local seconds=$1; shift
  local deadline=$((SECONDS + seconds))
  until "$@"; do
    if (( SECONDS >= deadline )); then return 1; fi
    sleep 0.1
  done
}

start_server() {
  local bin=$1; shift
  "${bin}" --grpc_address=127.0.0.1:0 --metrics_address=127.0.0.1:0 \
    --store="${WORK}/store.db" --ready_file="${WORK}/ready.json" "$@" \
    >"${WORK}/server.log" 2>&1 &
  SERVER_PID=$!
  wait_for 60 test -s "${WORK}/ready.json" || fail "server did not write its ready file in 60 s"
  GRPC_PORT=$(sed -n 's/.*"grpc_port" *: *\([0-9]*\).*/\1/p' "${WORK}/ready.json")
  METRICS_PORT=$(sed -n 's/.*"metrics_port" *: *\([0-9]*\).*/\1/p' "${WORK}/ready.json")
  [[ -n "${GRPC_PORT}" && -n "${METRICS_PORT}" ]] || fail "bad ready file: $(cat "${WORK}/ready.json")"
  SERVER="127.0.0.1:${GRPC_PORT}"
}
