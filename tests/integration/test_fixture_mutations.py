"""Mutation testing of the replay fixtures (issue 16): every recorded completion and tool
result changed, deleted, duplicated or reordered, every clock reading moved and every prompt
edited must make replay refuse the log, naming where. The score is printed at the end of the
test run (`fixture mutation score`) and must be 100%.

What catches a mutation here is the fixture's seal (a digest chain over its lines, checked
before anything is replayed). What replay would catch on its own, against a forger who
reseals the file, is measured by tests/bench/bench_mutations.py."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from actors.runtime.replay import FixtureError, load_fixture, replay_run
from tests.support.mutations import mutations, read_rows

FIXTURES = sorted((Path(__file__).parents[1] / "fixtures" / "runs").glob("*.jsonl"))
SCORES: dict[str, tuple[int, int]] = {}


def write(path: Path, rows: list[dict], seal: dict | None) -> Path:
    lines = [json.dumps(r, ensure_ascii=False) for r in rows] + ([json.dumps(seal)] if seal else [])
    path.write_text("\n".join(lines) + "\n")
    return path


def caught(path: Path) -> str | None:
    """Where loading or replaying the mutated fixture refused it; None if it passed."""
    try:
        store, run_id = load_fixture(path)
    except FixtureError as e:
        return str(e)
    with store:
        report = replay_run(store, run_id)
    return None if report.ok else report.divergence.describe()


@pytest.mark.parametrize("fixture", FIXTURES, ids=[p.stem for p in FIXTURES])
def test_every_mutation_of_a_fixture_is_refused_naming_where(fixture, tmp_path):
    rows, seal = read_rows(fixture.read_text())
    assert seal is not None, f"{fixture.name} is not sealed: python -m actors.runtime.replay.fixtures seal {fixture}"
    survivors, total = [], 0
    for name, mutated in mutations(rows):
        total += 1
        report = caught(write(tmp_path / "mutant.jsonl", mutated, seal))
        if report is None:
            survivors.append(name)
        else:
            assert re.search(r"line \d+|version \d+|position \d+|call \d+", report), f"{name}: {report}"
    SCORES[fixture.stem] = (total - len(survivors), total)
    assert total > 0
    assert not survivors, f"{len(survivors)} of {total} mutations replayed as if nothing changed: {survivors[:5]}"


def test_the_unmutated_fixtures_still_load_and_replay():
    for fixture in FIXTURES:
        assert caught(fixture) is None, fixture.name


def pytest_terminal_summary_line() -> str | None:
    if not SCORES:
        return None
    killed = sum(k for k, _ in SCORES.values())
    total = sum(t for _, t in SCORES.values())
    return f"fixture mutation score: {killed}/{total} mutations refused ({100 * killed / total:.1f}%) over {len(SCORES)} fixtures"
