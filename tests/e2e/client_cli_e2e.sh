#!/usr/bin/env bash
# End-to-end test of the `shardplan` CLI against the real shardplan-server.
# Usage: client_cli_e2e.sh SHARDPLAN_SERVER_BIN SHARDPLAN_BIN PYTHON3
source "$(dirname "$0")/client_server_lib.sh"
SERVER_BIN=$1
CLI=$2
PY=${3:-/usr/bin/python3}
start_server "${SERVER_BIN}"
echo "server on ${SERVER}"

# expect_rc WANT CMD...: runs CMD, stdout -> $WORK/out, stderr -> $WORK/err, checks the code.
expect_rc() {
  local want=$1; shift
  local rc=0
  "$@" >"${WORK}/out" 2>"${WORK}/err" || rc=$?
  if [[ ${rc} -ne ${want} ]]; then
    echo "stdout:" >&2; cat "${WORK}/out" >&2; echo "stderr:" >&2; cat "${WORK}/err" >&2
    fail "exit code ${rc}, want ${want}: $*"
  fi
}

# health
expect_rc 0 "${CLI}" health --server "${SERVER}"
grep -qx SERVING "${WORK}/out" || fail "health did not print SERVING: $(cat "${WORK}/out")"

# catalog
expect_rc 0 "${CLI}" catalog --server "${SERVER}"
grep -q "llama-3.1-8b" "${WORK}/out" || fail "catalog lacks llama-3.1-8b"
grep -q "h100-sxm-80gb" "${WORK}/out" || fail "catalog lacks h100-sxm-80gb"

PLAN_ARGS=(--server "${SERVER}" --model llama-3.1-8b --gpus 8 --isl 1024 --osl 256
           --max-evaluations 200 --max-seconds 20 --seed 7 --deadline-seconds 120)

# plan --output json: one JSON PlanUpdate per line, the last with final:true.
expect_rc 0 "${CLI}" plan "${PLAN_ARGS[@]}" --method random --output json
"${PY}" - "${WORK}/out" <<'PYEOF' || fail "plan --output json is not JSON lines ending with final:true"
import json, sys
lines = [l for l in open(sys.argv[1]).read().splitlines()]
assert lines, "no output"
updates = [json.loads(l) for l in lines]
assert all("plan" in u and "prediction" in u for u in updates), "update without plan/prediction"
assert updates[-1].get("final") is True, "last update is not final"
assert not any(u.get("final") for u in updates[:-1]), "final before the end"
print(f"json: {len(updates)} updates, final {updates[-1]['prediction'].get('outputTokensPerS')} tok/s")
PYEOF

# plan (table)
expect_rc 0 "${CLI}" plan "${PLAN_ARGS[@]}" --method megatron
for want in "Plan for llama-3.1-8b on 8 x h100-sxm-80gb" "Parallelism" "Throughput" "TTFT" "Memory per GPU"; do
  grep -q "${want}" "${WORK}/out" || fail "plan table lacks '${want}': $(cat "${WORK}/out")"
done

# plan --frontier-csv / --frontier-png: the final update's frontier as CSV (non-dominated,
# best throughput per GPU first) and a PNG drawn by gnuplot; the table lists top plans and
# the terminal chart.
expect_rc 0 "${CLI}" plan "${PLAN_ARGS[@]}" --method random --top-n 3 \
  --frontier-csv "${WORK}/frontier.csv" --frontier-png "${WORK}/frontier.png"
grep -q "Top 3 plans" "${WORK}/out" || fail "plan table lacks the top plans: $(cat "${WORK}/out")"
grep -q "Throughput-latency frontier" "${WORK}/out" || fail "plan table lacks the frontier chart"
"${PY}" - "${WORK}/frontier.csv" <<'PYEOF' || fail "--frontier-csv is not a sorted, non-dominated frontier"
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
assert len(rows) >= 2, rows
pts = [(float(r["output_tokens_per_s_per_gpu"]), float(r["tokens_per_s_per_user"])) for r in rows]
for (a, b), (c, d) in zip(pts, pts[1:]):
    assert a > c and b < d, (pts)
