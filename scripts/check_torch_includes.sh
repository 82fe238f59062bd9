#!/usr/bin/env bash
# LibTorch headers (<torch/...>, <ATen/...>, <c10/...>) may be included only under policy/rl/,
# the one library that links LibTorch: Debian's /usr/include exposes torch/script.h to every
# target, so the compiler would not stop a stray include. Run by ctest (label unit).
#   scripts/check_torch_includes.sh [SOURCE_DIR]
set -euo pipefail
cd "${1:-$(dirname "$0")/..}"
pattern='^[[:space:]]*#[[:space:]]*include[[:space:]]*[<"](torch|ATen|c10)/'
if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  files=$(git ls-files --cached --others --exclude-standard -- '*.h' '*.hpp' '*.cc' '*.cpp' '*.cu')
else
  files=$(find . -path ./build -prune -o -type f \( -name '*.h' -o -name '*.hpp' -o -name '*.cc' \
            -o -name '*.cpp' -o -name '*.cu' \) -print | sed 's|^\./||')
fi
bad=$(printf '%s\n' "$files" | grep -v '^policy/rl/' | grep -v '^$' |
      xargs -r grep -EnH "$pattern" || true)
if [[ -n "$bad" ]]; then
  echo "LibTorch includes outside policy/rl/ (STYLE.md §8):" >&2
  echo "$bad" >&2
  exit 1
fi
echo "LibTorch includes only under policy/rl/"
