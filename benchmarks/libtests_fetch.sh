#!/usr/bin/env bash
# Gather the libraries' own test files for `gpu.sh libtests` into ignored folders of a checkout (never committed):
#
#   bash benchmarks/libtests_fetch.sh [CHECKOUT]        (default: the current directory)
#
# CHECKOUT/.ref/libtests/flag_gems/   FlagGems' tests/ for the tuned ops, from the FlagGems git snapshot in
#                                     $FLAGGEMS_REPO (default /work/.mirror/FlagOpen+FlagGems/repo; PyPI has no
#                                     FlagGems sdist). The snapshot is the 3.0 tree (Nov 2025): its test helpers use
#                                     only APIs that 5.0.2 still has (use_gems, testing.assert_close, runtime.device).
# CHECKOUT/.ref/libtests/liger_kernel/ Liger-Kernel 0.8.5's test/ helpers, test_dyt.py and test_mlp.py (sdist, PyPI).
# CHECKOUT/.ref/libtests/fla/          flash-linear-attention's tests (conftest, ops/test_{delta,retention,gla}.py,
#                                     modules/test_layernorm.py) and pyproject.toml, from the git snapshot in $FLA_REPO
#                                     (default /work/.mirror/fla-org+flash-linear-attention/repo; fla-core's sdist has
#                                     no tests); the files import only what fla-core 0.6.0 still provides.
# CHECKOUT/.whl/libtests/             wheels Liger's test helpers import (transformers, tokenizers and theirs), for
#                                     python 3.12, minus what the device already has with torch (numpy, filelock,
#                                     fsspec, typing_extensions, packaging, pyyaml): they would shadow its own.
set -euo pipefail
DEST=$(cd "${1:-.}" && pwd)
FG=${FLAGGEMS_REPO:-/work/.mirror/FlagOpen+FlagGems/repo}
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

out=$DEST/.ref/libtests/flag_gems
mkdir -p "$out/tests"
git -C "$FG" show HEAD:pytest.ini > "$out/pytest.ini"
for f in __init__ conftest accuracy_utils test_blas_ops test_norm_ops test_reduction_ops test_general_reduction_ops; do
  git -C "$FG" show "HEAD:tests/$f.py" > "$out/tests/$f.py"
done
git -C "$FG" log -1 --format='FlagGems %H %cd' > "$out/SOURCE"

pip download liger_kernel==0.8.5 --no-deps --no-binary :all: -d "$TMP" -q
tar xzf "$TMP"/liger_kernel-0.8.5.tar.gz -C "$TMP"
src=$TMP/liger_kernel-0.8.5
out=$DEST/.ref/libtests/liger_kernel
mkdir -p "$out/test/transformers"
cp "$src/pyproject.toml" "$out/"
cp "$src/test/__init__.py" "$src/test/conftest.py" "$src/test/utils.py" "$out/test/"
cp "$src/test/transformers/test_dyt.py" "$src/test/transformers/test_mlp.py" "$out/test/transformers/"
echo "liger_kernel 0.8.5 sdist (PyPI)" > "$out/SOURCE"

FLA=${FLA_REPO:-/work/.mirror/fla-org+flash-linear-attention/repo}
out=$DEST/.ref/libtests/fla
mkdir -p "$out/tests/ops" "$out/tests/modules"
for f in pyproject.toml tests/conftest.py tests/ops/test_delta.py tests/ops/test_retention.py tests/ops/test_gla.py \
         tests/modules/test_layernorm.py; do
  git -C "$FLA" show "HEAD:$f" > "$out/$f"
done
git -C "$FLA" log -1 --format='flash-linear-attention %H %cd' > "$out/SOURCE"

whl=$DEST/.whl/libtests
mkdir -p "$whl"
pip download transformers==4.57.1 -q -d "$TMP/w" --python-version 3.12 --only-binary=:all: \
  --platform manylinux_2_28_x86_64 --platform manylinux2014_x86_64 --platform manylinux_2_17_x86_64
for w in "$TMP"/w/*.whl; do
  case $(basename "$w") in
    numpy-*|filelock-*|fsspec-*|typing_extensions-*|packaging-*|pyyaml-*|PyYAML-*) ;;
    *) cp "$w" "$whl/" ;;
  esac
done
du -sh "$DEST/.ref/libtests" "$whl"
