"""The snapshots view: actor states as JSON files, maintained by the projection runner,
with a chain of format migrations; `chorus snapshot`; and the runner's speed paths the
view relies on (stored records, bulk rebuild with indexes dropped).

Memory store by default; the tests that take `store_url` run on SQLite and PostgreSQL too.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Sequence
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from actors.agent.react import AgentState, ReactAgent
from actors.runtime.run import RunLifecycle, RunState
from actors.runtime.shell import rebuild
from events import ErrorInfo, Event, EventStore
from events.agent import AgentFailed, AgentStarted, AnswerGiven, StepDecided, StepRejected, ToolSpec
from events.base import ENVELOPE_FIELDS
from events.effects import LlmCompleted, LlmFailed, LlmRequested, ToolCalled, ToolReturned
from events.runs import RunCompleted, RunStarted, RunSubmitted
from projections import AuditProjection, AuditTrail, ProjectionRunner, ViewCursor, registered_projections
from projections import snapshots as snap
from projections.cli import add_parsers
from projections.debug import UnknownStream, state_at
from projections.projection import StoredRecord
from projections.snapshots import (
    SNAPSHOT_SCHEMA,
    ActorSnapshot,
    SnapshotFormatError,
    SnapshotProjection,
    migrate,
    migration,
    migration_chain,
    read_snapshot,
    snapshot_at,
    snapshot_directory,
    stream_folder,
    write_snapshot,
)

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "snapshots"
T0 = datetime(2026, 1, 1, tzinfo=timezone.utc)
TOOLS = [ToolSpec(name="search", signature="search(query: str)", description="grep")]


# -- building logs -------------------------------------------------------------------------


class Log:
    """Appends runs the way the runtime does: run:ID and agent:ID streams, plus noise."""

    def __init__(self, store: EventStore, prefix: str = "r") -> None:
        self.store, self.prefix = store, prefix
        self.versions: dict[str, int] = {}
        self.calls: dict[str, int] = {}
        self.tick = 0

    def append(self, stream: str, *events: Event) -> None:
        stamped = []
        for e in events:
            self.tick += 1
            stamped.append(e.stamp(timestamp=T0 + timedelta(seconds=self.tick, microseconds=self.tick * 7)))
        v = self.versions.get(stream, 0)
        self.store.append(stream, stamped, v)
        self.versions[stream] = v + len(stamped)

    def act(self, run: int, kind: str, text: str = "x") -> None:
        rid = f"{self.prefix}{run}"
        lifecycle, agent = f"run:{rid}", f"agent:{rid}"
        if kind == "noise":
            self.append(f"misc-{rid}", LlmCompleted(request_hash="h", call_index=1, content=text, run_id=rid))
            return
        if lifecycle not in self.versions:
            self.append(lifecycle, RunSubmitted(goal=f"goal {text}", run_id=rid))
        if agent not in self.versions:
            self.append(agent, AgentStarted(goal=f"goal {text}", root=".", tools=TOOLS, max_iterations=10,
                                            model="m", run_id=rid))
            self.append(lifecycle, RunStarted(lead_stream=agent, run_id=rid))
        i = self.calls[agent] = self.calls.get(agent, 0) + 1
        if kind == "step":
            self.append(
                agent,
                LlmRequested(model="m", messages=[{"role": "user", "content": text}], request_hash=f"h{i}",
                             call_index=i, run_id=rid),
                LlmCompleted(request_hash=f"h{i}", call_index=i, content=text, prompt_tokens=10 + i,
                             completion_tokens=i, run_id=rid),
                StepDecided(iteration=i, thought=f"think {text}", action="search", args={"q": text}, run_id=rid),
                ToolCalled(tool="search", args={"q": text}, call_index=i, run_id=rid),
                ToolReturned(tool="search", call_index=i, ok=True, output=f"found {text}", run_id=rid),
            )
        elif kind == "reject":
            self.append(agent, StepRejected(iteration=i, thought=text, action="nope", args={}, reason="unknown tool",
                                            observation=f"no tool {text}", run_id=rid))
        elif kind == "fail_llm":
            self.append(agent, LlmFailed(request_hash=f"h{i}", call_index=i, run_id=rid,
                                         error=ErrorInfo(type="llm_error", reason="timeout", message=text)))
        elif kind == "answer":
            self.append(agent, AnswerGiven(iteration=i, thought=text, answer=f"<answer>{text}</answer>", run_id=rid))
            self.append(lifecycle, RunCompleted(result=text, run_id=rid))
        elif kind == "fail":
            error = ErrorInfo(type="agent_error", reason="stuck", message=text)
            self.append(agent, AgentFailed(error=error, run_id=rid))


@pytest.fixture
def store():
    s = EventStore("memory://")
    yield s
    s.close()


def files(folder: Path) -> dict[str, str]:
    """Every file under `folder` (relative path -> text); temporary files would show too."""
    return {str(p.relative_to(folder)): p.read_text() for p in sorted(folder.rglob("*")) if p.is_file()}


def view(runner: ProjectionRunner) -> dict:
    return runner.views.dump(SnapshotProjection.tables)


# -- the view ------------------------------------------------------------------------------


def test_latest_and_every_nth_version_become_files(store, tmp_path):
    log = Log(store)
    for _ in range(3):
        log.act(0, "step", "alpha")
    log.act(0, "answer", "done")
    log.act(1, "noise")
    folder = tmp_path / "snaps"
    runner = ProjectionRunner(store, [SnapshotProjection(folder, every=5)], batch_size=4)
    runner.run_once()

    agent_events = store.read_stream("agent:r0")
    assert len(agent_events) == 17
    assert sorted(files(folder)) == [
        "agent:r0/10.json", "agent:r0/15.json", "agent:r0/5.json", "agent:r0/latest.json", "run:r0/latest.json",
    ]  # misc-r1 has no behaviour: no files
    latest = read_snapshot(folder / "agent:r0" / "latest.json")
    assert (latest.schema_version, latest.stream, latest.version, latest.actor) == (SNAPSHOT_SCHEMA, "agent:r0", 17, "react")
    assert latest.state_type == "AgentState" and latest.position == store.max_position() - 2
    assert latest.timestamp == agent_events[-1].timestamp.isoformat(timespec="microseconds")
    assert latest.typed_state() == rebuild(ReactAgent(), agent_events)
    assert latest.typed_state().status == "completed"
    five = read_snapshot(folder / "agent:r0" / "5.json")
    assert five.version == 5 and five.typed_state() == rebuild(ReactAgent(), agent_events[:5])
    run = read_snapshot(folder / "run:r0" / "latest.json")
    assert run.actor == "run" and run.typed_state() == rebuild(RunLifecycle(), store.read_stream("run:r0"))
    assert isinstance(run.typed_state(), RunState) and run.typed_state().status == "completed"
    # The outbox is empty once the files are written; the rows hold what the files hold.
    assert runner.views.query("SELECT * FROM snapshot_outbox") == []
    heads = {r["stream_id"]: r for r in runner.views.query("SELECT * FROM actor_heads")}
    assert heads["misc-r1"]["actor"] is None and heads["agent:r0"]["version"] == 17
    assert json.loads(heads["agent:r0"]["state"]) == latest.state


def test_snapshot_at_any_version_equals_the_state_at_it_with_or_without_the_view(store, tmp_path):
    log = Log(store)
    for kind in ("step", "reject", "step", "fail_llm", "step", "answer"):
        log.act(0, kind, kind)
    stream = "agent:r0"
    latest = store.stream_version(stream)
    without = {v: snapshot_at(store, stream, v) for v in range(1, latest + 1)}
    ProjectionRunner(store, [SnapshotProjection(tmp_path, every=4)]).run_once()
    for v in range(1, latest + 1):
        _, expected = state_at(store, stream, v)
        with_view = snapshot_at(store, stream, v)
        assert with_view.typed_state() == expected == without[v].typed_state()
        assert with_view.state == without[v].state
        # Straight from the view (a kept version or the head) it knows its position too.
        assert (with_view.position is not None) == (v % 4 == 0 or v == latest)
    assert snapshot_at(store, stream).version == latest
    assert snapshot_at(store, stream) == read_snapshot(tmp_path / "agent:r0" / "latest.json")


def test_snapshot_at_bad_input(store):
    Log(store).act(0, "step")
    with pytest.raises(UnknownStream, match="no stream with id 'agent:nope'"):
        snapshot_at(store, "agent:nope")
    with pytest.raises(ValueError, match=r"has versions 1\.\.6; --at 7 is outside"):
        snapshot_at(store, "agent:r0", 7)
    store.append("misc", [LlmCompleted(request_hash="h", call_index=1, content="c")], 0)
    with pytest.raises(ValueError, match="no behaviour known"):
        snapshot_at(store, "misc")


def test_an_agent_no_module_registered_gets_no_snapshots(store, tmp_path):
    store.append("run:z", [RunSubmitted(goal="g", agent="martian", run_id="z")], 0)
    store.append("agent:z", [AgentStarted(goal="g", root=".", tools=[], max_iterations=3, model="m", run_id="z")], 0)
    runner = ProjectionRunner(store, [SnapshotProjection(tmp_path)])
    runner.run_once()
    assert sorted(files(tmp_path)) == ["run:z/latest.json"]
    heads = {r["stream_id"]: r["actor"] for r in runner.views.query("SELECT stream_id, actor FROM actor_heads")}
    assert heads == {"run:z": "run", "agent:z": None}


KINDS = ("step", "step", "reject", "fail_llm", "answer", "fail", "noise")
plans = st.lists(st.tuples(st.integers(0, 3), st.sampled_from(KINDS), st.text(max_size=8)), min_size=1, max_size=25)


class Crash(Exception):
    pass


class CrashingSnapshots(SnapshotProjection):
    """Dies inside apply after `after` more events, with its batch half applied."""

    def __init__(self, directory: Path, after: int) -> None:
        super().__init__(directory, every=3, durable=False)
        self.left = after

    def apply_batch(self, c: ViewCursor, records: Sequence[StoredRecord]) -> None:
        if self.left < len(records):
            super().apply_batch(c, records[: self.left])
            raise Crash("killed")
        super().apply_batch(c, records)
        self.left -= len(records)


_examples = iter(range(10**6))


def test_incremental_crashed_and_rebuilt_views_and_files_are_the_same(store_url, tmp_path):
    """On every backend, with random runs cut into random batches."""
    store = EventStore(store_url)
    try:

        @settings(max_examples=20 if store_url == "memory://" else 5, deadline=None, database=None,
                  suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
        @given(plan=plans, cuts=st.sets(st.integers(0, 24)), batch=st.integers(1, 6), crash=st.integers(0, 40))
        def check(plan, cuts, batch, crash):
            n = next(_examples)
            folder = tmp_path / f"ex{n}"
            live = ProjectionRunner(store, [SnapshotProjection(folder / "live", every=3, durable=False)], batch_size=batch)
            log = Log(store, prefix=f"e{n}-")
            for i, (run, kind, text) in enumerate(plan):
                log.act(run, kind, text)
                if i in cuts:
                    live.run_once()
            live.run_once()
            # The store holds earlier examples too (the view is the store's): this
            # example's streams are the ones named e{n}-.
            incremental, written = view(live), files(folder / "live")
            assert all(f":e{n}-" in name for name in written)

            def mine(folder: Path) -> dict[str, str]:
                return {k: v for k, v in files(folder).items() if f":e{n}-" in k}

            # Killed mid-batch, then restarted by a new runner: the same view and files.
            try:
                ProjectionRunner(store, [CrashingSnapshots(folder / "crashed", after=crash)],
                                 batch_size=batch + 1).rebuild("snapshots")
            except Crash:
                pass
            again = ProjectionRunner(store, [SnapshotProjection(folder / "crashed", every=3, durable=False)],
                                     batch_size=batch + 2)
            again.run_once()
            assert view(again) == incremental
            assert mine(folder / "crashed") == written

            # And a rebuild from 0 in one bulk load.
            bulk = ProjectionRunner(store, [SnapshotProjection(folder / "rebuilt", every=3, durable=False)],
                                    bulk_threshold=0)
            bulk.rebuild("snapshots")
            assert view(bulk) == incremental
            assert mine(folder / "rebuilt") == written

        check()
    finally:
        store.close()


# -- exactly-once files ----------------------------------------------------------------------


def test_runners_racing_on_the_view_write_each_file_right(durable_store_url, tmp_path):
    """Two runners (as two processes would, each with its store) follow a log being
    written, flushing files concurrently: the files end as a rebuild makes them."""
    import threading

    store = EventStore(durable_store_url)
    done = threading.Event()
    errors: list[BaseException] = []
    folder = tmp_path / "raced"

    def writer() -> None:
        try:
            log = Log(store)
            for i in range(24):
                log.act(i % 4, ("step", "reject", "step", "answer")[i // 6 % 4] if i < 20 else "step", str(i))
        except BaseException as e:  # noqa: BLE001
            errors.append(e)
        finally:
            done.set()

    def follow() -> None:
        own = EventStore(durable_store_url)
        try:
            runner = ProjectionRunner(own, [SnapshotProjection(folder, every=4, durable=False)], batch_size=5)
            while not done.is_set():
                runner.run_once()
            runner.run_once()
        except BaseException as e:  # noqa: BLE001
            errors.append(e)
        finally:
            own.close()

    threads = [threading.Thread(target=writer)] + [threading.Thread(target=follow) for _ in range(2)]
    try:
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=300)
        assert not errors, errors
        raced = files(folder)
        runner = ProjectionRunner(store, [SnapshotProjection(tmp_path / "rebuilt", every=4, durable=False)])
        runner.run_once()
        got = view(runner)
        runner.rebuild("snapshots")
        assert view(runner) == got
        assert raced == files(tmp_path / "rebuilt") and "agent:r0/latest.json" in raced
    finally:
        store.close()


def test_a_crash_after_the_commit_leaves_the_files_queued_and_the_next_runner_writes_them(store, tmp_path, monkeypatch):
    log = Log(store)
    log.act(0, "step")
    real = snap.write_snapshot

    def broken(*args, **kwargs):
        raise OSError("disk gone")

    monkeypatch.setattr(snap, "write_snapshot", broken)
    with pytest.raises(OSError):
        ProjectionRunner(store, [SnapshotProjection(tmp_path)]).run_once()
    runner = ProjectionRunner(store, [SnapshotProjection(tmp_path)])
    assert runner.views.position("snapshots") == store.max_position()  # the view committed
    assert files(tmp_path) == {}
    queued = runner.views.query("SELECT stream_id, file, version FROM snapshot_outbox ORDER BY stream_id")
    assert queued == [
        {"stream_id": "agent:r0", "file": "latest", "version": 6},
        {"stream_id": "run:r0", "file": "latest", "version": 2},
    ]
    monkeypatch.setattr(snap, "write_snapshot", real)
    assert runner.run_once() == {"snapshots": 0}  # opening the view flushes the queue
    assert sorted(files(tmp_path)) == ["agent:r0/latest.json", "run:r0/latest.json"]
    assert runner.views.query("SELECT * FROM snapshot_outbox") == []


def test_a_crash_inside_the_batch_writes_no_files(store, tmp_path):
    Log(store).act(0, "step")
    with pytest.raises(Crash):
        ProjectionRunner(store, [CrashingSnapshots(tmp_path, after=3)]).run_once()
    assert files(tmp_path) == {}


def test_a_queue_entry_is_removed_only_for_the_version_written(store, tmp_path):
    log = Log(store)
    log.act(0, "step")
    runner = ProjectionRunner(store, [SnapshotProjection(tmp_path)])
    runner.run_once()
    p = runner.get("snapshots")
    # A writer that read the queue at version 3 while a batch moved the head to 6
    # rewrites latest.json from the head (6), and leaves the newer entry queued.
    with runner.views.transaction() as c:
        c.execute("INSERT INTO snapshot_outbox (stream_id, file, version) VALUES ('agent:r0', 'latest', 6)")
        p_docs = list(p._documents(c, [{"stream_id": "agent:r0", "file": "latest", "version": 3}]))
        c.execute("DELETE FROM snapshot_outbox WHERE stream_id = ? AND file = ? AND version = ?",
                  ("agent:r0", "latest", 3))
    [(doc, name)] = p_docs
    assert (doc.version, name) == (6, "latest.json")
    assert runner.views.query("SELECT version FROM snapshot_outbox") == [{"version": 6}]
    p.committed(runner.views)
    assert runner.views.query("SELECT * FROM snapshot_outbox") == []


def test_memory_stores_keep_rows_but_write_no_files_unless_told_where(store, monkeypatch):
    monkeypatch.delenv("CHORUS_SNAPSHOT_DIR", raising=False)
    Log(store).act(0, "step")
    runner = ProjectionRunner(store, [SnapshotProjection()])
    runner.run_once()
    assert len(runner.views.query("SELECT * FROM actor_heads")) == 2
    assert runner.views.query("SELECT * FROM snapshot_outbox") == []


def test_where_snapshots_go(monkeypatch, tmp_path):
    monkeypatch.delenv("CHORUS_SNAPSHOT_DIR", raising=False)
    monkeypatch.delenv("CHORUS_DATA_DIR", raising=False)
    assert snapshot_directory(f"sqlite:///{tmp_path}/data/chorus.db") == tmp_path / "data" / "snapshots"
    assert snapshot_directory("memory://") is None
    assert snapshot_directory("postgresql://u@h:5432/db") is None  # say where: no home-folder guess
    monkeypatch.setenv("CHORUS_DATA_DIR", str(tmp_path))
    assert snapshot_directory("postgresql://u@h:5432/db") == tmp_path / "snapshots"
    assert snapshot_directory("postgresql://u@h:5432/db?schema=prod") == tmp_path / "snapshots-prod"
    monkeypatch.setenv("CHORUS_SNAPSHOT_DIR", str(tmp_path / "x"))
    assert snapshot_directory("memory://") == tmp_path / "x"


def test_sqlite_snapshots_go_beside_the_database(tmp_path, monkeypatch):
    monkeypatch.delenv("CHORUS_SNAPSHOT_DIR", raising=False)
    with EventStore(f"sqlite:///{tmp_path}/chorus.db") as store:
        Log(store).act(0, "answer", "42")
        ProjectionRunner(store, [SnapshotProjection()]).run_once()
    assert sorted(files(tmp_path / "snapshots")) == ["agent:r0/latest.json", "run:r0/latest.json"]


def test_stream_folders_are_safe_file_names():
    assert stream_folder("agent:abc123") == "agent:abc123"
    assert stream_folder("a/b c") == "a%2Fb%20c"
    assert stream_folder("..") == "%2E."
    assert stream_folder(".hidden") == "%2Ehidden"


def test_files_are_written_atomically(tmp_path, monkeypatch):
    path = tmp_path / "latest.json"
    first = ActorSnapshot(stream="run:x", version=1, actor="run", state={"status": "submitted"})
    write_snapshot(path, first)
    assert read_snapshot(path) == first and oct(path.stat().st_mode & 0o777) == "0o644"

    def no_rename(*args):
        raise OSError("rename failed")

    monkeypatch.setattr(os, "replace", no_rename)
    with pytest.raises(OSError):
        write_snapshot(path, first.model_copy(update={"version": 2}))
    assert read_snapshot(path) == first  # the old file, whole
    assert [p.name for p in tmp_path.iterdir()] == ["latest.json"]  # no temporary file left
    with pytest.raises(FileNotFoundError, match="does not exist"):
        write_snapshot(tmp_path / "missing" / "x.json", first)


# -- migrations ------------------------------------------------------------------------------


def test_a_stored_0_1_0_snapshot_loads_through_the_chain():
    old = json.loads((FIXTURES / "agent_0.1.0.json").read_text())
    assert old["schema_version"] == "0.1.0" and "stream_id" in old
    loaded = read_snapshot(FIXTURES / "agent_0.1.0.json")
    assert loaded.schema_version == SNAPSHOT_SCHEMA == "0.3.0"
    assert (loaded.stream, loaded.version, loaded.actor, loaded.state_type) == (
        "agent:r-2025-03-01", 6, "react", "AgentState",
    )
    assert (loaded.position, loaded.timestamp, loaded.state_schema_version) == (None, None, 1)
    state = loaded.typed_state()
    assert isinstance(state, AgentState)
    assert (state.goal, state.iteration, state.tokens, state.tool_calls) == (
        "Which file defines the Registry class?", 1, 450, 1,
    )
    assert state.history[0].observation.startswith("actors/runtime/registry.py")
    # Fields added to the state since are filled with their defaults; the file is unchanged.
    assert state.same_thought_in_a_row == 0
    assert json.loads((FIXTURES / "agent_0.1.0.json").read_text()) == old


def test_a_stored_0_2_0_snapshot_takes_one_step():
    loaded = read_snapshot(FIXTURES / "run_0.2.0.json")
    assert (loaded.stream, loaded.actor, loaded.state_type) == ("run:r-2025-03-01", "run", "RunState")
    assert loaded.typed_state() == RunState(
        status="running", goal="Which file defines the Registry class?", agent="react",
        lead_stream="agent:r-2025-03-01",
    )


def test_the_chain_and_its_errors():
    assert migration_chain() == ["0.1.0", "0.2.0", "0.3.0"]
    current = ActorSnapshot(stream="s", version=1, actor="run", state={}).model_dump()
    assert migrate(current) == current
    with pytest.raises(SnapshotFormatError, match="newer than this code's 0.3.0"):
        migrate({**current, "schema_version": "0.4.0"})
    with pytest.raises(SnapshotFormatError, match=r"no migration from snapshot schema 0\.0\.9 \(known: 0\.1\.0, 0\.2\.0, 0\.3\.0\)"):
        migrate({**current, "schema_version": "0.0.9"})
    with pytest.raises(SnapshotFormatError, match="not a Chorus snapshot"):
        migrate({"stream": "s"})
    with pytest.raises(SnapshotFormatError, match="not a version"):
        migrate({**current, "schema_version": "latest"})
    with pytest.raises(SnapshotFormatError, match="invalid snapshot"):
        ActorSnapshot.from_document({**current, "version": "seven"})
    with pytest.raises(ValueError, match="exists already"):
        migration("0.1.0", "0.2.0")(lambda d: d)
    with pytest.raises(ValueError, match="goes forward"):
        migration("0.3.0", "0.2.0")
    with pytest.raises(SnapshotFormatError, match="state stored at schema v2"):
        ActorSnapshot(stream="s", version=1, actor="run", state_schema_version=2, state={}).typed_state()


def test_a_file_that_is_not_json_is_one_line(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text("{nope")
    with pytest.raises(SnapshotFormatError, match="is not JSON"):
        read_snapshot(bad)


# -- chorus snapshot -------------------------------------------------------------------------


def chorus(argv: list[str], capsys) -> tuple[int, str, str]:
    parser = argparse.ArgumentParser(prog="chorus")
    add_parsers(parser.add_subparsers(metavar="COMMAND"))
    args = parser.parse_args(argv)
    try:
        code = int(args.func(args) or 0)
    except (ValueError, LookupError, FileNotFoundError) as e:
        print(f"chorus: error: {str(e).strip().splitlines()[0]}", file=sys.stderr)
        code = 2
    out, err = capsys.readouterr()
    return code, out, err


def test_the_snapshot_command(tmp_path, capsys, monkeypatch):
    monkeypatch.delenv("CHORUS_SNAPSHOT_DIR", raising=False)
    url = f"sqlite:///{tmp_path}/chorus.db"
    with EventStore(url) as store:
        log = Log(store)
        log.act(0, "step", "a")
        log.act(0, "answer", "b")
        expected = {v: rebuild(ReactAgent(), store.read_stream("agent:r0", 1, v)) for v in (3, 7)}

    code, out, err = chorus(["snapshot", "agent:r0", "--store", url], capsys)
    assert (code, err) == (0, "")
    doc = ActorSnapshot.from_document(json.loads(out))
    assert doc.version == 7 and doc.typed_state() == expected[7]

    code, out, _ = chorus(["snapshot", "agent:r0", "--at", "3", "--store", url], capsys)
    assert ActorSnapshot.from_document(json.loads(out)).typed_state() == expected[3]

    target = tmp_path / "out" / "agent-3.json"
    code, _, err = chorus(["snapshot", "agent:r0", "--at", "3", "--out", str(target), "--store", url], capsys)
    assert (code, err) == (2, f"chorus: error: cannot write {target}: folder {target.parent} does not exist\n")
    target.parent.mkdir()
    code, out, _ = chorus(["snapshot", "agent:r0", "--at", "3", "--out", str(target), "--store", url], capsys)
    assert code == 0 and out == f"wrote agent:r0 at version 3 to {target}\n"
    assert read_snapshot(target).typed_state() == expected[3]

    code, out, err = chorus(["snapshot", "agent:nope", "--store", url], capsys)
    assert (code, out, err) == (2, "", "chorus: error: no stream with id 'agent:nope'\n")
    code, _, err = chorus(["snapshot", "agent:r0", "--at", "0", "--store", url], capsys)
    assert err == "chorus: error: stream 'agent:r0' has versions 1..7; --at 0 is outside\n"

    # The command writes nothing to the store: no view was built by it.
    code, out, _ = chorus(["projections", "status", "--store", url], capsys)
    line = next(line for line in out.splitlines() if line.startswith("snapshots "))
    assert "not built yet" in line
    code, out, _ = chorus(["projections", "rebuild", "snapshots", "--store", url], capsys)
    assert out.startswith("rebuilt snapshots: 10 events up to position 10")
    assert read_snapshot(tmp_path / "snapshots" / "agent:r0" / "latest.json").typed_state() == expected[7]


def test_the_snapshots_view_is_registered():
    assert any(isinstance(p, SnapshotProjection) for p in registered_projections())


# -- the runner's speed paths --------------------------------------------------------------------


def test_stored_records_decode_on_demand_to_what_the_store_reads(store):
    log = Log(store)
    log.act(0, "step", "ü\x00")
    runner = ProjectionRunner(store, [SnapshotProjection()])
    stored = runner._read(runner.get("snapshots"), 0, store.max_position())
    typed = list(store.read_all())
    assert [type(r) for r in stored] == [StoredRecord] * len(typed)
    assert [(r.position, r.stream_id, r.version, r.type_name) for r in stored] == [
        (t.position, t.event.stream_id, t.event.version, t.event.type_name) for t in typed
    ]
    assert [r.event for r in stored] == [t.event for t in typed]
    assert stored[0].unpacked()[0] == 1 and "position 1" in repr(stored[0])


def odd_events() -> list[Event]:
    """Every event type the audit view sees, with values that test the JSON path."""
    error = ErrorInfo(type="e", reason="r", message="m\x00", details={"at": T0, "n": (1, 2)})
    return [
        RunSubmitted(goal="ünïcode \x00 \u2028 \"quoted\"", params={"nan": float("nan"), "inf": float("inf"),
                                                                     "big": 2**70, "t": (1, "a")}),
        AgentStarted(goal="g", root="/", tools=TOOLS, max_iterations=3, model="m", params={"temperature": 0.1}),
        LlmRequested(model="m", messages=[{"role": "user", "content": "x\x00y"}], params={"seed": 7, "temperature": 1},
                     response_schema={"type": "object"}, request_hash="h", call_index=1),
        LlmCompleted(request_hash="h", call_index=1, content="c", parsed={"b": 1.5e-7, "a": [None, True]},
                     prompt_tokens=3, completion_tokens=4, latency_s=1e16, cost_usd=None),
        LlmFailed(request_hash="h2", call_index=2, error=error),
        StepDecided(iteration=1, thought="t", action="a", args={"when": T0, "x": b"bytes"}),
        ToolCalled(tool="t", args={}, call_index=1),
        ToolReturned(tool="t", call_index=1, ok=False, output="", error=error),
        AnswerGiven(iteration=2, thought="", answer=""),
        RunCompleted(result="r"),
    ]


def test_audit_rows_from_stored_records_are_the_rows_from_typed_events(store):
    envelope = set(ENVELOPE_FIELDS)
    events = odd_events()
    for i, e in enumerate(events):
        store.append(f"s{i % 3}", [e.stamp(run_id="run-ü", causation_id=None if i % 2 else "c", command_id="k")],
                     store.stream_version(f"s{i % 3}"))
    # A naive and a non-UTC timestamp, and one without microseconds.
    for j, t in enumerate((datetime(2026, 1, 1), T0.astimezone(timezone(timedelta(hours=5))) + timedelta(microseconds=5),
                           T0.replace(microsecond=0))):
        store.append("t", [RunStarted(lead_stream="x", timestamp=t)], j)
    typed = list(store.read_all())
    # The trail shows each event's payload as pydantic's own JSON.
    trail = AuditTrail.open(store)
    for e, r in zip(trail.events(), typed, strict=True):
        assert e.payload == json.loads(r.event.model_dump_json(exclude=envelope))
    # And the whole view, both ways.
    fast = ProjectionRunner(store, [AuditProjection()])
    fast.run_once()
    # Times in any zone or none are spanned as UTC text.
    [span] = fast.views.query("SELECT first_at, last_at, events FROM audit_streams WHERE stream_id = 't'")
    assert (span["first_at"], span["last_at"], span["events"]) == (
        "2026-01-01T00:00:00.000000+00:00", "2026-01-01T00:00:00.000005+00:00", 3,
    )

    class TypedAudit(AuditProjection):
        stored = False

    other = EventStore("memory://")
    try:
        for r in typed:
            other.append(r.event.stream_id, [r.event], r.event.version - 1)
        slow = ProjectionRunner(other, [TypedAudit()])
        slow.run_once()
        assert fast.views.dump(AuditProjection.tables) == slow.views.dump(AuditProjection.tables)
    finally:
        other.close()


def sqlite_indexes(c) -> set[str]:
    rows = c.execute("SELECT name FROM sqlite_master WHERE type = 'index' AND name NOT LIKE 'sqlite_%'").fetchall()
    return {r["name"] for r in rows}


def indexes_now(runner: ProjectionRunner) -> set[str]:
    with runner.views.transaction(commit=False) as c:
        return sqlite_indexes(c)


AUDIT_INDEXES = {name for name, _, _ in AuditProjection.indexes}


def pages(n: int, size: int) -> list[int]:
    return [size] * (n // size) + ([n % size] if n % size else [])


class Watching(AuditProjection):
    """Notes each batch's size and which secondary indexes exist while it is applied."""

    def __init__(self) -> None:
        self.seen: list[tuple[int, set[str]]] = []

    def apply_batch(self, c, records):
        self.seen.append((len(records), AUDIT_INDEXES & sqlite_indexes(c)))
        super().apply_batch(c, records)


