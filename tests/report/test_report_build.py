"""build_report: which figures apply, the self-contained page, non-trivial PNGs, the missing-extra error."""

from __future__ import annotations

import re

import pytest
from report_checks import assert_nontrivial_png, embedded_pngs
from report_samples import FIXTURES, fixture_json

from tritune.report import build_report
from tritune.report.data import parse_result


def test_tune_report_draws_every_tune_figure(tune_report):
    kinds = [f.kind for f in tune_report.figures]
    assert kinds.count("ranked") == 3 and kinds.count("heatmap") == 3
    assert kinds.count("ceiling") == 1 and kinds.count("sweep") == 1 and "verify" not in kinds
    assert [(s.kind, s.reason) for s in tune_report.skipped] == [
        ("verify", "gelu_space: this is a tune result, not a verify result")
    ]
    for f in tune_report.figures:
        assert f.path.parent == tune_report.html.parent and f.path.suffix == ".png"
        assert_nontrivial_png(f.path.read_bytes(), f.path.name)


def test_tune_page_is_self_contained_and_embeds_each_png(tune_report):
    html = tune_report.html.read_text()
    pngs = embedded_pngs(html)
    assert pngs == [f.path.read_bytes() for f in tune_report.figures]
    assert not re.search(r"https?://|<script|<link", html)
    assert "tied (overlapping CI)" in html and "copy bandwidth (GB/s)" in html
    # the full compile-failure reason, HTML-escaped, is in the candidates table
    assert "uses too much local memory (0x10400 bytes, 0x10000 max); lower BLOCK or raise num_warps" in html
    assert "<h3>Figures not drawn</h3>" in html and "not a verify result" in html
    assert html.rstrip().endswith(
        '<footer id="tritune-report-end"><p>End of report.</p></footer></body></html>'
    )


def test_heatmap_caption_states_the_influence_rule(tune_report):
    caps = [f.caption for f in tune_report.figures if f.kind == "heatmap"]
    assert all("Influence = max over a parameter's values of the best time" in c for c in caps)
    assert all(re.search(r"\(BLOCK ×[\d.]+, num_warps ×[\d.]+, num_stages ×[\d.]+\)", c) for c in caps)


def test_verify_report_draws_only_the_verify_figure(verify_report):
    assert [f.kind for f in verify_report.figures] == ["verify"]
    assert sorted(s.kind for s in verify_report.skipped) == ["ceiling", "heatmap", "ranked", "sweep"]
    assert all("no candidate has a timing" in s.reason for s in verify_report.skipped)
    html = verify_report.html.read_text()
    assert len(embedded_pngs(html)) == 1
    assert "all 4 compared candidates wrote bit-identical outputs" in html
    assert_nontrivial_png(verify_report.figures[0].path.read_bytes(), "verify")


def test_screen_report_has_no_figures_and_says_why(tmp_path):
    rep = build_report(FIXTURES / "screen_gelu.json", tmp_path)
    assert rep.figures == ()
    html = rep.html.read_text()
    assert "No figure applies to this result" in html and "<th>registers</th>" in html
    assert embedded_pngs(html) == []


def test_no_ceiling_is_said_never_invented(tmp_path):
    d = fixture_json("tune_gelu_space.json")
    del d["ceilings"]
    d["workloads"] = d["workloads"][:1]  # one key: no sweep
    d["workloads"][0]["candidates"] = d["workloads"][0]["candidates"][:12]
    rep = build_report(parse_result(d), tmp_path)
    html = rep.html.read_text()
    assert "Ceiling not measured" in html and "3600" not in html
    cap = next(f.caption for f in rep.figures if f.kind == "ceiling")
    assert "ceiling not measured" in cap
    assert (
        "sweep",
        "gelu_space: a key sweep needs two or more keys with a timed winner, this result has 1",
    ) in [(s.kind, s.reason) for s in rep.skipped]


def test_one_varied_parameter_skips_the_heatmap(tmp_path):
    d = fixture_json("tune_gelu_space.json")
    w = d["workloads"][0]
    w["candidates"] = [
        c for c in w["candidates"] if c["config"]["num_warps"] == 4 and c["config"]["num_stages"] == 1
    ]
    d["workloads"] = [w]
    rep = build_report(parse_result(d), tmp_path)
    assert [f.kind for f in rep.figures] == ["ranked", "ceiling"]
    why = next(s.reason for s in rep.skipped if s.kind == "heatmap")
    assert "a heatmap needs two parameters with at least two timed values" in why


def test_missing_matplotlib_names_the_extra(tmp_path, monkeypatch):
    import builtins

    real_import = builtins.__import__

    def no_mpl(name, *args, **kwargs):
        if name == "matplotlib" or name.startswith("matplotlib."):
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_mpl)
    with pytest.raises(ModuleNotFoundError, match=r"pip install 'tritune\[report\]'"):
        build_report(FIXTURES / "verify_gelu.json", tmp_path)


@pytest.mark.parametrize(
    ("name", "kinds"), [("verify_gelu_interpreter.json", ["verify"]), ("screen_gelu_sm90.json", [])]
)
def test_real_cli_outputs_make_reports(tmp_path, name, kinds):
    """Results written by the real tritune verify/screen commands on this machine (see fixtures/README.md)."""
    rep = build_report(FIXTURES / name, tmp_path)
    assert [f.kind for f in rep.figures] == kinds
    html = rep.html.read_text()
    assert len(embedded_pngs(html)) == len(kinds)
    assert "BLOCK=2048,num_warps=8,num_stages=4" in html


def test_ceiling_line_is_the_recorded_ceiling_and_low_throughput_goes_log():
    from tritune.report.data import ceilings_of
    from tritune.report.fig_sweep import ceiling_figure

    r = parse_result(fixture_json("tune_gelu_space.json"))
    ax = ceiling_figure("gelu_space", r.workloads, ceilings_of(r)).axes[0]
    assert [tuple(line.get_ydata()) for line in ax.lines] == [(3600.0, 3600.0)]
    assert ax.get_yscale() == "linear" and "of ceiling" in " ".join(t.get_text() for t in ax.texts)

    d = fixture_json("tune_gelu_space.json")
    d["ceilings"]["copy_gbps"] = 1e6  # the data now sits far below the ceiling
    r = parse_result(d)
    ax = ceiling_figure("gelu_space", r.workloads, ceilings_of(r)).axes[0]
    assert ax.get_yscale() == "log" and ax.get_ylabel() == "achieved GB/s (log scale)"
