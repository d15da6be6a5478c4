#!/usr/bin/env bash
# Gather what the GPU benchmarks need besides the repository into ignored folders of a checkout (never committed),
# for a GPU machine with no network (gpu.sh installs and reads them from there):
#
#   bash benchmarks/fetch.sh [PART ...]        from the checkout's root; parts: wheels libtests tutorials (default all)
#
# wheels     .whl/: FlagGems 5.0.2, Liger-Kernel 0.8.5, fla-core 0.6.0 and SQLAlchemy 2.0.48 (with greenlet), which
#            FlagGems imports, for CPython 3.12 on x86_64 Linux (PyPI); the GPU machine's torch, triton, numpy and
#            einops are its own.
# libtests   the libraries' own test files for `gpu.sh libtests` (libtests.py), unedited:
#            .ref/libtests/flag_gems/    FlagGems' tests for the tuned ops, from a git clone of FlagGems in
#                                        $FLAGGEMS_REPO (PyPI has no FlagGems sdist). A clone of the 3.0 tree (Nov
#                                        2025) serves: its test helpers use only APIs that 5.0.2 still has (use_gems,
#                                        testing.assert_close, runtime.device).
#            .ref/libtests/liger_kernel/ Liger-Kernel 0.8.5's test helpers, test_dyt.py and test_mlp.py (its sdist).
#            .ref/libtests/fla/          flash-linear-attention's tests (conftest, ops/test_{delta,retention,gla}.py,
#                                        modules/test_layernorm.py) and its pyproject.toml, from a git clone in
#                                        $FLA_REPO (fla-core's sdist has no tests); they import only what fla-core
#                                        0.6.0 provides.
#            .whl/libtests/              the wheels Liger's and fla's test helpers import (transformers, tokenizers
#                                        and theirs), minus what the GPU machine has with torch (numpy, filelock,
#                                        fsspec, typing_extensions, packaging, pyyaml): they would shadow its own.
# tutorials  .ref/tutorials/03-matrix-multiplication.py, 05-layer-norm.py and 06-fused-attention.py, unedited, for
#            `gpu.sh tutorials` and the tut_ ops of real_libraries.py, from a git clone of Triton in $TRITON_REPO at $TRITON_REF, else at
#            the first of: the tag v3.6.0, the branch release/3.6.x, or 4b184cccb (main, 2025-11-21: the last commit
#            of main whose Python package is the 3.6.0 wheel's, all but the version and one later fix, so the base of
#            release/3.6.x). .ref/tutorials/SOURCE names the commit and the ref.
# Each folder's SOURCE file names where its files came from.
set -euo pipefail
DEST=$PWD
PARTS=${*:-wheels libtests tutorials}
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
PLATFORM=(--python-version 3.12 --implementation cp --only-binary=:all: --platform manylinux_2_28_x86_64
          --platform manylinux_2_27_x86_64 --platform manylinux_2_24_x86_64 --platform manylinux_2_17_x86_64
          --platform manylinux2014_x86_64)
need_repo() {  # need_repo VAR URL: the clone a part reads, or one line saying how to give it
  if [ -z "${!1:-}" ] || ! git -C "${!1}" rev-parse -q --verify HEAD >/dev/null 2>&1; then
    echo "fetch.sh: set $1 to a git clone of $2 (now: '${!1:-}')" >&2
    exit 2
  fi
}

