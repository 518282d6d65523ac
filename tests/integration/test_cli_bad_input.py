"""Every bad input is one line: the `chorus` verbs × {malformed input, missing file, unknown
id, store down, LLM down, bad output path}.

Each case runs the `chorus` CLI in a process of its own, against its own copy of a SQLite
store holding one recorded run, and must end with exit 2, exactly one line on stderr starting
`chorus: error:`, no traceback, and nothing appended to the store.

The processes are forks of one runner (RUNNER) that imported the CLI and loaded the workloads
once: a case's process is the CLI's `main(argv)` in a fresh copy of that interpreter, with the
case's environment, its stderr on a file descriptor of its own, and its exit status the code
`python -m actors.cli` would exit with. A fresh `python -m actors.cli` costs about 1 s of CPU
in imports alone, 95 times over; a fork costs milliseconds. The real process boundary (the
`python -m actors.cli` entry point, its own imports, its exit code and stderr) is tested by
REAL_PROCESS: a handful of cases, one per kind of failure, run as real subprocesses too.

No case may start Ray or the local model: a `ray` package that exits on import is put first on
the path (the runner's and the real subprocesses'), and CHORUS_LLM_BASE_URL always names a dead
endpoint, so an LLM-down case has to fail on the endpoint check, before Ray.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from actors.runtime.replay import load_fixture
from events.store import EventStore

REPO = Path(__file__).parents[2]
FIXTURE = Path(__file__).parents[1] / "fixtures" / "runs" / "scripted_search_read_answer.jsonl"
RUN = "search_read_"
STORE_DOWN = {"CHORUS_STORE_URL": "postgresql://nobody@127.0.0.1:1/x"}
LLM_DOWN_URL = "http://127.0.0.1:1/v1"
NO_RAY = "RAY IMPORTED: a bad-input case must fail before Ray starts"
TIMEOUT_S = 120


@dataclass(frozen=True)
class Case:
    id: str
    args: tuple[str, ...]  # "{D}" is the case's own folder
    env: dict[str, str] = field(default_factory=dict)


def case(id: str, *args: str, **env: str) -> Case:
    return Case(id, args, env)


FIXTURE_ROW = (
    '{"type": "RunSubmitted", "schema_version": 1, "stream_id": "run:x", "version": %d, '
    '"event_id": "3769ef97-6399-466d-bc2a-f4087ba59aa%d", "run_id": "x", "causation_id": null, '
    '"command_id": "submit", "timestamp": "2026-11-21T21:56:33+00:00", '
    '"payload": {"goal": "g", "agent": "react", "params": {}, "budget": {}}}'
)

CASES = [
    # run (the default kind's verb)
    case("run-empty-goal", "run", " "),
    case("run-llm-down", "run", "what is the marker?", "--root", "{D}"),
    case("run-store-down", "run", "what is the marker?", "--root", "{D}", **STORE_DOWN),
    case("run-data-dir-under-file", "run", "goal", CHORUS_DATA_DIR="{D}/afile/sub", CHORUS_STORE_URL=""),
    case("run-data-dir-is-file", "run", "goal", CHORUS_DATA_DIR="{D}/afile", CHORUS_STORE_URL=""),
    case("run-bad-budget", "run", "goal", "--max-iterations", "0"),
    case("run-root-is-file", "run", "goal", "--root", "{D}/afile"),
    # what argparse itself refuses: one line too, not usage + error
    case("argparse-unknown-verb", "no-such-verb"),
    case("argparse-missing-argument", "run"),
    case("argparse-not-a-number", "runs", "--limit", "many"),
    case("argparse-unknown-option", "audit", "events", "--since", "yesterday-ish"),
    # runs
    case("runs-negative-limit", "runs", "--limit", "-1"),
    case("runs-zero-limit", "runs", "--limit", "0"),
    case("runs-store-down", "runs", **STORE_DOWN),
    case("runs-data-dir-under-file", "runs", CHORUS_DATA_DIR="{D}/afile/sub", CHORUS_STORE_URL=""),
    # events / log / state
    case("events-unknown-run", "events", "nosuchrun"),
    case("events-store-down", "events", RUN, **STORE_DOWN),
    case("log-unknown-run", "log", "nosuchrun"),
    case("log-store-down", "log", RUN, **STORE_DOWN),
    case("state-unknown-stream", "state", "agent:nosuchrun"),
    case("state-malformed-stream", "state", "nocolon"),
    case("state-bad-version", "state", f"agent:{RUN}", "--at", "-1"),
    case("state-store-down", "state", f"agent:{RUN}", **STORE_DOWN),
    # replay
    case("replay-unknown-run", "replay", "nosuchrun"),
    case("replay-nothing", "replay"),
    case("replay-run-and-fixture", "replay", RUN, "--fixture", str(FIXTURE)),
    case("replay-missing-fixture", "replay", "--fixture", "{D}/missing.jsonl"),
    case("replay-fixture-not-json", "replay", "--fixture", "{D}/bad.json"),
    case("replay-fixture-row-missing-keys", "replay", "--fixture", "{D}/missing_keys.jsonl"),
    case("replay-fixture-row-is-list", "replay", "--fixture", "{D}/list_row.jsonl"),
    case("replay-fixture-version-gap", "replay", "--fixture", "{D}/gap.jsonl"),
    case("replay-fixture-is-folder", "replay", "--fixture", "{D}/folder"),
    case("replay-store-down", "replay", RUN, **STORE_DOWN),
    # fork / diff
    case("fork-unknown-run", "fork", "nosuchrun", "--at", "3"),
    case("fork-bad-position", "fork", RUN, "--at", "-5"),
    case("fork-llm-down", "fork", RUN, "--at", "3"),
    case("fork-store-down", "fork", RUN, "--at", "3", **STORE_DOWN),
    case("diff-unknown-runs", "diff", "nosuchrun", "other"),
    case("diff-store-down", "diff", RUN, RUN, **STORE_DOWN),
    # export / snapshot
    case("export-unknown-run", "export", "nosuchrun", "--out", "{D}/out.jsonl"),
    case("export-out-folder", "export", RUN, "--out", "{D}/folder"),
    case("export-out-under-file", "export", RUN, "--out", "{D}/afile/out.jsonl"),
    case("export-out-missing-folder", "export", RUN, "--out", "{D}/nope/out.jsonl"),
    case("export-store-down", "export", RUN, "--out", "{D}/out.jsonl", **STORE_DOWN),
    case("snapshot-unknown-stream", "snapshot", "agent:nosuchrun"),
    case("snapshot-out-folder", "snapshot", f"agent:{RUN}", "--out", "{D}/folder"),
    case("snapshot-out-under-file", "snapshot", f"agent:{RUN}", "--out", "{D}/afile/s.json"),
    case("snapshot-out-missing-folder", "snapshot", f"agent:{RUN}", "--out", "{D}/nope/s.json"),
    case("snapshot-store-down", "snapshot", f"agent:{RUN}", **STORE_DOWN),
    # audit
    case("audit-events-unknown-run", "audit", "events", "--run", "nosuchrun"),
    case("audit-events-bad-limit", "audit", "events", "--limit", "0"),
    case("audit-events-store-down", "audit", "events", **STORE_DOWN),
    case("audit-export-out-folder", "audit", "export", "{D}/folder"),
    case("audit-export-out-under-file", "audit", "export", "{D}/afile/a.jsonl"),
    case("audit-export-out-missing-folder", "audit", "export", "{D}/nope/a.jsonl"),
    case("audit-export-unknown-run", "audit", "export", "--out", "{D}/a.jsonl", "--run", "nosuchrun"),
    case("audit-export-no-out", "audit", "export"),
    case("audit-export-out-twice", "audit", "export", "{D}/a.jsonl", "--out", "{D}/b.jsonl"),
    case("audit-export-store-down", "audit", "export", "{D}/a.jsonl", **STORE_DOWN),
    case("audit-llm-calls-unknown-run", "audit", "llm-calls", "--run", "nosuchrun"),
    case("audit-llm-calls-out-folder", "audit", "llm-calls", "--out", "{D}/folder"),
    case("audit-llm-calls-out-under-file", "audit", "llm-calls", "--out", "{D}/afile/c.jsonl"),
    case("audit-llm-calls-store-down", "audit", "llm-calls", **STORE_DOWN),
    case("audit-usage-unknown-run", "audit", "usage", "--run", "nosuchrun"),
    case("audit-usage-store-down", "audit", "usage", **STORE_DOWN),
    # projections
    case("projections-status-store-down", "projections", "status", **STORE_DOWN),
    case("projections-rebuild-unknown", "projections", "rebuild", "nosuchview"),
    case("projections-rebuild-store-down", "projections", "rebuild", **STORE_DOWN),
    # research / ask / task
    case("research-empty-objective", "research", " ", "--root", "{D}"),
    case("research-missing-repo", "research", "how does it work?", "--repo", "{D}/nope"),
    case("research-llm-down", "research", "how does it work?", "--root", "{D}"),
    case("research-store-down", "research", "how does it work?", "--root", "{D}", **STORE_DOWN),
    case("research-show-unknown", "research", "--show", "nosuchrun"),
    case("research-repo-is-file", "research", "how does it work?", "--root", "{D}/afile"),
    case("ask-missing-repo", "ask", "what is it?", "--repos", "{D}/nope"),
    case("ask-empty-question", "ask", " ", "--root", "{D}"),
    case("ask-repos-is-file", "ask", "what is it?", "--root", "{D}/afile"),
    case("ask-llm-down", "ask", "what is it?", "--root", "{D}"),
    case("ask-store-down", "ask", "what is it?", "--root", "{D}", **STORE_DOWN),
    case("ask-no-root", "ask", "what is it?"),
    case("task-malformed-sexp", "task", "(unclosed"),
    case("task-missing-file", "task", "--file", "{D}/missing.sexp"),
    case("task-store-down", "task", "(list 1 2)", **STORE_DOWN),
    case("task-file-is-folder", "task", "--file", "{D}/folder"),
    case("task-templates-is-file", "task", "(list 1 2)", "--templates", "{D}/afile"),
    case("task-index-is-folder", "task", "(list 1 2)", "--index", "{D}/folder"),
    # eval: moved out of the product (`python -m evals`, tests/integration/test_evals_bad_input.py)
    case("eval-moved", "eval", "retrieval", "{D}/questions.json", "--root", "{D}"),
    # model
    case("model-gguf-missing", "model", CHORUS_GGUF="{D}/missing.gguf"),
    case("model-gguf-folder", "model", CHORUS_GGUF="{D}/folder"),
]


# One case per kind of failure, also run as a real `python -m actors.cli` process.
REAL_PROCESS = (
    "argparse-unknown-verb",  # argparse's own refusal
    "run-llm-down",  # the endpoint check, before Ray
    "runs-store-down",  # the store
    "export-out-folder",  # a bad output path
    "replay-fixture-not-json",  # a malformed input file
)

# The case runner: imports the CLI and every workload once, then forks a process per case
# (at most JOBS at a time) and writes one JSON line per case: its id, exit status, stderr.
RUNNER = r"""
import json, os, signal, sys, time, traceback