print(f"frontier: {len(pts)} points")
PYEOF
head -c 8 "${WORK}/frontier.png" | od -An -c | grep -q "P   N   G" || fail "--frontier-png did not write a PNG"
# a missing gnuplot is a clear error, not a crash
SHARDPLAN_GNUPLOT=/nonexistent/gnuplot expect_rc 1 "${CLI}" plan "${PLAN_ARGS[@]}" --method megatron \
  --frontier-png "${WORK}/never.png"
grep -q "gnuplot-nox" "${WORK}/err" || fail "missing gnuplot: $(cat "${WORK}/err")"
# a bad --top-n is a usage error
expect_rc 2 "${CLI}" plan "${PLAN_ARGS[@]}" --method megatron --top-n 99

# plan --output yaml: a manifest that parses.
expect_rc 0 "${CLI}" plan "${PLAN_ARGS[@]}" --method megatron --output yaml
"${PY}" -c "
import sys, yaml
doc = yaml.safe_load(open(sys.argv[1]))
assert doc['kind'] == 'ShardingPlan', doc
assert doc['parallelism']['tensor'] * doc['parallelism']['data'] * doc['parallelism']['pipeline'] == 8, doc
" "${WORK}/out" || fail "plan --output yaml is not a valid manifest"

# replan: from what plan --output yaml / json wrote, on the same cluster (nothing moves) and
# on one node fewer (70B, 16 -> 8 GPUs).
cp "${WORK}/out" "${WORK}/current.yaml"
expect_rc 0 "${CLI}" replan "${PLAN_ARGS[@]}" --method megatron --current "${WORK}/current.yaml"
for want in "Re-plan of llama-3.1-8b" "running" "throughput" "TPOT" "memory per GPU" "Transition" "8 GPUs unchanged"; do
  grep -q "${want}" "${WORK}/out" || fail "replan table lacks '${want}': $(cat "${WORK}/out")"
done
REPLAN_ARGS=(--server "${SERVER}" --model llama-3.1-70b --isl 1024 --osl 256 --seed 7
             --max-evaluations 300 --max-seconds 20 --deadline-seconds 120 --method genetic)
expect_rc 0 "${CLI}" plan "${REPLAN_ARGS[@]}" --gpus 16 --output json
cp "${WORK}/out" "${WORK}/current.jsonl"
expect_rc 0 "${CLI}" replan "${REPLAN_ARGS[@]}" --gpus 8 --current "${WORK}/current.jsonl" --output json
"${PY}" - "${WORK}/out" <<'PYEOF' || fail "replan --output json lacks the transition"
import json, sys
updates = [json.loads(l) for l in open(sys.argv[1]).read().splitlines()]
assert updates and all("transition" in u for u in updates), "update without transition"
t = updates[-1]["transition"]
# A node is gone: its requests' KV cache is lost; the bytes add up (peers + storage, per node).
assert t.get("kvBytesLost", 0) > 0, t
total = t.get("totalBytes", 0)
assert abs(total - t.get("peerBytes", 0) - t.get("storageBytes", 0)) <= 1e-6 * max(1, total), t
assert abs(total - sum(n.get("bytes", 0) for n in t.get("nodeLoads", []))) <= 1e-6 * max(1, total), t
assert (total > 0) == (t.get("estimatedSeconds", 0) > 0), t
print(f"replan: {t.get('totalBytes', 0) / 1e9:.1f} GB, KV lost {t['kvBytesLost'] / 1e9:.1f} GB")
PYEOF
# A removed node that is not in the running cluster is the user's mistake (exit 4).
expect_rc 4 "${CLI}" replan "${REPLAN_ARGS[@]}" --gpus 8 --current "${WORK}/current.jsonl" --removed-nodes 5
grep -q "current.removed_nodes\[0\]" "${WORK}/err" || fail "bad --removed-nodes message: $(cat "${WORK}/err")"
expect_rc 2 "${CLI}" replan "${REPLAN_ARGS[@]}" --gpus 8 --current "${WORK}/missing.json"