for part in $PARTS; do
  case $part in
    wheels)
      mkdir -p .whl
      python3 -m pip download -q --no-deps "${PLATFORM[@]}" -d .whl flag_gems==5.0.2 liger_kernel==0.8.5 \
        fla_core==0.6.0 sqlalchemy==2.0.48 greenlet==3.5.6
      echo "PyPI, for cp312 manylinux x86_64: $(cd .whl && ls -- *.whl | tr '\n' ' ')" > .whl/SOURCE ;;
    libtests)
      need_repo FLAGGEMS_REPO https://github.com/FlagOpen/FlagGems
      need_repo FLA_REPO https://github.com/fla-org/flash-linear-attention
      out=$DEST/.ref/libtests/flag_gems
      mkdir -p "$out/tests"
      git -C "$FLAGGEMS_REPO" show HEAD:pytest.ini > "$out/pytest.ini"
      for f in __init__ conftest accuracy_utils test_blas_ops test_norm_ops test_reduction_ops \
               test_general_reduction_ops; do
        git -C "$FLAGGEMS_REPO" show "HEAD:tests/$f.py" > "$out/tests/$f.py"
      done
      git -C "$FLAGGEMS_REPO" log -1 --format='FlagGems %H %cd' > "$out/SOURCE"

      python3 -m pip download -q liger_kernel==0.8.5 --no-deps --no-binary :all: -d "$TMP"
      tar xzf "$TMP"/liger_kernel-0.8.5.tar.gz -C "$TMP"
      src=$TMP/liger_kernel-0.8.5
      out=$DEST/.ref/libtests/liger_kernel
      mkdir -p "$out/test/transformers"
      cp "$src/pyproject.toml" "$out/"
      cp "$src/test/__init__.py" "$src/test/conftest.py" "$src/test/utils.py" "$out/test/"
      cp "$src/test/transformers/test_dyt.py" "$src/test/transformers/test_mlp.py" "$out/test/transformers/"
      echo "liger_kernel 0.8.5 sdist (PyPI)" > "$out/SOURCE"

      out=$DEST/.ref/libtests/fla
      mkdir -p "$out/tests/ops" "$out/tests/modules"
      for f in pyproject.toml tests/conftest.py tests/ops/test_delta.py tests/ops/test_retention.py \
               tests/ops/test_gla.py tests/modules/test_layernorm.py; do
        git -C "$FLA_REPO" show "HEAD:$f" > "$out/$f"
      done
      git -C "$FLA_REPO" log -1 --format='flash-linear-attention %H %cd' > "$out/SOURCE"

      whl=$DEST/.whl/libtests
      mkdir -p "$whl"
      python3 -m pip download -q transformers==4.57.1 -d "$TMP/w" "${PLATFORM[@]}"
      for w in "$TMP"/w/*.whl; do
        case $(basename "$w") in
          numpy-*|filelock-*|fsspec-*|typing_extensions-*|packaging-*|pyyaml-*|PyYAML-*) ;;
          *) cp "$w" "$whl/" ;;
        esac
      done ;;
    tutorials)
      need_repo TRITON_REPO https://github.com/triton-lang/triton
      base_3_6=4b184cccbb42c3aa5f24e34c39c5358636b3e2bd
      ref=${TRITON_REF:-}
      if [ -z "$ref" ]; then
        for r in refs/tags/v3.6.0 refs/heads/release/3.6.x refs/remotes/origin/release/3.6.x "$base_3_6"; do
          if git -C "$TRITON_REPO" rev-parse -q --verify "$r^{commit}" >/dev/null; then ref=$r; break; fi
        done
      fi
      if [ -z "$ref" ]; then
        echo "fetch.sh: $TRITON_REPO has neither v3.6.0, release/3.6.x nor $base_3_6; set TRITON_REF" >&2
        exit 1
      fi
      commit=$(git -C "$TRITON_REPO" rev-parse "$ref^{commit}")
      out=$DEST/.ref/tutorials
      mkdir -p "$out"
      for f in 03-matrix-multiplication.py 05-layer-norm.py 06-fused-attention.py; do
        git -C "$TRITON_REPO" show "$commit:python/tutorials/$f" > "$out/$f"
      done
      echo "triton $commit $(git -C "$TRITON_REPO" log -1 --format=%cI "$commit") (ref $ref)" > "$out/SOURCE" ;;
    *) echo "fetch.sh: unknown part $part (wheels, libtests, tutorials)" >&2; exit 2 ;;
  esac
  echo "fetch.sh: $part done"
done
du -sh .whl .ref 2>/dev/null || true
