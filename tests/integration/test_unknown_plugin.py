"""A run whose event types no imported module defines (a workload of one's own, its plugin not
installed) reads as one line naming what to install, not a traceback; CHORUS_PLUGINS names
the module to import instead of packaging it (issue 35's guard)."""

from __future__ import annotations

from pathlib import Path

import pytest

import events.registry
from actors.cli.main import main
from actors.runtime import registry
from actors.runtime.replay import load_fixture
from events.store import EventStore

FIXTURE = Path(__file__).parents[1] / "fixtures" / "runs" / "scripted_search_read_answer.jsonl"
RUN = "search_read_"


@pytest.fixture
def store_url(tmp_path, monkeypatch):
    url = f"sqlite:///{tmp_path / 'chorus.db'}"
    with EventStore(url) as store:
        load_fixture(FIXTURE, store)
    monkeypatch.setenv("CHORUS_STORE_URL", url)
    monkeypatch.setenv("CHORUS_DATA_DIR", str(tmp_path / "data"))
    return url


@pytest.mark.parametrize("verb", [["log", RUN], ["events", RUN], ["replay", RUN], ["state", "agent:" + RUN]])
def test_an_event_type_no_module_defines_is_one_line_naming_what_to_install(store_url, monkeypatch, capsys, verb):
    types = dict(events.registry._TYPES)
    types.pop("AgentStarted")
    monkeypatch.setattr(events.registry, "_TYPES", types)
    assert main(verb) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1, err
    assert err[0].startswith("chorus: error: unknown event type 'AgentStarted'") and "CHORUS_PLUGINS" in err[0]


def test_chorus_plugins_imports_the_modules_it_names(monkeypatch):
    monkeypatch.setattr(registry, "_loaded", False)
    monkeypatch.setenv("CHORUS_PLUGINS", "tests.support.plugin_probe")
    registry.load_workloads()
    import tests.support.plugin_probe as probe

    assert probe.IMPORTED


def test_chorus_plugins_naming_a_missing_module_is_one_line(monkeypatch):
    monkeypatch.setattr(registry, "_loaded", False)
    monkeypatch.setenv("CHORUS_PLUGINS", "no_such_plugin_module_xyz")
    with pytest.raises(registry.RegistryError, match="CHORUS_PLUGINS names 'no_such_plugin_module_xyz'"):
        registry.load_workloads()
