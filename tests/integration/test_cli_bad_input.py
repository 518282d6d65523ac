"""Every bad input is one line: the `chorus` verbs × {malformed input, missing file, unknown
id, store down, LLM down, bad output path}.

Each case runs the real `python -m actors.cli` in a fresh process, against its own copy of a
SQLite store holding one recorded run, and must end with exit 2, exactly one line on stderr
starting `chorus: error:`, no traceback, and nothing appended to the store.

No case may start Ray or the local model: a `ray` package that exits on import is put first on
the path, and CHORUS_LLM_BASE_URL always names a dead endpoint, so an LLM-down case has to
fail on the endpoint check, before Ray. The cases run side by side in a thread pool (each one
is a subprocess), once per module.
"""

from __future__ import annotations

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

FIXTURE = Path(__file__).parents[1] / "fixtures" / "runs" / "scripted_search_read_answer.jsonl"
RUN = "search_read_"
STORE_DOWN = {"CHORUS_STORE_URL": "postgresql://nobody@127.0.0.1:1/x"}
LLM_DOWN_URL = "http://127.0.0.1:1/v1"
NO_RAY = "RAY IMPORTED: a bad-input case must fail before Ray starts"


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
    # eval retrieval
    case("eval-missing-questions", "eval", "retrieval", "{D}/missing.json", "--root", "{D}"),
    case("eval-questions-not-json", "eval", "retrieval", "{D}/bad.json", "--repo", "{D}"),
    case("eval-gold-not-a-list", "eval", "retrieval", "{D}/gold5.json", "--repo", "{D}"),
    case("eval-questions-is-folder", "eval", "retrieval", "{D}/folder", "--repo", "{D}"),
    case("eval-missing-repo", "eval", "retrieval", "{D}/questions.json", "--root", "{D}/nope"),
    case("eval-no-root", "eval", "retrieval", "{D}/questions.json"),
    case("eval-unknown-method", "eval", "retrieval", "{D}/questions.json", "--repo", "{D}", "--methods", "magic"),
    # model
    case("model-gguf-missing", "model", CHORUS_GGUF="{D}/missing.gguf"),
    case("model-gguf-folder", "model", CHORUS_GGUF="{D}/folder"),
]


def _prepare(root: Path, db: Path) -> Path:
    """The case's folder: its own copy of the store, and the files the cases point at."""
    root.mkdir()
    shutil.copy(db, root / "chorus.db")
    (root / "afile").write_text("a regular file\n")
    (root / "folder").mkdir()
    (root / "bad.json").write_text("{not json\n")
    (root / "gold5.json").write_text('{"questions": [{"q": "where?", "gold": 5}]}')
    (root / "questions.json").write_text('{"questions": [{"q": "where?", "gold": ["a.py"]}]}')
    good = FIXTURE.read_text().splitlines()
    (root / "missing_keys.jsonl").write_text(good[0] + "\n" + '{"type": "AgentStarted"}\n')
    (root / "list_row.jsonl").write_text(good[0] + "\n[1, 2, 3]\n")
    (root / "gap.jsonl").write_text(FIXTURE_ROW % (1, 0) + "\n" + FIXTURE_ROW % (3, 1) + "\n")
    guard = root / "guard" / "ray"
    guard.mkdir(parents=True)
    (guard / "__init__.py").write_text(f"raise SystemExit({NO_RAY!r})\n")
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


def _run(c: Case, root: Path) -> Outcome:
    def fill(text: str) -> str:
        return text.replace("{D}", str(root))

    db = root / "chorus.db"
    env = {
        **os.environ,
        "CHORUS_DATA_DIR": str(root),
        "CHORUS_STORE_URL": f"sqlite:///{db}",
        "CHORUS_LLM_BASE_URL": LLM_DOWN_URL,
        "CHORUS_MODEL_WHEELS": str(root / "folder"),  # never download a model
        "PYTHONPATH": os.pathsep.join(filter(None, [str(root / "guard"), os.environ.get("PYTHONPATH")])),
    }
    env.pop("CHORUS_RAY_ADDRESS", None)
    for key, value in c.env.items():
        if value:
            env[key] = fill(value)
        else:
            env.pop(key, None)
    before = _head(db)
    proc = subprocess.run(
        [sys.executable, "-m", "actors.cli", *map(fill, c.args)],
        capture_output=True, text=True, env=env, timeout=120, cwd=Path(__file__).parents[2], check=False,
    )  # fmt: skip
    return Outcome(proc.returncode, proc.stderr, before, _head(db))


@pytest.fixture(scope="module")
def outcomes(tmp_path_factory) -> dict[str, Outcome]:
    base = tmp_path_factory.mktemp("bad_input")
    db = base / "chorus.db"
    with EventStore(f"sqlite:///{db}") as store:
        load_fixture(FIXTURE, store)
    roots = {c.id: _prepare(base / c.id, db) for c in CASES}
    with ThreadPoolExecutor(max_workers=4) as pool:
        futures = {c.id: pool.submit(_run, c, roots[c.id]) for c in CASES}
        return {cid: f.result() for cid, f in futures.items()}


@pytest.mark.parametrize("c", CASES, ids=[c.id for c in CASES])
def test_bad_input_is_one_line_and_writes_nothing(c: Case, outcomes: dict[str, Outcome]) -> None:
    out = outcomes[c.id]
    lines = out.stderr.strip().splitlines()
    assert NO_RAY not in out.stderr
    assert "Traceback" not in out.stderr, out.stderr
    assert out.returncode == 2, out.stderr
    assert len(lines) == 1 and lines[0].startswith("chorus: error:"), out.stderr
    assert out.head_after == out.head_before


def test_the_store_holds_the_recorded_run(outcomes: dict[str, Outcome]) -> None:
    assert {o.head_before for o in outcomes.values()} == {17}
