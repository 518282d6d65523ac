"""The wall between layers, enforced: imports run one way (events < projections <
actors.runtime < shared packages < workloads < front door, `.importlinter`), no module of
ours imports itself back through others (imports inside functions included), and the pure
cores load without Ray, the store or a database driver."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import grimp
import pytest

ROOT = Path(__file__).resolve().parents[2]
HEAVY = ("ray", "eventsourcing", "sqlite3", "psycopg")
# Behaviours, kernels, parsers, prompts: decide/evolve and what they call.
PURE_CORES = (
    "events",
    "actors.runtime.behaviour",
    "actors.runtime.effects",
    "actors.runtime.run",
    "actors.runtime.registry",
    "actors.runtime.llm.types",
    "actors.agent.react",
    "actors.agent.parsing",
    "actors.agent.policy",
    "actors.agent.prompts",
    "actors.research.prompts",
    "actors.codeqa.orchestrator",
    "actors.tasks.workflow",
    "actors.tasks.dispatcher",
    "actors.tasks.sexp.parser",
    "actors.tasks.sexp.evaluator",
    "actors.tasks.templates",
    "actors.index.chunking",
    "actors.tools.search",
    "actors.simulation.world",
    "actors.simulation.director",
    "actors.simulation.loader",
    "actors.simulation.cognition",
    "actors.simulation.snapshot",
    "actors.relay.scheduler",
    "actors.relay.verdict",
    "actors.relay.prompts",
    "actors.relay.edits",
)


def test_the_import_contracts_hold():
    done = subprocess.run(
        [str(Path(sys.executable).parent / "lint-imports"), "--no-logo", "--no-cache"],
        cwd=ROOT, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    assert "0 broken" in done.stdout


def strongly_connected(edges: dict[str, set[str]]) -> list[list[str]]:
    """Tarjan's components of more than one module (the import cycles)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in edges.get(v, ()):
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

    sys.setrecursionlimit(10_000)
    for v in list(edges):
        if v not in index:
            visit(v)
    return out


def test_strongly_connected_finds_a_cycle_and_only_cycles():
    assert strongly_connected({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert strongly_connected({"a": {"b"}, "b": set()}) == []


def test_no_module_of_ours_imports_itself_back():
    graph = grimp.build_graph("events", "projections", "actors", exclude_type_checking_imports=True)
    edges = {m: graph.find_modules_directly_imported_by(m) for m in graph.modules}
    # A package's __init__ is a module of its own: `actors.runtime.replay` importing its
    # submodules is the package being assembled, not a cycle unless one imports it back.
    assert strongly_connected(edges) == []


@pytest.mark.parametrize("module", PURE_CORES)
def test_a_pure_core_loads_without_ray_the_store_or_a_driver(module):
    probe = (
        f"import importlib, json, sys; importlib.import_module({module!r}); "
        f"print(json.dumps([m for m in {HEAVY!r} + ('events.store', 'projections') if m in sys.modules]))"
    )
    done = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == [], f"importing {module} loaded {done.stdout.strip()}"


def test_the_probe_sees_a_heavy_import():
    """The purity check can fail: importing the store does load eventsourcing and sqlite3."""
    probe = "import json, sys, events.store; print(json.dumps([m for m in ('eventsourcing', 'sqlite3') if m in sys.modules]))"
    done = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert json.loads(done.stdout) == ["eventsourcing", "sqlite3"]
