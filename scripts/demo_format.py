#!/usr/bin/env python3
"""Formats `shardplan plan -o json` output (one PlanUpdate per line) for `make demo`: one line
per streamed plan as it arrives, then the search summary. Writes the final plan as
`shardplan evaluate` flags to the file named by argv[1] (when given)."""
import json
import sys


def plan_text(plan):
    text = "dp{} tp{} pp{} ep{}".format(plan.get("dp", 1), plan.get("tp", 1), plan.get("pp", 1),
                                         plan.get("ep", 1))
    megatron = {"embedding": "row", "qkv": "column", "attention": "column", "attn_out": "row",
                "mlp_up": "column", "mlp_down": "row", "router": "replicate",
                "expert_up": "column", "expert_down": "row", "lm_head": "column"}
    changed = ["{}={}".format(o["operator"], o["dim"]) for o in plan.get("operatorSharding", [])
               if megatron.get(o["operator"]) != o["dim"]]
    if changed:
        text += " [" + " ".join(changed) + "]"
    return text


def evaluate_flags(plan):
    flags = ["--dp", str(plan.get("dp", 1)), "--tp", str(plan.get("tp", 1)),
             "--pp", str(plan.get("pp", 1)), "--ep", str(plan.get("ep", 1))]
    for op in plan.get("operatorSharding", []):
        flags += ["--op", "{}={}".format(op["operator"], op["dim"])]
    if plan.get("stageLayers"):
        flags += ["--stage-layers"] + [str(n) for n in plan["stageLayers"]]
    if plan.get("batchSize"):
        flags += ["--batch-size", str(plan["batchSize"])]
    if plan.get("microBatches"):
        flags += ["--micro-batches", str(plan["microBatches"])]
    return flags


def main():
    print("{:>7}  {:<11} {:>6}  {:>12}  {:>8}  {:>6}  {}".format(
        "elapsed", "update", "evals", "tok/s", "speedup", "batch", "plan"))
    final = None
    for line in sys.stdin:
        line = line.strip()
        if not line.startswith("{"):
            print(line)
            continue
        update = json.loads(line)
        prediction = update.get("prediction", {})
        print("{:>6.2f}s  {:<11} {:>6}  {:>12,.0f}  {:>7.3f}x  {:>6}  {}".format(
            update.get("elapsedSeconds", 0.0), update.get("kind", "?"),
            update.get("evaluations", 0), prediction.get("outputTokensPerS", 0.0),
            update.get("speedupVsBaseline", 0.0), prediction.get("batchSize", 0),
            plan_text(update.get("plan", {}))), flush=True)
        if update.get("final"):
            final = update
    if final is None:
        return 1
    summary = final.get("summary", {})
    warm = summary.get("warmStartSource") if summary.get("warmStarted") else "cold"
    print("\nsearch: method {}, {} evaluations, {} iterations, stop: {}, start: {}, "
          "plan space {:.3g} plans, best {:.3f}x over Megatron".format(
              summary.get("method"), summary.get("evaluations", 0),
              summary.get("iterations", 0), summary.get("stopReason"), warm,
              summary.get("spaceSize", 0), summary.get("bestSpeedup", 0.0)))
    if len(sys.argv) > 1:
        with open(sys.argv[1], "w") as out:
            out.write(" ".join(evaluate_flags(final.get("plan", {}))) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
