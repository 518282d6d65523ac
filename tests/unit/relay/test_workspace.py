"""The workspace as a fold of WorkspaceChanged, and its git mirror: the files rebuilt from
the log equal the committed git tree at every checkpoint of a scripted relay."""

from __future__ import annotations

import shutil
import subprocess

import pytest
from pydantic import ValidationError

from actors.relay.git_workspace import GitWorkspace
from actors.relay.roadmap import RoadmapItem
from actors.relay.scheduler import (
    BuilderFinished,
    PlanRoadmap,
    SchedulerBehaviour,
    VerifierFinished,
    start_turn_id,
    verifier_turn_id,
)
from actors.relay.workspace import (
    apply_changes,
    changes_between,
    delete,
    diff_text,
    digest,
    fold_workspace,
    workspace_at,
    write,
)
from actors.relay.events import (
    BatonPacket,
    CheckpointStored,
    RelayBudget,
    RelayTurnStarted,
    TurnVerified,
    WorkspaceChanged,
)

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="needs the git CLI")


def changed(turn: str, *changes) -> WorkspaceChanged:
    return WorkspaceChanged(task_id="T", turn_id=turn, changes=list(changes))


LOG = [
    RelayTurnStarted(task_id="T", turn_id="t1", turn_number=1, roadmap_index=0, roadmap_chunk="a"),
    changed("t1", write("a.py", "a = 1\n"), write("pkg/b.py", "b = 2\n")),
    RelayTurnStarted(task_id="T", turn_id="t2", turn_number=2, roadmap_index=1, roadmap_chunk="b"),
    changed("t2", write("a.py", "a = 10\n"), delete("pkg/b.py"), write("c.txt", "no newline")),
    RelayTurnStarted(task_id="T", turn_id="t3", turn_number=3, roadmap_index=2, roadmap_chunk="c"),
]


def test_fold_and_workspace_at_each_turn():
    assert fold_workspace(LOG) == {"a.py": "a = 10\n", "c.txt": "no newline"}
    assert workspace_at(LOG, "t1") == {"a.py": "a = 1\n", "pkg/b.py": "b = 2\n"}
    assert workspace_at(LOG, "t2") == fold_workspace(LOG)
    assert workspace_at(LOG, "t3") == fold_workspace(LOG)  # a turn that changed nothing
    with pytest.raises(ValueError, match="no turn 't9'"):
        workspace_at(LOG, "t9")


def test_changes_between_round_trips():
    before, after = workspace_at(LOG, "t1"), fold_workspace(LOG)
    changes = changes_between(before, after)
    assert changes == [write("a.py", "a = 10\n"), write("c.txt", "no newline"), delete("pkg/b.py")]
    assert apply_changes(before, changes) == after
    assert changes_between(after, after) == []
    assert apply_changes(after, [delete("missing.py")]) == after  # deleting twice is harmless


def test_diff_text_shows_two_workspaces_apart():
    text = diff_text(workspace_at(LOG, "t1"), fold_workspace(LOG), before_label="main", after_label="fork")
    assert "--- main/a.py\n+++ fork/a.py\n" in text
    assert "-a = 1\n+a = 10\n" in text
    assert "--- main/pkg/b.py\n+++ /dev/null\n" in text and "-b = 2\n" in text
    assert "--- /dev/null\n+++ fork/c.txt\n" in text and "\\ No newline at end of file" in text
    assert diff_text(fold_workspace(LOG), fold_workspace(LOG)) == ""


def test_digest_names_the_content():
    a = fold_workspace(LOG)
    assert digest(a) == digest(dict(reversed(list(a.items()))))
    assert digest(a) != digest({**a, "a.py": "a = 11\n"})
    assert digest({"ab": "c"}) != digest({"a": "bc"})


@pytest.mark.parametrize("path", ["/etc/passwd", "../up.py", "a/../../b", ".git/config", "./a.py", ""])
def test_workspace_changed_rejects_paths_outside_the_workspace(path):
    with pytest.raises(ValidationError):
        changed("t", write(path, "x"))


def test_workspace_changed_rejects_malformed_changes():
    for bad in ({"path": "a", "kind": "write"}, {"path": "a", "kind": "delete", "content": "x"},
                {"path": "a", "kind": "rename", "content": "b"}, {"path": "a", "kind": "write", "content": "", "x": 1}):
        with pytest.raises(ValidationError):
            changed("t", bad)


def test_sync_makes_the_tree_a_rebuilt_workspace(tmp_path):
    ws = GitWorkspace(tmp_path / "ws").init()
    ws.write({"a.py": "1\n", "b/c.py": "2\n"})
    ws.commit("one")
    (ws.root / "untracked.log").write_text("verifier output")
    fresh = GitWorkspace(tmp_path / "ws").init()  # a resumed shell: it knows nothing touched
    fresh.sync({"a.py": "10\n", "d.py": "4\n"})
    fresh.commit("resumed")
    assert fresh.tree_files() == {"a.py": "10\n", "d.py": "4\n"}
    assert (ws.root / "untracked.log").exists()  # not the log's: neither committed nor removed


