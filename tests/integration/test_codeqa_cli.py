"""`chorus ask` as a person uses it: bad input is one line, exit 2, and nothing in the log.
(A scripted run's output through the same rendering is in test_codeqa_ray.py; a real one is
the end-to-end test.)"""

from __future__ import annotations

from pathlib import Path

import pytest

from events.store import EventStore
from tests.support.cli import chorus


@pytest.fixture
def env(tmp_path):
    return {
        "CHORUS_DATA_DIR": str(tmp_path / "data"),
        "CHORUS_STORE_URL": f"sqlite:///{tmp_path / 'chorus.db'}",
        "CHORUS_LLM_BASE_URL": "http://127.0.0.1:9/v1",  # nothing answers: no run may start
    }


def logged(tmp_path: Path) -> int:
    db = tmp_path / "chorus.db"
    if not db.exists():
        return 0
    with EventStore(f"sqlite:///{db}") as store:
        return store.max_position()


@pytest.fixture
def repos(tmp_path):
    (tmp_path / "repos" / "shop").mkdir(parents=True)
    (tmp_path / "repos" / "shop" / "cart.py").write_text("def checkout(cart):\n    return sum(cart)\n")
    return tmp_path / "repos"


def test_help_shows_the_command(env):
    out = chorus("ask", "--help", env=env)
    assert out.returncode == 0 and "--root DIR" in out.stdout and "--max-iterations" in out.stdout


@pytest.mark.parametrize(
    "case, message",
    [
        ("missing", "chorus: error: repositories folder {dir} does not exist"),
        ("empty", "chorus: error: no repositories in {dir}: it holds no folders (each repository is a folder inside it)"),
        ("file", "chorus: error: repositories folder {dir} is not a folder"),
    ],
)
def test_a_bad_repositories_folder_is_one_line_and_writes_nothing(env, tmp_path, case, message):
    target = tmp_path / case
    if case == "empty":
        target.mkdir()
        (target / "loose.py").write_text("x = 1\n")  # files alone are not repositories
    elif case == "file":
        target.write_text("not a folder")
    out = chorus("ask", "How?", "--repos", str(target), env=env)
    assert (out.returncode, out.stderr.strip()) == (2, message.format(dir=target))
    assert out.stdout == "" and logged(tmp_path) == 0


def test_an_empty_question_is_one_line(env, tmp_path, repos):
    out = chorus("ask", "  ", "--repos", str(repos), env=env)
    assert (out.returncode, out.stderr.strip()) == (2, "chorus: error: the question is empty")
    assert logged(tmp_path) == 0


def test_bad_configuration_is_one_line(env, tmp_path, repos):
    env = {**env, "CHORUS_CODEQA_CONFIG": '{"code_reading": {"max_lines": "many"}}'}
    out = chorus("ask", "How?", "--repos", str(repos), env=env)
    assert out.returncode == 2 and len(out.stderr.strip().splitlines()) == 1
    assert out.stderr.startswith("chorus: error: invalid code-question configuration: code_reading.max_lines")
    assert logged(tmp_path) == 0


def test_an_unreachable_model_fails_before_anything_is_written(env, tmp_path, repos):
    out = chorus("ask", "How does checkout work?", "--repos", str(repos), env=env)
    assert out.returncode == 2 and len(out.stderr.strip().splitlines()) == 1, out.stderr
    assert "unreachable" in out.stderr and logged(tmp_path) == 0


def test_bad_iteration_limit_is_one_line(env, tmp_path, repos):
    out = chorus("ask", "How?", "--repos", str(repos), "--max-iterations", "0", env=env)
    assert (out.returncode, out.stderr.strip()) == (2, "chorus: error: max_iterations must be at least 1, not 0")
