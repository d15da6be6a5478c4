#!/usr/bin/env bash
# Gather Triton's tutorials 03 and 06 for `gpu.sh tutorials` and the tutorial ops of real_libraries.py into an
# ignored folder of a checkout (never committed):
#
#   bash benchmarks/tutorials_fetch.sh [CHECKOUT]        (default: the current directory)
#
# CHECKOUT/.ref/tutorials/03-matrix-multiplication.py and 06-fused-attention.py, unchanged, from a git directory of
# Triton in $TRITON_REPO (default /work/.mirror/triton-lang+triton/repo), at the commit $TRITON_REF names, else at
# the first of these the repository has: the tag v3.6.0, the branch release/3.6.x, or 4b184cccb (main, 2025-11-21:
# the last commit of main whose Python package is the 3.6.0 wheel's, all but the version and one later fix, so the
# base of release/3.6.x). CHECKOUT/.ref/tutorials/SOURCE names the commit and the ref it came from.
set -euo pipefail
DEST=$(cd "${1:-.}" && pwd)
TR=${TRITON_REPO:-/work/.mirror/triton-lang+triton/repo}
BASE_3_6=4b184cccbb42c3aa5f24e34c39c5358636b3e2bd
ref=${TRITON_REF:-}
if [ -z "$ref" ]; then
  for r in refs/tags/v3.6.0 refs/heads/release/3.6.x refs/remotes/origin/release/3.6.x "$BASE_3_6"; do
    if git -C "$TR" rev-parse -q --verify "$r^{commit}" >/dev/null; then ref=$r; break; fi
  done
fi
if [ -z "$ref" ]; then
  echo "tutorials_fetch: $TR has neither v3.6.0, release/3.6.x nor $BASE_3_6; set TRITON_REF" >&2
  exit 1
fi
commit=$(git -C "$TR" rev-parse "$ref^{commit}")
out=$DEST/.ref/tutorials
mkdir -p "$out"
for f in 03-matrix-multiplication.py 06-fused-attention.py; do
  git -C "$TR" show "$commit:python/tutorials/$f" > "$out/$f"
done
echo "triton $commit $(git -C "$TR" log -1 --format=%cI "$commit") (ref $ref)" > "$out/SOURCE"
cat "$out/SOURCE"