def test_a_bulk_rebuild_drops_the_indexes_while_it_loads_and_makes_them_again(store):
    log = Log(store)
    for i in range(6):
        log.act(i % 2, "step", str(i))
    n = store.max_position()
    incremental = ProjectionRunner(store, [AuditProjection()], batch_size=4)
    incremental.run_once()
    expected = incremental.views.dump(AuditProjection.tables)
    assert AUDIT_INDEXES <= indexes_now(incremental)

    watching = Watching()
    runner = ProjectionRunner(store, [watching], batch_size=2, bulk_batch_size=9, bulk_threshold=10)
    [result] = runner.rebuild("audit")
    assert result.events == n
    assert [size for size, _ in watching.seen] == pages(n, 9)  # bulk batches, not 2
    assert all(found == set() for _, found in watching.seen)  # no secondary index while loading
    assert AUDIT_INDEXES <= indexes_now(runner)
    assert runner.views.dump(AuditProjection.tables) == expected

    # Under the threshold, a rebuild keeps its indexes and its batch size.
    watching = Watching()
    ProjectionRunner(store, [watching], batch_size=16, bulk_threshold=n + 1).rebuild("audit")
    assert [size for size, _ in watching.seen] == pages(n, 16)
    assert all(found == AUDIT_INDEXES for _, found in watching.seen)


def test_indexes_a_crashed_bulk_load_left_dropped_come_back_with_the_next_runner(store):
    log = Log(store)
    for i in range(4):
        log.act(i, "step")

    class Dying(AuditProjection):
        def apply_batch(self, c, records):
            if records[0].position > 10:
                raise Crash("killed")
            super().apply_batch(c, records)

    dying = ProjectionRunner(store, [Dying()], batch_size=2, bulk_batch_size=10, bulk_threshold=0)
    with pytest.raises(Crash):
        dying.rebuild("audit")
    assert dying.views.position("audit") == 10 and not AUDIT_INDEXES & indexes_now(dying)
    runner = ProjectionRunner(store, [AuditProjection()], bulk_threshold=0)
    runner.run_once()
    assert AUDIT_INDEXES <= indexes_now(runner)
    assert runner.views.position("audit") == store.max_position()
    fresh = runner.views.dump(AuditProjection.tables)
    runner.rebuild("audit")
    assert runner.views.dump(AuditProjection.tables) == fresh


def test_bulk_batch_size_must_be_positive(store):
    with pytest.raises(ValueError, match="bulk_batch_size"):
        ProjectionRunner(store, [AuditProjection()], bulk_batch_size=0)
