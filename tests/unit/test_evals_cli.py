"""`python -m evals`: the measurements' command line, outside the product. It speaks `chorus`'s
dialect (`--root` for a folder, the old `--repo` a hidden alias; help on every flag), and
`chorus eval` says, in one line, what to run instead."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from actors.cli import reference
from actors.cli.main import main
from evals.__main__ import parser

ROOT = Path(__file__).resolve().parents[2]


def test_every_verb_and_flag_has_help_text():
    assert reference.missing_help(parser()) == []


def test_the_old_repo_spelling_is_a_hidden_alias():
    p = parser()
    old, new = p.parse_args(["retrieval", "q.json", "--repo", "D"]), p.parse_args(["retrieval", "q.json", "--root", "D"])
    assert str(old.repo) == str(new.repo) == "D"
    retrieval = next(sub for path, _, sub in reference.verbs(p) if path == ("retrieval",))
    shown = {o for a in reference.arguments(retrieval) if not reference.hidden(a) for o in a.option_strings}
    assert "--root" in shown and "--repo" not in shown


@pytest.mark.parametrize(
    ("argv", "says"),
    [
        (["eval", "retrieval", "q.json", "--root", "D"], "run `.venv/bin/python -m evals retrieval q.json --root D`"),
        (["eval"], "run `.venv/bin/python -m evals retrieval|relay ...`"),
    ],
)
def test_chorus_eval_says_what_to_run_instead(capsys, argv, says):
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("chorus: error: `chorus eval` moved out of the product") and says in err
    assert len(err.strip().splitlines()) == 1


def test_a_bad_question_file_is_one_line_of_python_m_evals(tmp_path, capsys):
    from evals.__main__ import main as evals_main

    assert evals_main(["retrieval", str(tmp_path / "missing.json"), "--root", str(tmp_path)]) == 2
    assert capsys.readouterr().err.strip() == f"python -m evals: error: question file {tmp_path / 'missing.json'} does not exist"


def test_the_product_loads_no_measurement():
    """Static imports are .importlinter's contract; this is the running `chorus` (its parser,
    every workload plugin loaded): no module of evals/ comes in."""
    probe = (
        "import json, sys; from actors.cli.main import _parser; from actors.runtime.registry import Registry; "
        "_parser().format_help(); Registry.names(); print(json.dumps(sorted(sys.modules)))"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True, timeout=120, cwd=ROOT)
    assert [m for m in json.loads(done.stdout.splitlines()[-1]) if m.split(".")[0] == "evals"] == []
