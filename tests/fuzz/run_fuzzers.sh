#!/usr/bin/env bash
# Runs each libFuzzer target of tests/fuzz for a bounded time on a scratch copy of its seed
# corpus (the repo's corpus is never written). Fails when any target finds a crash, leak,
# timeout, sanitizer report or invariant violation; the reproducer is left in the scratch
# artifact directory printed below.
#   tests/fuzz/run_fuzzers.sh <bin dir> [seconds per target] [scratch dir]
set -uo pipefail

BIN_DIR="${1:?usage: run_fuzzers.sh <bin dir> [seconds per target] [scratch dir]}"
SECONDS_PER_TARGET="${2:-40}"
FUZZ_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
if [ -n "${3:-}" ]; then
  SCRATCH="$3"
  OWN_SCRATCH=0
else
  SCRATCH="$(mktemp -d "${TMPDIR:-/tmp}/shardplan-fuzz.XXXXXX")"
  OWN_SCRATCH=1
fi
TARGETS=(fuzz_spec_text fuzz_hf_config fuzz_cost_model fuzz_server_validation fuzz_stored_rows)

dict_for() {
  case "$1" in
    fuzz_spec_text|fuzz_server_validation) echo "-dict=$FUZZ_DIR/spec.dict" ;;
    fuzz_hf_config) echo "-dict=$FUZZ_DIR/hf_config.dict" ;;
    *) echo "" ;;
  esac
}

failed=()
for t in "${TARGETS[@]}"; do
  work="$SCRATCH/$t/corpus"
  artifacts="$SCRATCH/$t/artifacts/"
  mkdir -p "$work" "$artifacts"
  cp "$FUZZ_DIR/corpus/$t/"* "$work/"
  # Known regressions first: they must not crash any more.
  if [ -d "$FUZZ_DIR/regressions/$t" ]; then
    cp "$FUZZ_DIR/regressions/$t/"* "$work/" 2>/dev/null || true
  fi
  log="$SCRATCH/$t/fuzz.log"
  # shellcheck disable=SC2046
  "$BIN_DIR/$t" "$work" $(dict_for "$t") -max_total_time="$SECONDS_PER_TARGET" \
      -rss_limit_mb=2048 -timeout=10 -max_len=8192 -print_final_stats=1 \
      -artifact_prefix="$artifacts" >"$log" 2>&1
  rc=$?
  runs="$(grep -a -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$')"
  if [ $rc -ne 0 ] || [ -n "$(ls -A "$artifacts")" ]; then
    echo "fuzz: $t FAILED (exit $rc); log $log, reproducer(s) in $artifacts"
    grep -a -E "ERROR|invariant|SUMMARY|runtime error" "$log" | head -5
    failed+=("$t")
  else
    echo "fuzz: $t ok (${runs:-?} runs in ${SECONDS_PER_TARGET}s)"
  fi
done

if [ ${#failed[@]} -ne 0 ]; then
  echo "fuzz: ${#failed[@]} target(s) failed: ${failed[*]}"
  exit 1
fi
if [ "$OWN_SCRATCH" -eq 1 ]; then rm -rf "$SCRATCH"; fi
