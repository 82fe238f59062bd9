#!/bin/sh
# Compares two builds' predictions bit for bit: runs each build's
# shardplan-evaluation-dump (tests/bench/evaluation_dump.cc) and reports the
# first differing evaluation, if any. Exit 0 when identical.
#   tests/bench/compare_evaluations.sh BEFORE_BINARY AFTER_BINARY
set -eu
if [ $# -ne 2 ]; then
  echo "usage: $0 BEFORE_BINARY AFTER_BINARY" >&2
  exit 2
fi
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
"$1" > "$dir/before.txt"
"$2" > "$dir/after.txt"
lines=$(wc -l < "$dir/after.txt")
if cmp -s "$dir/before.txt" "$dir/after.txt"; then
  echo "identical: $lines evaluations"
  exit 0
fi
echo "predictions differ; first difference:"
diff "$dir/before.txt" "$dir/after.txt" | head -4
exit 1
