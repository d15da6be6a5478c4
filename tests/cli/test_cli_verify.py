import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tritune.cli.main import main

ROOT = Path(__file__).resolve().parents[2]
GELU = str(ROOT / "examples" / "gelu.py")


def test_verify_gelu_exit_0_and_json(tmp_path, capsys):
    out = tmp_path / "v.json"
    rc = main(["verify", GELU, "--json", str(out), "--quiet"])
    assert rc == 0
    d = json.loads(out.read_text())
    assert d["command"] == "verify" and len(d["workloads"]) == 2
    assert all(c["status"] == "correct" for w in d["workloads"] for c in w["candidates"])
    printed = capsys.readouterr().out
    assert "no timing" in printed.lower()


def test_verify_json_to_stdout_is_pure_json(capsys):
    rc = main(["verify", GELU, "--json", "-", "--key", "n=1000", "--quiet"])
    assert rc == 0
    d = json.loads(capsys.readouterr().out)
    assert [w["key"] for w in d["workloads"]] == [{"n": 1000}]


def test_verify_exit_1_when_a_candidate_is_not_correct(tmp_path):
    f = tmp_path / "w.py"
    f.write_text(
        f"import sys; sys.path.insert(0, {str(ROOT / 'tests')!r})\n"
        + "from kernels import elementwise_workload, half_writer_kernel\n"
        "w = elementwise_workload('half', half_writer_kernel)\n"
    )
    assert main(["verify", str(f), "--quiet"]) == 1


def test_verify_exit_2_for_unloadable_file(tmp_path, capsys):
    f = tmp_path / "broken.py"
    f.write_text("import not_a_module_xyz\n")
    assert main(["verify", str(f)]) == 2
    err = capsys.readouterr().err
    assert "not_a_module_xyz" in err and "ModuleNotFoundError" in err


def test_verify_exit_2_for_unknown_workload_name(capsys):
    assert main(["verify", GELU, "--workload", "nope"]) == 2
    assert "no workload named 'nope'" in capsys.readouterr().err


def test_cli_switches_the_interpreter_on_by_itself(tmp_path):
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    env["TRITON_DEFAULT_FP_FUSION"] = "1"
    p = subprocess.run(
        [sys.executable, "-m", "tritune", "verify", GELU, "--key", "n=777", "--json", "-", "--quiet"],
        capture_output=True, text=True, env=env, timeout=300,
    )
    assert p.returncode == 0, p.stderr
    d = json.loads(p.stdout)
    assert "interpreter" in d["timing"]


def test_usage_errors_exit_2(capsys):
    with pytest.raises(SystemExit) as e:
        main(["verify"])
    assert e.value.code == 2
    assert main(["verify", GELU, "--key", "n"]) == 2
    assert "expected name=value" in capsys.readouterr().err