cases_file, results_file, jobs, timeout_s = sys.argv[1], sys.argv[2], int(sys.argv[3]), float(sys.argv[4])
from actors.cli.main import main
from actors.runtime.registry import load_workloads

load_workloads()
sys.stdout.flush()
sys.stderr.flush()


def child(case):
    os.environ.clear()
    os.environ.update(case["env"])
    err = os.open(case["stderr"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
    os.dup2(err, 2)
    os.dup2(os.open(os.devnull, os.O_WRONLY), 1)
    try:  # as `python -m actors.cli`: sys.exit(main())
        code = main(case["args"])
    except SystemExit as e:
        code = e.code
    except BaseException:
        traceback.print_exc()
        code = 1
    if code is None:
        code = 0
    elif not isinstance(code, int):
        print(code, file=sys.stderr)
        code = 1
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    finally:
        os._exit(code)


cases = [json.loads(line) for line in open(cases_file)]
running = {}
with open(results_file, "w") as out:
    while cases or running:
        while cases and len(running) < jobs:
            case = cases.pop(0)
            pid = os.fork()
            if pid == 0:
                child(case)
            running[pid] = (case, time.monotonic() + timeout_s)
        pid, status = os.waitpid(-1, os.WNOHANG)
        if pid == 0:
            for pid, (case, deadline) in running.items():
                if time.monotonic() > deadline:
                    os.kill(pid, signal.SIGKILL)
            time.sleep(0.005)
            continue
        case, _ = running.pop(pid)
        code = os.waitstatus_to_exitcode(status)
        with open(case["stderr"]) as f:
            stderr = f.read()
        out.write(json.dumps({"id": case["id"], "returncode": code, "stderr": stderr}) + "\n")
        out.flush()
"""


def _prepare(root: Path, db: Path) -> Path:
    """The case's folder: its own copy of the store, and the files the cases point at."""
    root.mkdir()
    shutil.copy(db, root / "chorus.db")
    (root / "afile").write_text("a regular file\n")
    (root / "folder").mkdir()
    (root / "bad.json").write_text("{not json\n")
    (root / "questions.json").write_text('{"questions": [{"q": "where?", "gold": ["a.py"]}]}')
    good = FIXTURE.read_text().splitlines()
    (root / "missing_keys.jsonl").write_text(good[0] + "\n" + '{"type": "AgentStarted"}\n')
    (root / "list_row.jsonl").write_text(good[0] + "\n[1, 2, 3]\n")
    (root / "gap.jsonl").write_text(FIXTURE_ROW % (1, 0) + "\n" + FIXTURE_ROW % (3, 1) + "\n")
    return root


def _head(db: Path) -> int:
    with EventStore(f"sqlite:///{db}") as store:
        return store.max_position()


@dataclass
class Outcome:
    returncode: int
    stderr: str
    head_before: int
    head_after: int


def _env(c: Case, root: Path) -> dict[str, str]:
    """The case's environment: its own store and data folder, a dead LLM endpoint, no Ray
    (its folder is BASE/forked/ID or BASE/real/ID; the guard is BASE/guard)."""
    env = {
        **os.environ,
        "CHORUS_DATA_DIR": str(root),
        "CHORUS_STORE_URL": f"sqlite:///{root / 'chorus.db'}",
        "CHORUS_LLM_BASE_URL": LLM_DOWN_URL,
        "CHORUS_MODEL_WHEELS": str(root / "folder"),  # never download a model
        "PYTHONPATH": os.pathsep.join(filter(None, [str(root.parents[1] / "guard"), os.environ.get("PYTHONPATH")])),
    }
    env.pop("CHORUS_RAY_ADDRESS", None)
    for key, value in c.env.items():
        if value:
            env[key] = _fill(value, root)
        else:
            env.pop(key, None)
    return env


def _fill(text: str, root: Path) -> str:
    return text.replace("{D}", str(root))


def _run_forked(cases: list[Case], roots: dict[str, Path], base: Path) -> dict[str, Outcome]:
    """Every case in a fork of one runner process that imported the CLI once."""
    before = {c.id: _head(roots[c.id] / "chorus.db") for c in cases}
    (base / "stderr").mkdir()
    cases_file, results_file = base / "cases.jsonl", base / "results.jsonl"
    with cases_file.open("w") as f:
        for c in cases:
            root = roots[c.id]
            args = [_fill(a, root) for a in c.args]
            f.write(json.dumps({"id": c.id, "args": args, "env": _env(c, root), "stderr": str(base / "stderr" / c.id)}) + "\n")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(base.parent / "guard"), os.environ.get("PYTHONPATH")]))}
    jobs = max(2, os.cpu_count() or 2)
    runner = subprocess.run(
        [sys.executable, "-c", RUNNER, str(cases_file), str(results_file), str(jobs), str(TIMEOUT_S)],
        capture_output=True, text=True, env=env, timeout=TIMEOUT_S * len(cases) / jobs + 60, cwd=REPO, check=False,
    )  # fmt: skip
    assert runner.returncode == 0, f"the case runner failed: {runner.stderr}"
    results = [json.loads(line) for line in results_file.read_text().splitlines()]
    assert sorted(r["id"] for r in results) == sorted(before), runner.stderr
    return {
        r["id"]: Outcome(r["returncode"], r["stderr"], before[r["id"]], _head(roots[r["id"]] / "chorus.db"))
        for r in results
    }