# plan --emit vllm / sglang / trtllm
expect_rc 0 "${CLI}" plan "${PLAN_ARGS[@]}" --method megatron --emit vllm
grep -q "vllm serve meta-llama/Llama-3.1-8B-Instruct" "${WORK}/out" || fail "--emit vllm: $(cat "${WORK}/out")"
grep -q -- "--tensor-parallel-size" "${WORK}/out" || fail "--emit vllm lacks --tensor-parallel-size"
expect_rc 0 "${CLI}" plan "${PLAN_ARGS[@]}" --method megatron --emit sglang
grep -q "sglang.launch_server --model-path meta-llama/Llama-3.1-8B-Instruct" "${WORK}/out" || fail "--emit sglang"
expect_rc 0 "${CLI}" plan "${PLAN_ARGS[@]}" --method megatron --emit trtllm
grep -q "trtllm-serve meta-llama/Llama-3.1-8B-Instruct" "${WORK}/out" || fail "--emit trtllm"
grep -q "aiperf profile" "${WORK}/out" || fail "--emit trtllm lacks the benchmark command"
# an engine version without a flag table is a usage error, before anything is sent
expect_rc 2 "${CLI}" plan "${PLAN_ARGS[@]}" --method megatron --emit vllm --engine-version 0.1
expect_rc 0 "${CLI}" plan "${PLAN_ARGS[@]}" --method megatron --emit vllm --engine-version 0.11.2
grep -q "vllm bench serve" "${WORK}/out" || fail "--emit vllm lacks the benchmark command"
expect_rc 0 "${CLI}" plan "${PLAN_ARGS[@]}" --method megatron --emit k8s-sglang
# one node per instance: a Deployment and its Service (LeaderWorkerSet only across nodes)
grep -q "kind: Deployment" "${WORK}/out" || fail "--emit k8s-sglang: $(cat "${WORK}/out")"
grep -q "kind: Service" "${WORK}/out" || fail "--emit k8s-sglang lacks the Service"
expect_rc 0 "${CLI}" plan "${PLAN_ARGS[@]}" --method megatron --emit dynamo
grep -q "kind: DynamoGraphDeployment" "${WORK}/out" || fail "--emit dynamo: $(cat "${WORK}/out")"

# evaluate (table and JSON)
expect_rc 0 "${CLI}" evaluate --server "${SERVER}" --model llama-3.1-8b --gpus 8 --tp 8 \
  --op attention=column --batch-size 32
grep -q "Throughput" "${WORK}/out" || fail "evaluate table lacks Throughput"
expect_rc 0 "${CLI}" evaluate --server "${SERVER}" --model llama-3.1-8b --gpus 8 --tp 4 --dp 2 --output json
"${PY}" -c "
import json, sys
r = json.load(open(sys.argv[1]))
assert r['plan']['tp'] == 4 and r['plan']['dp'] == 2, r['plan']
assert 'outputTokensPerS' in r['prediction'] or not r['prediction'].get('feasible'), r['prediction']
" "${WORK}/out" || fail "evaluate --output json"

# Errors and exit codes.
expect_rc 4 "${CLI}" plan --server "${SERVER}" --model no-such-model --gpus 8 --max-evaluations 10
grep -q "INVALID_ARGUMENT" "${WORK}/err" || fail "invalid model: no INVALID_ARGUMENT: $(cat "${WORK}/err")"
grep -q "model" "${WORK}/err" || fail "invalid model: no field path: $(cat "${WORK}/err")"
grep -q "no-such-model" "${WORK}/err" || fail "invalid model: value not named: $(cat "${WORK}/err")"

