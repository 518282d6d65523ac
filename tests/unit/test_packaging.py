"""What `pip install` gets (issue 36): the wheel carries the data files the code reads (task
templates and examples, simulation packs, the page's static files) and the py.typed markers,
and the version is one answer everywhere (`chorus --version`, `actors.__version__`)."""

from __future__ import annotations

import subprocess
import sys
import zipfile
from importlib.metadata import version
from pathlib import Path

import actors
from actors.cli.main import main

ROOT = Path(__file__).parents[2]


def test_the_wheel_carries_the_data_the_code_reads(tmp_path):
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w", str(tmp_path), str(ROOT)],
        check=True, capture_output=True, timeout=300,
    )  # fmt: skip
    (wheel,) = tmp_path.glob("chorus-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    for needed in (
        "actors/tasks/templates/summarize-file.xml",
        "actors/tasks/examples/director_evaluator.sexp",
        "actors/simulation/packs/lighthouse.yaml",
        "actors/api/static/index.html",
        "actors/py.typed",
        "events/py.typed",
        "projections/py.typed",
    ):
        assert needed in names, needed
    assert not any(n.startswith(("tests/", "examples/", "evals/")) for n in names)


def test_the_version_is_one_answer(capsys):
    assert actors.__version__ == version("chorus")
    try:
        main(["--version"])
    except SystemExit as e:
        assert e.code == 0
    assert capsys.readouterr().out.strip() == f"chorus {actors.__version__}"