def _run_real(c: Case, root: Path) -> Outcome:
    """The case as a real `python -m actors.cli` process."""
    db = root / "chorus.db"
    before = _head(db)
    proc = subprocess.run(
        [sys.executable, "-m", "actors.cli", *(_fill(a, root) for a in c.args)],
        capture_output=True, text=True, env=_env(c, root), timeout=TIMEOUT_S, cwd=REPO, check=False,
    )  # fmt: skip
    return Outcome(proc.returncode, proc.stderr, before, _head(db))


@pytest.fixture(scope="module")
def base(tmp_path_factory) -> Path:
    """A store holding the recorded run, and the guard that stops any import of Ray."""
    base = tmp_path_factory.mktemp("bad_input")
    with EventStore(f"sqlite:///{base / 'chorus.db'}") as store:
        load_fixture(FIXTURE, store)
    guard = base / "guard" / "ray"
    guard.mkdir(parents=True)
    (guard / "__init__.py").write_text(f"raise SystemExit({NO_RAY!r})\n")
    return base


@pytest.fixture(scope="module")
def outcomes(base: Path) -> dict[str, Outcome]:
    forked = base / "forked"
    forked.mkdir()
    roots = {c.id: _prepare(forked / c.id, base / "chorus.db") for c in CASES}
    return _run_forked(CASES, roots, forked)