def test_git_workspace_refuses_to_write_outside(tmp_path):
    ws = GitWorkspace(tmp_path / "ws").init()
    with pytest.raises(ValueError):
        ws.write({"../escape.py": "x"})
    assert not (tmp_path / "escape.py").exists()


def test_git_workspace_round_trips_files(tmp_path):
    assert subprocess.run(["git", "--version"], capture_output=True).returncode == 0
    ws = GitWorkspace(tmp_path / "ws").init()
    assert ws.tree_files() == {}  # before the first commit
    files = {"a.py": "print('hi')\n", "deep/er/b.md": "# b\r\nwindows line\r\n", "c": "no newline"}
    ws.write(files)
    sha = ws.commit("first")
    assert len(sha) == 40
    assert ws.tree_files() == files
    ws.apply([delete("c")])
    ws.commit("second")
    assert ws.tree_files() == {k: v for k, v in files.items() if k != "c"}
    assert ws.tree_files(sha) == files
    assert GitWorkspace(tmp_path / "ws").init().tree_files() == ws.tree_files()  # init is idempotent


def test_the_workspace_rebuilt_from_the_log_equals_the_git_tree_at_every_checkpoint(tmp_path):
    """A scripted relay whose shell mirrors each WorkspaceChanged into a git repository and
    commits at each CheckpointStored; at every checkpoint the fold of the log so far, the
    scheduler's own state and the committed tree agree."""
    behaviour = SchedulerBehaviour()
    state = behaviour.initial()
    log: list = []
    ws = GitWorkspace(tmp_path / "ws").init()
    commits: dict[str, str] = {}

    def send(command):
        nonlocal state
        events = behaviour.decide(state, command)
        for e in events:
            log.append(e)
            state = behaviour.evolve(state, e)
            if isinstance(e, WorkspaceChanged):
                ws.apply(e.changes)
            if isinstance(e, TurnVerified):  # the verifier ran pytest in the workspace
                (ws.root / "__pycache__").mkdir(exist_ok=True)
                (ws.root / "__pycache__" / "calc.cpython-311.pyc").write_bytes(b"\0junk")
                (ws.root / ".coverage").write_text("junk")
            if isinstance(e, CheckpointStored):
                commits[e.checkpoint_id] = ws.commit(f"checkpoint {e.checkpoint_id}")
                assert ws.tree_files() == fold_workspace(log) == state.files
                assert sorted(ws.tree_files()) == e.files
                assert e.metadata["workspace_digest"] == digest(ws.tree_files())
        return events

    script = [  # (changes, verdict) per builder turn
        ([write("calc.py", "def add(a, b):\n    return a - b\n")], "FAILED"),
        ([write("calc.py", "def add(a, b):\n    return a + b\n"), write("test_calc.py", "import calc\n")], "PASSED"),
        ([write("cli.py", "import calc\n"), write("notes.txt", "draft")], "RETRY"),
        ([delete("notes.txt"), write("cli.py", "import calc\nprint(calc.add(1, 2))\n")], "PASSED"),
        ([write("README.md", "# calc\n"), write(".gitignore", "*.md\n")], "PASSED"),  # cannot hide README.md
    ]
    items = [RoadmapItem(title="add"), RoadmapItem(title="cli"), RoadmapItem(title="docs")]
    send(PlanRoadmap(key="plan", task_id="T", task="calc", items=items, budget=RelayBudget()))
    for n, (changes, verdict) in enumerate(script, start=1):
        turn = state.last_turn_id
        send(BuilderFinished(key=f"b{n}", turn_id=turn, changes=changes,
                             baton=BatonPacket(response_text="...", builder_summary=f"turn {n}")))
        send(VerifierFinished(key=f"v{n}", turn_id=verifier_turn_id("T", n), verified_turn_id=turn,
                              status=verdict, report=verdict))
    assert state.status == "done" and len(commits) == 3
    # and at each checkpoint afterwards: the log up to that turn equals that commit's tree
    for cp in (e for e in log if isinstance(e, CheckpointStored)):
        assert workspace_at(log, cp.turn_id) == ws.tree_files(commits[cp.checkpoint_id])


def test_a_workspace_that_held_files_already_starts_the_log(tmp_path):
    behaviour = SchedulerBehaviour()
    existing = {"setup.py": "from setuptools import setup\n", "src/app.py": "x = 1\n"}
    events = behaviour.decide(
        behaviour.initial(), PlanRoadmap(key="p", task_id="T", task="x", items=[RoadmapItem(title="a")], files=existing)
    )
    assert [type(e).__name__ for e in events] == ["RoadmapPlanned", "WorkspaceChanged", "RelayTurnStarted"]
    assert workspace_at(events, start_turn_id("T")) == existing
    assert behaviour.fold(behaviour.initial(), events).files == existing
