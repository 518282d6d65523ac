"""`chorus projections status | rebuild [NAME]`, through the argparse wiring that
`actors.cli.views.add_parsers` gives the `chorus` command, on SQLite and PostgreSQL.

`chorus` turns ValueError / StoreUnavailable into `chorus: error: <one line>` and exit 2;
`run` below does the same, as the `chorus` main function does.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

import pytest

from events.store import EventStore, StoreUnavailable
from events.runs import RunStarted, RunSubmitted
from projections import AuditProjection
from actors.cli.views import add_parsers

ROOT = Path(__file__).resolve().parents[2]


def run(argv: list[str], capsys) -> tuple[int, str, str]:
    parser = argparse.ArgumentParser(prog="chorus")
    add_parsers(parser.add_subparsers(metavar="COMMAND"))
    args = parser.parse_args(argv)
    try:
        code = int(args.func(args) or 0)
    except (ValueError, StoreUnavailable) as e:
        print(f"chorus: error: {str(e).strip().splitlines()[0]}", file=sys.stderr)
        code = 2
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture
def filled(durable_store_url):
    s = EventStore(durable_store_url)
    s.append("run:1", [RunSubmitted(goal="g", run_id="1"), RunStarted(lead_stream="a", run_id="1")], 0)
    s.close()
    return durable_store_url


def test_status_then_rebuild_then_status(filled, capsys):
    code, out, err = run(["projections", "status", "--store", filled], capsys)
    assert (code, err) == (0, "")
    line = next(line for line in out.splitlines() if line.startswith("audit "))
    v = f"v{AuditProjection.schema_version}"
    assert line.split()[:8] == ["audit", v, "position", "0", "head", "2", "lag", "2"]
    assert "not built yet" in line

    code, out, err = run(["projections", "rebuild", "--store", filled], capsys)
    assert (code, err) == (0, "")
    assert "rebuilt audit: 2 events up to position 2 in " in out

    code, out, _ = run(["projections", "status", "--store", filled], capsys)
    line = next(line for line in out.splitlines() if line.startswith("audit "))
    assert line.split()[:8] == ["audit", v, "position", "2", "head", "2", "lag", "0"]

    code, out, _ = run(["projections", "rebuild", "audit", "--store", filled], capsys)
    assert (code, out.split()[:3]) == (0, ["rebuilt", "audit:", "2"])


def test_the_store_url_comes_from_the_environment(filled, capsys, monkeypatch):
    monkeypatch.setenv("CHORUS_STORE_URL", filled)
    code, out, _ = run(["projections", "status"], capsys)
    assert code == 0 and out.startswith("audit ")


def test_an_unknown_projection_is_one_line_and_writes_nothing(tmp_path, capsys):
    db = tmp_path / "chorus.db"
    code, out, err = run(["projections", "rebuild", "nope", "--store", f"sqlite:///{db}"], capsys)
    assert (code, out) == (2, "")
    assert err.startswith("chorus: error: unknown projection 'nope' (known: audit, ")
    assert len(err.splitlines()) == 1
    assert not db.exists()


def test_an_unreachable_store_is_one_line(tmp_path, capsys):
    code, _, err = run(["projections", "status", "--store", f"sqlite:///{tmp_path}/missing/chorus.db"], capsys)
    assert code == 2
    assert err.startswith("chorus: error: cannot open event store ") and "does not exist" in err
    assert err.count("\n") == 1
    code, _, err = run(
        ["projections", "rebuild", "--store", "postgresql://postgres@127.0.0.1:1/test?connect_timeout=1"], capsys
    )
    assert code == 2 and err.startswith("chorus: error: cannot open event store ") and err.count("\n") == 1


def test_projections_without_an_action_prints_help(capsys):
    code, out, _ = run(["projections"], capsys)
    assert code == 2 and "status" in out and "rebuild" in out


def test_it_runs_in_a_fresh_process(filled):
    script = (
        "import argparse; from actors.cli.views import add_parsers; "
        "p = argparse.ArgumentParser(prog='chorus'); add_parsers(p.add_subparsers()); "
        "a = p.parse_args(['projections', 'rebuild']); raise SystemExit(a.func(a))"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=120, check=False,
        env={**os.environ, "CHORUS_STORE_URL": filled},
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("rebuilt audit: 2 events")


def test_follow_catches_up_and_stops_after_its_time(filled, capsys):
    code, out, err = run(["projections", "follow", "--seconds", "1", "--store", filled], capsys)
    assert code == 0 and "following the log" in err
    lines = out.splitlines()
    assert lines and all(" lag        0" in line for line in lines), out