@pytest.fixture(scope="module")
def real_outcomes(base: Path) -> dict[str, Outcome]:
    real = base / "real"
    real.mkdir()
    cases = [c for c in CASES if c.id in REAL_PROCESS]
    roots = {c.id: _prepare(real / c.id, base / "chorus.db") for c in cases}
    with ThreadPoolExecutor(max_workers=max(2, os.cpu_count() or 2)) as pool:
        futures = {c.id: pool.submit(_run_real, c, roots[c.id]) for c in cases}
        return {cid: f.result() for cid, f in futures.items()}


def check(out: Outcome) -> None:
    lines = out.stderr.strip().splitlines()
    assert NO_RAY not in out.stderr
    assert "Traceback" not in out.stderr, out.stderr
    assert out.returncode == 2, out.stderr
    assert len(lines) == 1 and lines[0].startswith("chorus: error:"), out.stderr
    assert out.head_after == out.head_before


@pytest.mark.parametrize("c", CASES, ids=[c.id for c in CASES])
def test_bad_input_is_one_line_and_writes_nothing(c: Case, outcomes: dict[str, Outcome]) -> None:
    check(outcomes[c.id])


@pytest.mark.parametrize("case_id", REAL_PROCESS)
def test_a_real_process_too(case_id: str, real_outcomes: dict[str, Outcome], outcomes: dict[str, Outcome]) -> None:
    """`python -m actors.cli`, imports and all: the same exit status and the same line."""
    out = real_outcomes[case_id]
    check(out)
    assert out.stderr == outcomes[case_id].stderr.replace("/forked/", "/real/")


def test_the_store_holds_the_recorded_run(outcomes: dict[str, Outcome]) -> None:
    assert {o.head_before for o in outcomes.values()} == {17}
