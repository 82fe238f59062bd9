#!/usr/bin/env bash
# The Python client example (client/python/shardplan_client.py) against the real server,
# with the stubs generated at build time.
# Usage: client_python_e2e.sh SHARDPLAN_SERVER_BIN PYTHON3 STUBS_DIR EXAMPLE_PY
source "$(dirname "$0")/client_server_lib.sh"
SERVER_BIN=$1
PY=$2
STUBS=$3
EXAMPLE=$4
start_server "${SERVER_BIN}"

rc=0
PYTHONPATH="${STUBS}" "${PY}" "${EXAMPLE}" --server "${SERVER}" --model llama-3.1-8b --gpus 8 \
  --method random --max-evaluations 150 --max-seconds 20 --timeout 120 --json \
  >"${WORK}/out" 2>"${WORK}/err" || rc=$?
[[ ${rc} -eq 0 ]] || { cat "${WORK}/err" >&2; fail "example exited ${rc}"; }
"${PY}" - "${WORK}/out" <<'PYEOF' || fail "example output is not JSON updates ending with final"
import json, sys
updates = [json.loads(l) for l in open(sys.argv[1]).read().splitlines()]
assert len(updates) >= 1 and updates[-1].get("final") is True, updates[-1:]
print(f"python example: {len(updates)} updates")
PYEOF

# Human-readable mode and an error: unknown model → INVALID_ARGUMENT on stderr, exit 1.
PYTHONPATH="${STUBS}" "${PY}" "${EXAMPLE}" --server "${SERVER}" --model llama-3.1-8b --gpus 8 \
  --method megatron --max-evaluations 50 --timeout 60 >"${WORK}/out" 2>"${WORK}/err" \
  || fail "human-readable run failed: $(cat "${WORK}/err")"
grep -q "final" "${WORK}/out" || fail "no final line: $(cat "${WORK}/out")"
rc=0
PYTHONPATH="${STUBS}" "${PY}" "${EXAMPLE}" --server "${SERVER}" --model nope --gpus 8 \
  --timeout 30 >"${WORK}/out" 2>"${WORK}/err" || rc=$?
[[ ${rc} -eq 1 ]] || fail "unknown model: exit ${rc}, want 1"
grep -q "INVALID_ARGUMENT" "${WORK}/err" || fail "unknown model: $(cat "${WORK}/err")"
echo "python client e2e: OK"