expect_rc 4 "${CLI}" evaluate --server "${SERVER}" --model llama-3.1-8b --gpus 8 --tp 8 --op attention=diagonal
grep -q "diagonal" "${WORK}/err" || fail "bad dim not named: $(cat "${WORK}/err")"

# Deadline: a long search with a 1 s deadline ends with DEADLINE_EXCEEDED (exit 6).
expect_rc 6 "${CLI}" plan --server "${SERVER}" --model llama-3.1-405b --gpus 64 --method rl \
  --max-evaluations 100000 --max-seconds 60 --deadline-seconds 1
grep -q "deadline-seconds" "${WORK}/err" || fail "deadline message: $(cat "${WORK}/err")"

# Unreachable: a port we just bound and released has no listener.
FREE_PORT=$("${PY}" -c "import socket; s=socket.socket(); s.bind(('127.0.0.1',0)); print(s.getsockname()[1])")
expect_rc 3 "${CLI}" health --server "127.0.0.1:${FREE_PORT}"
grep -q "cannot reach shardplan-server at 127.0.0.1:${FREE_PORT}" "${WORK}/err" || fail "unreachable message: $(cat "${WORK}/err")"
expect_rc 3 "${CLI}" plan --server "127.0.0.1:${FREE_PORT}" --model llama-3.1-8b --gpus 8

# Usage errors never reach the server.
expect_rc 2 "${CLI}" plan --server "${SERVER}" --model llama-3.1-8b --gpus abc
grep -q '"abc"' "${WORK}/err" || fail "bad flag value not quoted: $(cat "${WORK}/err")"
expect_rc 2 "${CLI}" plan --server "${SERVER}" --gpus 8
expect_rc 2 "${CLI}" plan --server "${SERVER}" --model-file "${WORK}/missing.yaml" --gpus 8

# A model spec file in YAML goes through the server.
cat > "${WORK}/tiny.yaml" <<'YAML'
name: tiny-llama
family: llama
hiddenSize: 2048
numLayers: 16
numAttentionHeads: 16
numKeyValueHeads: 8
intermediateSize: 8192
vocabSize: 32000
YAML
expect_rc 0 "${CLI}" evaluate --server "${SERVER}" --model-file "${WORK}/tiny.yaml" --gpus 8 --tp 2 --dp 4
grep -q "tiny-llama" "${WORK}/out" || fail "model file: $(cat "${WORK}/out")"

# calibrate: measured runs (CSV + vLLM --save-result JSON) -> a stored profile that a
# later evaluate uses; unknown profiles list it; a bad file names file:line and field.
CAL_DATA="$(dirname "$0")/../client/data/calibration"
expect_rc 0 "${CLI}" calibrate --server "${SERVER}" --name e2e-70b --tp 4 --weight-dtype fp8 \
  --results "${CAL_DATA}/runs.csv" "${CAL_DATA}/vllm_result.json"
# 5 runs, every third held out; a run the cost model finds infeasible is left out of the fit.
grep -Eq "Profile e2e-70b \(engine vllm, from h100-vllm\): fitted on [34] runs, measured on 1 held-out" "${WORK}/out" \
  || fail "calibrate summary: $(cat "${WORK}/out")"
grep -q "Skipped 1 disaggregated and 1 queue-bound" "${WORK}/out" || fail "calibrate skips: $(cat "${WORK}/out")"
EVAL_70B=(--server "${SERVER}" --model llama-3.1-70b --gpus 4 --tp 4 --isl 1024 --osl 1024
          --concurrency 16 --weight-dtype fp8 --engine vllm)
expect_rc 0 "${CLI}" evaluate "${EVAL_70B[@]}" --calibration-profile e2e-70b
grep -q "Calibration *e2e-70b" "${WORK}/out" || fail "evaluate with the profile: $(cat "${WORK}/out")"
expect_rc 4 "${CLI}" evaluate "${EVAL_70B[@]}" --calibration-profile nope
grep -q "e2e-70b" "${WORK}/err" || fail "unknown profile does not list e2e-70b: $(cat "${WORK}/err")"
printf 'backend,model_path,isl,osl,batch_size,tp_size,silicon_ttft_ms,silicon_tpot_ms\nvllm,llama-3.1-70b,1024,128,16,4,fast,10\n' \
  > "${WORK}/bad.csv"
