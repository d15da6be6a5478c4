"""Buckets (hypothesis laws), key specs, TuningKey identity and the current-device helpers."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
import triton
import triton.language as tl
from hypothesis import given
from hypothesis import strategies as st

from tritune import bucket
from tritune.errors import ConfigError
from tritune.store import INTERPRETER, TuningKey, codegen_env, codegen_env_hash, interpreter_key, make_key
from tritune.testing.store_contract import make_test_key

BUCKETS = [bucket.exact, bucket.pow2, bucket.multiple(1), bucket.multiple(32), bucket.multiple(7)]
ints = st.integers(min_value=-(2**40), max_value=2**40)


@pytest.mark.parametrize("b", BUCKETS, ids=lambda b: b.name)
@given(v=ints, w=ints)
def test_bucket_laws(b: bucket.Bucket, v: int, w: int) -> None:
    assert b(v) >= v
    assert b(b(v)) == b(v)
    if v <= w:
        assert b(v) <= b(w)
    lo, hi = b.span(b(v))
    assert lo <= v <= hi and hi == b(v)
    assert bucket.from_name(b.name) == b


def test_bucket_values() -> None:
    assert [bucket.pow2(v) for v in (0, 1, 2, 3, 4, 5, 4096, 4097)] == [0, 1, 2, 4, 4, 8, 4096, 8192]
    assert [bucket.multiple(32)(v) for v in (0, 1, 32, 33, 64)] == [0, 32, 32, 64, 64]
    assert bucket.pow2.describe(4096) == "2049..4096" and bucket.exact.describe(10000) == "10000"
    assert bucket.multiple(32).name == "multiple(32)" and repr(bucket.pow2) == "pow2"


def test_buckets_refuse_non_integers() -> None:
    with pytest.raises(ConfigError, match=r"bucket pow2 applies to integer key values, got 3.5 \(float\)"):
        bucket.pow2(3.5)
    with pytest.raises(ConfigError, match="bool"):
        bucket.multiple(8)(True)
    with pytest.raises(ConfigError, match="positive int"):
        bucket.multiple(0)
    with pytest.raises(ConfigError, match="unknown bucket name"):
        bucket.from_name("log2")


def test_normalize_key_spec() -> None:
    assert bucket.normalize_key(["n", "M"]) == (("M", bucket.exact), ("n", bucket.exact))
    spec = bucket.normalize_key({"n": bucket.pow2, "M": bucket.multiple(32)}, ["x", "n", "M"], kernel="mm")
    assert spec == (("M", bucket.multiple(32)), ("n", bucket.pow2))
    assert bucket.bucket_values(spec, {"n": 3000, "M": 33, "x": 1}) == {"M": 64, "n": 4096}
    with pytest.raises(
        ConfigError, match=r"key name 'N' is not an argument of kernel mm; its arguments are \['x', 'n'\]"
    ):
        bucket.normalize_key(["N"], ["x", "n"], kernel="mm")
    with pytest.raises(ConfigError, match="is a string"):
        bucket.normalize_key("n")
    with pytest.raises(ConfigError, match="not a bucket"):
        bucket.normalize_key({"n": 32})  # type: ignore[dict-item]


@given(
    n=st.integers(0, 2**31), m=st.integers(0, 2**31), dt=st.sampled_from(["torch.float16", "torch.float32"])
)
def test_key_json_round_trip_and_digest(n: int, m: int, dt: str) -> None:
    k = make_test_key(key={"n": n, "M": m}, buckets={"n": "pow2"}, dtypes=(dt,))
    assert TuningKey.from_json(json.loads(json.dumps(k.to_json()))) == k
    assert k.buckets == (("M", "exact"), ("n", "pow2"))
    assert k.digest == make_test_key(key={"M": m, "n": n}, buckets={"n": "pow2"}, dtypes=(dt,)).digest


def test_digest_is_stable_across_processes() -> None:
    k = make_test_key()
    code = "from tritune.testing.store_contract import make_test_key; print(make_test_key().digest)"
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout.strip()
    assert out == k.digest and len(k.digest) == 64


def test_key_rejects_bad_fields() -> None:
    with pytest.raises(ConfigError, match="not in key"):
        make_test_key(buckets={"m": "pow2"})
    with pytest.raises(ConfigError, match="int, float, bool, str or None"):
        make_test_key(key={"n": [1, 2]})
    with pytest.raises(ConfigError, match="unknown TuningKey field"):
        TuningKey.from_json({**make_test_key().to_json(), "extra": 1})


def test_codegen_env_follows_tritons_list(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("TRITON_DISABLE_LINE_INFO", raising=False)
    monkeypatch.delenv("TRITON_F32_DEFAULT", raising=False)
    before = codegen_env_hash()
    monkeypatch.setenv("TRITON_DISABLE_LINE_INFO", "1")  # in Triton's C++ list
    assert codegen_env()["TRITON_DISABLE_LINE_INFO"] == "true"
    with_line = codegen_env_hash()
    monkeypatch.setenv("TRITON_F32_DEFAULT", "ieee")  # read by Triton's Python side
    assert len({before, with_line, codegen_env_hash()}) == 3


@triton.jit
def _add_one(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(x_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) + 1, mask=offs < n)


def test_make_key_without_gpu_is_an_interpreter_key() -> None:
    k = make_key(_add_one, {"n": 4096}, buckets={"n": "pow2"}, dtypes=("torch.float32",))
    assert (k.device, k.capability) == (INTERPRETER, INTERPRETER)  # tests run with no GPU
    assert k == interpreter_key(_add_one, {"n": 4096}, buckets={"n": "pow2"}, dtypes=("torch.float32",))
    assert k.kernel == "_add_one" and k.triton_version == triton.__version__ and k.source_hash
    assert k.describe_key() == "n=4096 (pow2: 2049..4096)"
