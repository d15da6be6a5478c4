"""tritune's modules import one another without a cycle, and ``import tritune`` loads what a cached call needs.

Every import counts: at module level, inside functions, and under ``TYPE_CHECKING``. An import inside a function
hides a cycle from import-linter's layers (it sees packages); this walks the modules themselves.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src"


def _modules() -> dict[str, Path]:
    out = {}
    for p in (SRC / "tritune").rglob("*.py"):
        name = ".".join(p.relative_to(SRC).with_suffix("").parts)
        out[name.removesuffix(".__init__")] = p
    return out


def _graph(mods: dict[str, Path]) -> dict[str, set[str]]:
    """module -> the tritune modules it imports (any import statement anywhere in it)."""

    def resolve(name: str) -> str | None:
        parts = name.split(".")
        while parts:
            if ".".join(parts) in mods:
                return ".".join(parts)
            parts.pop()
        return None

    graph: dict[str, set[str]] = defaultdict(set)
    for mod, path in mods.items():
        package = mod if path.name == "__init__.py" else mod.rpartition(".")[0]
        for node in ast.walk(ast.parse(path.read_text())):
            names: list[str] = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    up = package.split(".")[: len(package.split(".")) - node.level + 1]
                    base = ".".join([*up, base] if base else up)
                names = [f"{base}.{a.name}" if f"{base}.{a.name}" in mods else base for a in node.names]
            for n in names:
                target = resolve(n) if n.startswith("tritune") else None
                if target is not None and target != mod and target != "tritune":
                    graph[mod].add(target)
    return graph


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in list(graph):
        if v not in index:
            visit(v)
    return out


def test_no_import_cycle_between_modules() -> None:
    assert _cycles(_graph(_modules())) == []


def test_the_cycle_check_finds_a_cycle_hidden_in_a_function() -> None:
    graph = {"tritune.a": {"tritune.b"}, "tritune.b": {"tritune.c"}, "tritune.c": {"tritune.a"}}
    assert _cycles(graph) == [["tritune.a", "tritune.b", "tritune.c"]]


def test_import_tritune_loads_no_engine_store_search_or_serving() -> None:
    """What a decorated kernel's cached call needs is loaded; tuning, the store, search, serving, verify and the CLI
    load at their first use."""
    code = "import sys, tritune; print('\\n'.join(m for m in sys.modules if m.startswith('tritune')))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True)
    loaded = set(out.stdout.split())
    assert "tritune.decorator.autotuned" in loaded and "tritune.decorator.dispatch" in loaded
    heavy = ("tritune.engine", "tritune.store", "tritune.search", "tritune.serving", "tritune.verify", "tritune.cli",
             "tritune.offline", "tritune.ranks", "tritune.report", "tritune.screen", "tritune.workers",
             # a space's derivation and widening, the GPU timer, replay and ties: at first use too
             "tritune.space.derive", "tritune.space.widen", "tritune.space.blocks", "tritune.bench.event",
             "tritune.bench.replay", "tritune.bench.ties", "tritune.bench.synthetic")
    assert sorted(m for m in loaded if m.startswith(heavy)) == []


def test_lazy_names_load_at_first_use_and_stay() -> None:
    code = ("import sys, tritune.space as s; a = 'tritune.space.derive' in sys.modules; f = s.derive_space; "
            "print(a, 'tritune.space.derive' in sys.modules, 'derive_space' in vars(s), 'derive_space' in dir(s))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True)
    assert out.stdout.split() == ["False", "True", "True", "True"]


def test_the_documented_submodules_are_reached_from_import_tritune_alone() -> None:
    """``tritune.fleet.choices()`` and ``tritune.verify(...)`` as the docs write them, after ``import tritune`` only."""
    code = "import tritune; print(tritune.fleet.choices(), callable(tritune.verify))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0 and out.stdout.split() == ["[]", "True"], out.stderr
