"""``tritune report``: output files, exit codes, clear errors, and ``--open`` without a display."""

from __future__ import annotations

import argparse

import pytest
from report_samples import FIXTURES

from tritune.cli import report as cli_report


def _run(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="tritune")
    sub = parser.add_subparsers(dest="command")
    cli_report.add_parser(sub)
    return cli_report.run(parser.parse_args(argv))


def test_writes_report_and_lists_files(tmp_path, capsys):
    rc = _run(["report", str(FIXTURES / "verify_gelu.json"), "--out", str(tmp_path / "r")])
    out, err = capsys.readouterr()
    assert rc == 0
    assert out.splitlines() == [str(tmp_path / "r" / "report.html"), str(tmp_path / "r" / "verify_gelu.png")]
    assert "not drawn: ranked, heatmap, ceiling, sweep: gelu: no candidate has a timing" in err
    assert (tmp_path / "r" / "report.html").stat().st_size > 1000


def test_a_reason_that_keeps_several_figures_out_is_said_once(tmp_path, capsys):
    rc = _run(["report", str(FIXTURES / "verify_gelu_interpreter.json"), "--out", str(tmp_path / "r")])
    err = capsys.readouterr().err
    assert rc == 0
    assert err.count("no candidate has a timing") == 1 and err.count("the result says") == 1, err
    assert err.startswith("not drawn: ranked, heatmap, ceiling, sweep: gelu: no candidate has a timing")


def test_the_same_figure_left_out_for_several_keys_is_counted():
    from types import SimpleNamespace as S

    lines = cli_report.not_drawn_lines([S(kind="ranked", reason="r"), S(kind="heatmap", reason="r"),
                                        S(kind="ranked", reason="r"), S(kind="sweep", reason="other")])  # fmt: skip
    assert lines == ["not drawn: ranked (2), heatmap: r", "not drawn: sweep: other"]


def test_default_out_is_next_to_the_result(tmp_path, capsys):
    src = tmp_path / "screen.json"
    src.write_text((FIXTURES / "screen_gelu.json").read_text())
    assert _run(["report", str(src)]) == 0
    assert (tmp_path / "screen_report" / "report.html").exists()


@pytest.mark.parametrize(("content", "msg"), [(None, "no such file"), ("{", "not JSON")])
def test_unreadable_input_exits_2_with_the_reason(tmp_path, capsys, content, msg):
    src = tmp_path / "r.json"
    if content is not None:
        src.write_text(content)
    assert _run(["report", str(src), "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("tritune report: ") and msg in err and str(src) in err


def test_open_without_display_is_a_message_not_a_browser(tmp_path, capsys, monkeypatch):
    monkeypatch.delenv("DISPLAY", raising=False)
    monkeypatch.delenv("WAYLAND_DISPLAY", raising=False)
    monkeypatch.setattr(cli_report.sys, "platform", "linux")
    opened: list[str] = []
    monkeypatch.setattr(cli_report.webbrowser, "open", lambda url: opened.append(url) or True)
    assert _run(["report", str(FIXTURES / "screen_gelu.json"), "--out", str(tmp_path), "--open"]) == 0
    assert opened == []
    assert "--open: no display here" in capsys.readouterr().err


def test_open_with_display_uses_webbrowser(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("DISPLAY", ":0")
    monkeypatch.setattr(cli_report.sys, "platform", "linux")
    opened: list[str] = []
    monkeypatch.setattr(cli_report.webbrowser, "open", lambda url: opened.append(url) or True)
    assert _run(["report", str(FIXTURES / "screen_gelu.json"), "--out", str(tmp_path), "--open"]) == 0
    assert opened == [(tmp_path / "report.html").resolve().as_uri()]
    assert "opened" in capsys.readouterr().err


def test_registered_in_the_main_cli(tmp_path, capsys):
    from tritune.cli.main import COMMANDS

    assert COMMANDS["report"] == "tritune.cli.report"
