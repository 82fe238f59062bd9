#!/usr/bin/env bash
# Smoke run of shardplan-load against the real server (the full benchmark is in
# docs/benchmarks.md):
# a few seconds of concurrent streams and EvaluatePlan load; no call may fail or hang, and
# the report must carry the server's peak RSS.
# Usage: client_load_e2e.sh SHARDPLAN_SERVER_BIN SHARDPLAN_LOAD_BIN PYTHON3
source "$(dirname "$0")/client_server_lib.sh"
SERVER_BIN=$1
LOAD=$2
PY=$3
start_server "${SERVER_BIN}"
rc=0
"${LOAD}" --server "${SERVER}" --streams 4 --evaluate-rps 200 --duration-seconds 2 \
  --max-seconds 1 --max-evaluations 200 --server-pid "${SERVER_PID}" --output json \
  >"${WORK}/out" 2>"${WORK}/err" || rc=$?
[[ ${rc} -eq 0 ]] || { cat "${WORK}/out" "${WORK}/err" >&2; fail "shardplan-load exited ${rc}"; }
"${PY}" - "${WORK}/out" <<'PYEOF' || fail "bad load report: $(cat "${WORK}/out")"
import json, sys
r = json.load(open(sys.argv[1]))
s, e = r["planSharding"], r["evaluatePlan"]
assert s["failed"] == 0 and e["failed"] == 0, r
assert s["completed"] + s["rejected"] >= 4, s
assert e["completed"] >= 200, e
assert 0 < e["latency"]["p50Seconds"] <= e["latency"]["p99Seconds"] <= e["latency"]["maxSeconds"], e
assert r["serverPeakRssBytes"] > 1e6, r
print(f"load smoke: {s['completed']} searches, {e['completed']} evaluations, "
      f"p99 {e['latency']['p99Seconds'] * 1e3:.2f} ms, peak RSS {r['serverPeakRssBytes'] / 1e6:.0f} MB")
PYEOF
echo "shardplan-load smoke: OK"