expect_rc 2 "${CLI}" calibrate --server "${SERVER}" --name x --results "${WORK}/bad.csv"
grep -q "bad.csv:2: silicon_ttft_ms" "${WORK}/err" || fail "bad results file: $(cat "${WORK}/err")"

# request rates: percentiles, capacity and cost at the rate (evaluate); the fewest GPUs
# carrying a rate (plan --goal min-gpus) names its cluster; a rate no cluster carries is
# an answer naming the limit, not an error or a hang.
SLO_ARGS=(--server "${SERVER}" --model llama-3.1-8b --isl 1000 --osl 200 --slo-percentile 99
          --max-ttft-ms 2000 --max-tpot-ms 50)
RATE_ARGS=("${SLO_ARGS[@]}" --request-rate 5 --input-dist uniform:500:1500)
expect_rc 0 "${CLI}" evaluate "${RATE_ARGS[@]}" --gpus 1 --tp 1 --hardware-options h100-sxm-80gb:2.5
grep -q "At the rate *TTFT p50/p90/p99" "${WORK}/out" || fail "evaluate at a rate: $(cat "${WORK}/out")"
grep -q 'Cost *\$2.50/hour' "${WORK}/out" || fail "evaluate cost: $(cat "${WORK}/out")"
expect_rc 2 "${CLI}" evaluate "${RATE_ARGS[@]}" --gpus 1 --tp 1 --output-dist uniform:9
grep -q "output-dist" "${WORK}/err" || fail "bad --output-dist: $(cat "${WORK}/err")"
expect_rc 4 "${CLI}" evaluate "${SLO_ARGS[@]}" --request-rate 5 --gpus 1 --tp 1 --input-dist uniform:900:100
grep -q "workload.input_tokens_distribution.max" "${WORK}/err" || fail "inverted dist: $(cat "${WORK}/err")"
expect_rc 0 "${CLI}" plan "${RATE_ARGS[@]}" --gpus 16 --goal min-gpus --output json --deadline-seconds 120
"${PY}" - "${WORK}/out" <<'PYEOF' || fail "min-gpus: $(cat "${WORK}/out")"
import json, sys
updates = [json.loads(l) for l in open(sys.argv[1]).read().splitlines()]
assert updates and all("chosenCluster" in u for u in updates), updates
final = updates[-1]
assert final.get("final") is True
c, p = final["chosenCluster"], final["prediction"]
assert c["hardware"] == "h100-sxm-80gb" and 1 <= c["numGpus"] <= 16, c
assert p["maxRequestRate"] >= 5 and p["ttftMsP99"] <= 2000, p
PYEOF
# Long prompts under a tight TPOT: the fewest GPUs are a disaggregated deployment, its
# cluster the two pools' GPUs; the table names both pools.
POOL_ARGS=(--server "${SERVER}" --model llama-3.1-8b --isl 8000 --osl 200 --slo-percentile 99
           --max-ttft-ms 2000 --max-tpot-ms 20 --request-rate 10 --gpus 64 --goal min-gpus
           --deadline-seconds 120)
expect_rc 0 "${CLI}" plan "${POOL_ARGS[@]}" --output json
"${PY}" - "${WORK}/out" <<'PYEOF' || fail "min-gpus disaggregated: $(cat "${WORK}/out")"
import json, sys
final = [json.loads(l) for l in open(sys.argv[1]).read().splitlines()][-1]
c, plan, p = final["chosenCluster"], final["plan"], final["prediction"]
gpus = lambda pool: pool.get("dp", 1) * pool.get("tp", 1) * pool.get("pp", 1)
assert "prefill" in plan and "decode" in plan, plan
assert c["numGpus"] == (plan["prefillInstances"] * gpus(plan["prefill"])
                        + plan["decodeInstances"] * gpus(plan["decode"])), (c, plan)
