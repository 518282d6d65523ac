"""Every Python example in the README and the manual runs here, as a reader would run it.

The examples are found in the Markdown itself (```python blocks, with the manual's
`--8<-- "file"` includes resolved), so an example added to the docs is run without anyone
listing it, and one that stops working fails here:

- an example that opens a `Client()` runs as `python -m` would run it, in a fresh process on the
  embedded defaults (local Ray, a SQLite file in its own data directory), against an OpenAI-compatible endpoint over HTTP that
  answers like a model would (synths pick from their menu, the file agent reads a file and
  answers, any other call gets a short reply): the real `openai` client, no llama.cpp;
- an example that only defines tools and agents is imported and its last `@agent` run with
  the in-process runner (`actors.testing.run_agent`), signalled when it waits, then replayed;
- an example that defines `test_*` functions has them called.

The scripts of `examples/` that the docs include run the same way (their `__main__` part too).
"""

from __future__ import annotations

import importlib.util
import json
import os
import ast
import inspect
import re
import subprocess
import sys
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest

from actors.runtime.llm.types import LlmRequest
from actors.testing.simulation import menu, scripted_mind
from tests.support.sim_endpoint import serving

ROOT = Path(__file__).resolve().parents[2]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
BLOCK = re.compile(r"^```python\n(.*?)^```", re.S | re.M)
INCLUDE = re.compile(r'^--8<-- "([^"]+)"\s*$', re.M)

pytestmark = pytest.mark.ray


@dataclass(frozen=True)
class Example:
    where: str  # "docs/own-tools.md #2"
    code: str
    source: Path | None  # the file an include names: it runs as itself

    @property
    def opens_client(self) -> bool:
        return "Client(" in self.code


def examples() -> list[Example]:
    found = []
    for doc in DOCS:
        for n, m in enumerate(BLOCK.finditer(doc.read_text()), 1):
            code, source = m.group(1), None
            include = INCLUDE.fullmatch(code.strip())
            if include:
                source = ROOT / include.group(1)
                code = source.read_text()
            found.append(Example(f"{doc.relative_to(ROOT)} #{n}", code, source))
    return found


EXAMPLES = examples()


def model(request: LlmRequest) -> str:
    """An answer of the shape each kind of caller expects."""
    if menu(request):  # a synth, offered its actions
        return scripted_mind(request)
    system = next((str(m["content"]) for m in request.messages if m.get("role") == "system"), "")
    if "read_file" in system:  # the file agent: read the README, then answer from it
        seen = "\n".join(str(m["content"]) for m in request.messages if m.get("role") != "system")
        if "README.md" not in seen or "replay" not in seen.lower():
            return json.dumps({"thought": "Read it.", "action": "read_file", "args": {"path": "README.md", "start_line": 1}})
        return json.dumps({"thought": "Found it.", "action": "answer", "args": {"answer": "README.md says runs replay from their log."}})
    return "ok"


def test_the_docs_hold_examples_of_each_kind():
    """The finder works: it sees the README's quickstart, the client examples and the includes."""
    where = [e.where for e in EXAMPLES]
    assert "README.md #1" in where and any(e.source for e in EXAMPLES), where
    assert sum(e.opens_client for e in EXAMPLES) >= 3, where


@pytest.fixture(scope="module")
def endpoint():
    with serving(model) as url:
        yield url


RUNNER = """
import contextlib, io, json, runpy, sys, time, traceback
from actors import Client

results = {}
with Client() as chorus:
    chorus.ensure_ray()  # one local Ray for every program: each one's Client finds it running
    for where, module in json.loads(sys.argv[1]):
        out, started = io.StringIO(), time.monotonic()
        try:
            with contextlib.redirect_stdout(out):
                runpy.run_module(module, run_name="__main__", alter_sys=True)
            results[where] = {"ok": True, "stdout": out.getvalue(), "seconds": time.monotonic() - started}
        except BaseException:
            results[where] = {"ok": False, "stdout": out.getvalue(), "error": traceback.format_exc()}
print(json.dumps(results))
"""


def _program(code: str) -> str:
    """The code as Python sees it: comments and a module docstring do not make another example."""
    tree = ast.parse(code)
    if tree.body and isinstance(tree.body[0], ast.Expr) and isinstance(tree.body[0].value, ast.Constant):
        tree.body = tree.body[1:]
    return ast.dump(tree)


def _distinct(found: list[Example]) -> list[Example]:
    """One of each program (the README's quickstart is also the manual's; an example's file
    before a copy of it in the Markdown)."""
    seen: set[str] = set()
    ordered = sorted(found, key=lambda e: e.source is None)
    return [e for e in ordered if not (_program(e.code) in seen or seen.add(_program(e.code)))]


