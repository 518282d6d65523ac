"""A relay forked at a builder turn, through the real `chorus` command in this process (a
scripted model behind `provider_for`, the real verifier): the fork's workspace at the fork
point is the original's at that turn, the fork continues live to its end, the original
(log, views, workspace) is untouched, `chorus replay` reproduces both workspaces, `chorus
diff` shows the two branches' code apart, and bad input is one line, exit 2, nothing written."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from actors.cli.main import main
from actors.relay import prompts, session
from actors.relay.fork import fork_relay
from actors.relay.git_workspace import GitWorkspace
from actors.relay.recording import builder_stream, scheduler_stream, verifier_stream
from actors.relay.session import serve_relay
from actors.relay.workspace import fold_workspace, workspace_at
from actors.runtime import embeddings
from actors.runtime.client import Client
from actors.testing.model import ScriptedProvider
from actors.runtime.settings import Settings
from actors.relay.events import RelayTurnStarted, TurnVerified
from events.store import EventStore
from tests.integration.test_relay_memory import HashingEmbedder
from tests.integration.test_relay_run import COHERENT, MUL, RIGHT, WRONG_1, reply

ROADMAP = (
    "items:\n"
    "  - title: Write add(a, b) in calc_add.py\n    acceptance: [add(2, 3) == 5, with a test]\n"
    "  - title: Write mul(a, b) in calc_mul.py\n    acceptance: [mul(2, 3) == 6, with a test]\n"
)
MUL_AGAIN = reply("mul", "b * a", 6)  # what the fork's builder writes instead


@pytest.fixture
def env(tmp_path, monkeypatch):
    """A recorded relay: turn 1 fails (add), turn 2 passes (add), turn 3 passes (mul)."""
    monkeypatch.setenv("CHORUS_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.delenv("CHORUS_STORE_URL", raising=False)
    mul = {"reply": MUL}

    def model(request) -> str:
        if request.messages[0]["content"] == prompts.VERIFIER_SYSTEM:
            return COHERENT
        user = request.messages[-1]["content"]
        if "mul(a, b)" in user.split("\n")[0]:
            return mul["reply"]
        return RIGHT if "FAILED verification" in user else WRONG_1

    provider = ScriptedProvider(model)
    monkeypatch.setattr(session, "provider_for", lambda client: provider)
    monkeypatch.setattr(
        embeddings,
        "embedder_from_settings",
        lambda settings: SimpleNamespace(embed=HashingEmbedder()),
    )
    (tmp_path / "ws").mkdir()
    (tmp_path / "ws" / "README.md").write_text("# arithmetic\n")
    (tmp_path / "roadmap.yaml").write_text(ROADMAP)
    args = [
        "relay",
        "arithmetic",
        "--workspace",
        str(tmp_path / "ws"),
        "--roadmap",
        str(tmp_path / "roadmap.yaml"),
    ]
    assert main([*args, "--quiet"]) == 0
    mul["reply"] = MUL_AGAIN
    with EventStore(Settings.from_env().store_url) as store:
        run_id = next(
            r.event.run_id
            for r in store.read_all()
            if r.event.type_name == "RunSubmitted"
        )
        verdicts = [
            e.status
            for e in store.read_stream(scheduler_stream(run_id))
            if isinstance(e, TurnVerified)
        ]
    assert verdicts == ["FAILED", "PASSED", "PASSED"]
    return tmp_path, provider, run_id


def client() -> Client:
    return Client(settings=Settings.from_env(), start_ray=False)


def snapshot(store: EventStore, run_id: str) -> list[tuple[str, int, str]]:
    return [
        (r.event.stream_id, r.event.version, r.event.type_name)
        for r in store.read_all(run_id=run_id)
    ]


def disk_files(folder) -> dict[str, str]:
    return {
        p.relative_to(folder).as_posix(): p.read_text()
        for p in folder.rglob("*")
        if p.is_file()
        and ".git" not in p.parts
        and "__pycache__" not in p.parts
        and ".pytest_cache" not in p.parts
    }


def test_a_fork_starts_from_the_turn_continues_live_and_leaves_the_original_alone(
    env, capsys
):
    tmp, provider, run_id = env
    ws = tmp / "ws"
    before_files, before_head = disk_files(ws), GitWorkspace(ws).tree_files()
    assert main(["relay", "--show", run_id]) == 0
    shown_before = capsys.readouterr().out
    with client() as c:
        before_log = snapshot(c.store, run_id)
        new = fork_relay(c, run_id, 2)
        fork_ws = tmp / f"ws-{new}"
        # at the fork point: the original's workspace at turn 2, committed in a repository of its own
        original_log = c.store.read_stream(scheduler_stream(run_id))
        at_turn_2 = workspace_at(original_log, f"{run_id}:turn:2")
        assert "calc_add.py" in at_turn_2 and "calc_mul.py" not in at_turn_2
        assert (
            GitWorkspace(fork_ws).tree_files() == at_turn_2
            and (fork_ws / ".git").is_dir()
        )
        assert fold_workspace(c.store.read_stream(scheduler_stream(new))) == at_turn_2
        run = c.run_state(new)
        assert run.forked_from == run_id and run.params["forked_at_turn"] == 2
        assert run.params["workspace"] == str(fork_ws)
        # the copy is the history up to turn 2's verification, re-addressed to the new run
        copied = c.store.read_stream(scheduler_stream(new))
        assert [e.turn_number for e in copied if isinstance(e, RelayTurnStarted)] == [
            1,
            2,
            3,
        ]
        assert copied[-1].turn_id == f"{new}:turn:3" and all(
            e.task_id == new for e in copied
        )
        assert [e.type_name for e in c.store.read_stream(builder_stream(new))].count(
            "LlmCompleted"
        ) == 2

        calls = provider.calls
        state = serve_relay(c, new)
        assert state.status == "done" and (state.passed, state.escalated) == (2, 0)
        assert (
            provider.calls == calls + 2
        )  # turn 3 alone, live: the builder and the coherence check
        assert c.run_result(new).status == "completed"
        assert "b * a" in (fork_ws / "calc_mul.py").read_text()
        # the original: its log, its workspace and its views as they were
        assert snapshot(c.store, run_id) == before_log
    assert (
        disk_files(ws) == before_files and GitWorkspace(ws).tree_files() == before_head
    )
    assert "a * b" in (ws / "calc_mul.py").read_text()
    assert main(["relay", "--show", run_id]) == 0
    assert capsys.readouterr().out == shown_before
    assert main(["relay", "--show", new]) == 0
    assert "2. [passed] Write mul(a, b)" in capsys.readouterr().out

    # replay reproduces each branch's workspace, with no live call
    calls = provider.calls
    for rid, folder in ((run_id, ws), (new, fork_ws)):
        assert main(["replay", rid]) == 0
        out = capsys.readouterr().out
        assert "identical" in out and "workspace reproduced: 5 file(s)" in out, out
        with EventStore(Settings.from_env().store_url) as store:
            assert fold_workspace(
                store.read_stream(scheduler_stream(rid))
            ) == disk_files(folder)
    assert provider.calls == calls

    # diff: the shared history, then the two branches' code apart
    assert main(["diff", run_id, new]) == 0
    out = capsys.readouterr().out
    shared = len(copied)
    assert f"share their first {shared} events" in out, out
    assert "the workspaces differ in 1 of 5 file(s):" in out
    assert f"--- {run_id}/calc_mul.py" in out and f"+++ {new}/calc_mul.py" in out
    assert "-    return a * b" in out and "+    return b * a" in out
    assert "calc_add.py" not in out.split("the workspaces differ")[1]


def test_chorus_fork_at_a_turn_follows_the_fork_to_its_end(env, capsys):
    tmp, _, run_id = env
    capsys.readouterr()
    assert main(["fork", run_id, "--at", "1", "--quiet"]) == 0
    out = capsys.readouterr().out
    new = out.split()[1]
    assert f"run {new} (forked from {run_id} at turn 1)" in out
    assert out.strip().endswith("2 of 2 roadmap items passed, 0 escalated")
    fork_ws = tmp / f"ws-{new}"
    assert (
        "a + b" in (fork_ws / "calc_add.py").read_text()
        and "b * a" in (fork_ws / "calc_mul.py").read_text()
    )
    with EventStore(Settings.from_env().store_url) as store:
        turns = [
            e.turn_number
            for e in store.read_stream(scheduler_stream(new))
            if isinstance(e, TurnVerified)
        ]
        assert turns == [1, 2, 3]
        # turn 1's check results were copied; turns 2 and 3 were checked live
        tools = [
            e
            for e in store.read_stream(verifier_stream(new))
            if e.type_name == "ToolCalled"
        ]
        assert [e.args["turn_id"] for e in tools] == [
            f"{new}:turn:{n}" for n in (1, 1, 2, 2, 3, 3)
        ]
        recalled = [
            e
            for e in store.read_stream(builder_stream(new))
            if e.type_name == "ToolCalled"
        ]
        assert [e.args["turn_id"] for e in recalled] == [
            f"{new}:turn:{n}" for n in (1, 2, 3)
        ]
    assert main(["replay", new]) == 0
    assert "workspace reproduced" in capsys.readouterr().out
    assert main(["diff", run_id, new]) == 0
    assert "+    return b * a" in capsys.readouterr().out


def test_a_fork_in_a_given_workspace_with_other_params_replays_each_call_as_recorded(
    env, capsys
):
    tmp, provider, run_id = env
    with client() as c:
        new = fork_relay(
            c, run_id, 1, workspace=tmp / "elsewhere", llm_params={"temperature": 0.5}
        )
        at_turn_1 = GitWorkspace(tmp / "elsewhere").tree_files()
        assert at_turn_1 == workspace_at(
            c.store.read_stream(scheduler_stream(run_id)), f"{run_id}:turn:1"
        )
        assert (
            "a - b" in at_turn_1["calc_add.py"]
        )  # turn 1's wrong answer, as the original had it
        calls = provider.calls
        state = serve_relay(c, new)
        assert (
            state.status == "done" and provider.calls == calls + 4
        )  # turns 2 and 3, two calls each
        requests = [
            e
            for e in c.store.read_stream(builder_stream(new))
            if e.type_name == "LlmRequested"
        ]
        # turn 1 as recorded; turn 2, a retry, no cooler than RETRY_TEMPERATURE; turn 3 the fork's
        assert [r.params["temperature"] for r in requests] == [0.2, prompts.RETRY_TEMPERATURE, 0.5]
        first = fork_relay(c, run_id, 0)  # the plan alone: every turn is still to come
        starts = [
            e
            for e in c.store.read_stream(scheduler_stream(first))
            if isinstance(e, RelayTurnStarted)
        ]
        assert [e.turn_number for e in starts] == [1]
        assert GitWorkspace(tmp / f"ws-{first}").tree_files() == {
            "README.md": "# arithmetic\n"
        }
    capsys.readouterr()
    assert main(["replay", new]) == 0
    assert "identical" in capsys.readouterr().out


@pytest.mark.parametrize(
    "args, message",
    [
        (["fork", "nosuchrun", "--at", "1"], "nosuchrun"),
        (["fork", "RUN", "--at", "4"], "fork it at a turn from 0 to 3, not 4"),
        (["fork", "RUN", "--at", "-1"], "not -1"),
        (["fork", "RUN", "--at", "3"], "finished its roadmap with turn 3"),
        (["fork", "RUN", "--at", "1", "--model", "another"], "--model does not apply"),
    ],
)
def test_bad_input_is_one_line_exit_2_and_nothing_written(env, capsys, args, message):
    tmp, provider, run_id = env
    capsys.readouterr()
    with EventStore(Settings.from_env().store_url) as store:
        before = len(list(store.read_all()))
    folders, calls = sorted(p.name for p in tmp.iterdir()), provider.calls
    assert main([run_id if a == "RUN" else a for a in args]) == 2
    err = capsys.readouterr().err.strip()
    assert (
        len(err.splitlines()) == 1
        and err.startswith("chorus: error:")
        and message in err
    ), err
    with EventStore(Settings.from_env().store_url) as store:
        assert len(list(store.read_all())) == before
    assert sorted(p.name for p in tmp.iterdir()) == folders and provider.calls == calls


def test_a_workspace_in_use_is_refused_before_anything_is_written(env):
    tmp, _, run_id = env
    (tmp / "busy").mkdir()
    (tmp / "busy" / "notes.txt").write_text("mine\n")
    with client() as c:
        before = len(list(c.store.read_all()))
        with pytest.raises(ValueError, match="is in use"):
            fork_relay(c, run_id, 1, workspace=tmp / "busy")
        with pytest.raises(ValueError, match="exists already"):
            fork_relay(c, run_id, 1, new_id=run_id, workspace=tmp / "free")
        with pytest.raises(ValueError, match="is not a relay"):
            c.begin_run("plain", goal="g", kind="react", params={})
            fork_relay(c, "plain", 1)
        assert (
            len(list(c.store.read_all())) == before + 1
        )  # the plain run's own RunSubmitted
    assert not (tmp / "busy" / ".git").exists() and not (tmp / "free").exists()