assert p["maxRequestRate"] >= 10 and p["ttftMsP99"] <= 2000 and p["tpotMsP99"] <= 20, p
PYEOF
expect_rc 0 "${CLI}" plan "${POOL_ARGS[@]}"
grep -Eq "^  h100-sxm-80gb +[0-9]+  [0-9]+P\(.*\) \+ [0-9]+D\(.*<- chosen" "${WORK}/out" \
  || fail "min-gpus disaggregated table: $(cat "${WORK}/out")"
expect_rc 0 "${CLI}" plan "${POOL_ARGS[@]}" --disaggregation off --output json
"${PY}" - "${WORK}/out" <<'PYEOF' || fail "min-gpus, disaggregation off: $(cat "${WORK}/out")"
import json, sys
final = [json.loads(l) for l in open(sys.argv[1]).read().splitlines()][-1]
assert "prefill" not in final["plan"], final["plan"]
PYEOF
expect_rc 0 "${CLI}" plan "${SLO_ARGS[@]}" --request-rate 100000 --gpus 16 --goal min-gpus --deadline-seconds 120
grep -q "no cluster carries workload.request_rate" "${WORK}/out" || fail "unreachable rate: $(cat "${WORK}/out")"

# The 2026 models on every Blackwell GPU: a feasible plan with p10-p90 ranges, the engines
# that run it, and launch output for each of them naming the checkpoint.
expect_rc 0 "${CLI}" catalog --server "${SERVER}" --output json
declare -A HF_ID
while read -r name id; do HF_ID[${name}]=${id}; done < <("${PY}" -c "
import json, sys
for m in json.load(open(sys.argv[1]))['modelInfo']: print(m['name'], m.get('huggingFaceId', '-'))
" "${WORK}/out")
for hw in b200-sxm-180gb b300-sxm-288gb gb200-nvl72 gb300-nvl72; do
  for model in kimi-k2.5 glm-5 qwen3.5-397b-a17b minimax-m2.5 deepseek-v3.2; do
    [[ ${HF_ID[${model}]:--} != - ]] || fail "the catalog gives ${model} no Hugging Face id"
    gpus=8
    [[ ${model} == glm-5 ]] && gpus=16  # 1.5 TB of BF16 weights
    NEW_ARGS=(--server "${SERVER}" --model "${model}" --hardware "${hw}" --gpus "${gpus}" --isl 1024
              --osl 256 --method grid --max-evaluations 300 --seed 1 --no-warm-start
              --deadline-seconds 120)
    expect_rc 0 "${CLI}" plan "${NEW_ARGS[@]}" --output json
    "${PY}" - "${WORK}/out" >"${WORK}/engines" <<'PYEOF' \
      || fail "${model} on ${hw}: $(tail -c 2000 "${WORK}/out")"
import json, sys
u = json.loads(open(sys.argv[1]).read().splitlines()[-1])
p = u["prediction"]
assert u.get("final") is True and p.get("feasible") is True, "no feasible final plan"
for k in ("outputTokensPerSRange", "ttftMsRange", "tpotMsRange"):
    r = p[k]
    assert 0 < r["low"] < r["high"], f"{k} {r}"
assert p.get("runnableEngines"), "no engine runs the plan"
print(" ".join(p["runnableEngines"]))
PYEOF
    read -r -a engines <"${WORK}/engines"
    for engine in "${engines[@]}"; do
      expect_rc 0 "${CLI}" plan "${NEW_ARGS[@]}" --engine "${engine}" --emit "${engine}"
      grep -q "${HF_ID[${model}]}" "${WORK}/out" \
        || fail "--emit ${engine} of ${model} on ${hw} lacks ${HF_ID[${model}]}"
    done
  done
done

echo "client CLI e2e: OK"