CLIENT_EXAMPLES = _distinct([e for e in EXAMPLES if e.opens_client])


@pytest.fixture(scope="module")
def client_runs(endpoint, tmp_path_factory) -> dict[str, Any]:
    """Every client example run as `python -m` runs it (`__name__ == "__main__"`), one after
    another in one fresh process on the embedded defaults (local Ray, a SQLite file in its own
    data directory): a Ray apiece would cost ~20 s each. A Markdown block is written to a
    module of its own on the path; an example's file runs by its module name."""
    tmp = tmp_path_factory.mktemp("doc_examples")
    programs = []
    for n, example in enumerate(CLIENT_EXAMPLES):
        if example.source is not None:
            module = ".".join(example.source.relative_to(ROOT).with_suffix("").parts)
        else:
            module = f"doc_example_{n}"
            (tmp / f"{module}.py").write_text(example.code)
        programs.append((example.where, module))
    env = {k: v for k, v in os.environ.items() if not k.startswith(("RAY_ADDRESS", "CHORUS_"))}
    env.update({
        "CHORUS_DATA_DIR": str(tmp / "data"),
        "CHORUS_LLM_BASE_URL": endpoint,
        "CHORUS_LLM_MODEL": "scripted",
        "PYTHONPATH": os.pathsep.join([str(ROOT), str(tmp)]),  # Ray's workers import the agents too
    })  # fmt: skip
    done = subprocess.run(
        [sys.executable, "-c", RUNNER, json.dumps(programs)], cwd=ROOT, env=env, capture_output=True, text=True, timeout=600
    )  # fmt: skip
    assert done.returncode == 0, f"the examples' runner failed:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("example", CLIENT_EXAMPLES, ids=[e.where for e in CLIENT_EXAMPLES])
def test_a_client_example_runs(example: Example, client_runs: dict[str, Any]):
    result = client_runs[example.where]
    assert result["ok"], f"{example.where} failed:\n{result['error']}"
    assert result["stdout"].strip(), f"{example.where} printed nothing"


def _load(example: Example, tmp_path: Path) -> Any:
    path = example.source or tmp_path / "doc_example.py"
    if example.source is None:
        path.write_text(example.code)
    name = f"doc_example_{abs(hash(example.where))}"
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # agents register by import path: the module must be findable
    spec.loader.exec_module(module)
    return module


DEFINING = _distinct([e for e in EXAMPLES if ("@agent" in e.code or "def test_" in e.code or "register_tool" in e.code)])


@pytest.mark.parametrize("example", DEFINING, ids=[e.where for e in DEFINING])
def test_an_example_that_defines_things_works(example: Example, tmp_path: Path):
    from actors.runtime.durable import AGENT_MARK
    from actors.testing import assert_replays, run_agent

    from actors.runtime.function_tool import FunctionTool
    from actors.runtime.registry import Registry

    before = dict(Registry._tools)
    try:
        module = _load(example, tmp_path)
        added = {  # class tools the example itself defines (a @tool function is run by its agent)
            name: cls for name, cls in Registry._tools.items()
            if before.get(name) is not cls and not issubclass(cls, FunctionTool)
        }  # fmt: skip
    finally:
        Registry._tools.clear()
        Registry._tools.update(before)  # the example's tool names are not left to other tests
    for name, cls in added.items():  # a class tool: made as a run makes it, then called
        params = inspect.signature(cls.execute).parameters
        out = cls(root=str(tmp_path)).execute(**{p: "one two three" for p in params if p != "self"})
        assert isinstance(out, str) and out, (example.where, name, out)
    tests = [f for name, f in vars(module).items() if name.startswith("test_") and callable(f)]
    for test in tests:
        test()
    agents = [f for f in vars(module).values() if callable(f) and getattr(f, AGENT_MARK, False) and getattr(f, "__module__", "") == module.__name__]
    if agents:
        now = [datetime.now(timezone.utc)]
        run = run_agent(agents[-1], "Chorus records every call before using it.", model=model, clock=lambda: now[0])
        for _ in range(5):  # a wait for a person gets an approval; a timer, a clock moved past it
            if run.status != "waiting":
                break
            awaited = [e.name for e in run.events if type(e).__name__ == "SignalAwaited"]
            if awaited and run.waiting_for == awaited[-1]:
                run = run.signal(run.waiting_for, {"ok": True})
            else:
                now[0] += timedelta(days=1)
                run = run.resume()
        assert run.status == "completed", (example.where, run.error)
        assert_replays(run.store, run.run_id)
    assert tests or agents or added, f"{example.where}: nothing to run"
