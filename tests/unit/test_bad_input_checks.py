"""The checks behind `chorus`'s one-line errors, called directly: fixtures, the data folder,
output paths and the user's own GGUF."""

from __future__ import annotations

from pathlib import Path

import pytest

from actors.cli.paths import OutputPathError, writable_file
from actors.runtime.errors import UserError
from actors.runtime.llm.local_model import ModelError, ensure_model
from actors.runtime.replay import FixtureError, load_fixture
from actors.runtime.settings import ConfigError, Settings
from events.store import EventStore

FIXTURE = Path(__file__).parents[1] / "fixtures" / "runs" / "scripted_search_read_answer.jsonl"
ROW = (
    '{"type": "RunSubmitted", "schema_version": 1, "stream_id": "run:x", "version": %d, '
    '"event_id": "3769ef97-6399-466d-bc2a-f4087ba59aa%d", "run_id": "x", "causation_id": null, '
    '"command_id": "submit", "timestamp": "2026-11-21T21:56:33+00:00", '
    '"payload": {"goal": "g", "agent": "react", "params": {}, "budget": {}}}'
)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('{first}\n{"type": "AgentStarted"}\n', r"line 2 lacks schema_version, stream_id"),
        ("{first}\n[1, 2, 3]\n", r"line 2 is a JSON list, not an event object"),
        ("{first}\n\"text\"\n", r"line 2 is a JSON str"),
        (ROW % (1, 0) + "\n" + ROW % (3, 1) + "\n", r"line 2, event 2: run:x jumps to version 3, expected 2"),
        (ROW % (2, 0) + "\n", r"line 1, event 1: run:x jumps to version 2, expected 1"),
        (ROW.split(', "payload"')[0] % (1, 0) + ', "payload": [1]}\n', "payload must be an object"),
    ],
    ids=["missing-keys", "list", "string", "gap", "starts-late", "payload-list"],
)
def test_a_bad_fixture_names_file_and_line_and_appends_nothing(tmp_path, text, message):
    path = tmp_path / "bad.jsonl"
    path.write_text(text.replace("{first}", FIXTURE.read_text().splitlines()[0]))
    with EventStore("memory://") as store:
        load_fixture(FIXTURE, store)
        head = store.max_position()
        with pytest.raises(FixtureError, match=message) as info:
            load_fixture(path, store)
        assert str(path) in str(info.value) and "\n" not in str(info.value)
        assert store.max_position() == head


def test_a_data_dir_under_a_file_is_a_config_error(tmp_path, monkeypatch):
    (tmp_path / "afile").write_text("x")
    for where in ("afile", "afile/sub/deeper"):
        monkeypatch.setenv("CHORUS_DATA_DIR", str(tmp_path / where))
        monkeypatch.delenv("CHORUS_STORE_URL", raising=False)
        with pytest.raises(ConfigError, match="CHORUS_DATA_DIR=.*file"):
            Settings.from_env()
    monkeypatch.setenv("CHORUS_DATA_DIR", str(tmp_path / "not-yet" / "made"))
    assert Settings.from_env().data_dir == tmp_path / "not-yet" / "made"  # made on first use


def test_a_bad_setting_names_the_setting(monkeypatch, tmp_path):
    monkeypatch.setenv("CHORUS_DATA_DIR", str(tmp_path))
    monkeypatch.setenv("CHORUS_LLM_TIMEOUT", "soon")
    with pytest.raises(ConfigError, match="llm_timeout_s: .*'soon'"):
        Settings.from_env()


def test_output_paths(tmp_path):
    (tmp_path / "afile").write_text("x")
    (tmp_path / "folder").mkdir()
    assert writable_file(tmp_path / "out.json") == tmp_path / "out.json"
    for bad, why in (
        ("folder", "it is a folder"),
        ("afile/out.json", "afile is a file, not a folder"),
        ("afile/deeper/out.json", "afile is a file, not a folder"),
        ("missing/out.json", "folder .*missing does not exist"),
    ):
        with pytest.raises(OutputPathError, match=why) as info:
            writable_file(tmp_path / bad)
        assert isinstance(info.value, UserError)


@pytest.mark.parametrize(("name", "what"), [("missing.gguf", "missing"), ("folder", "a folder")])
def test_chorus_gguf_that_is_not_a_file_is_a_config_error(tmp_path, name, what):
    (tmp_path / "folder").mkdir()
    settings = Settings(data_dir=tmp_path, store_url="sqlite://", gguf_path=tmp_path / name)
    with pytest.raises(ModelError, match=f"which is {what}, not a file") as info:
        ensure_model(settings, download=False)
    assert isinstance(info.value, ConfigError)
