"""Every bad input to `python -m evals retrieval` is one line: each case runs the command in a
process of its own, from the checkout, against a dead LLM endpoint, and must end with exit 2
and exactly one line on stderr starting `python -m evals: error:`, no traceback. (The relay
measurement's bad input is in test_relay_eval.py; `chorus eval` pointing here is in
test_cli_bad_input.py.)"""

from __future__ import annotations

import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
CASES = {
    "missing-questions": ("{D}/missing.json", "--root", "{D}"),
    "questions-not-json": ("{D}/bad.json", "--repo", "{D}"),
    "gold-not-a-list": ("{D}/gold5.json", "--repo", "{D}"),
    "questions-is-folder": ("{D}/folder", "--repo", "{D}"),
    "missing-repo": ("{D}/questions.json", "--root", "{D}/nope"),
    "no-root": ("{D}/questions.json",),
    "unknown-method": ("{D}/questions.json", "--repo", "{D}", "--methods", "magic"),
    "argparse-no-file": (),
}


@pytest.fixture(scope="module")
def outcomes(tmp_path_factory) -> dict[str, subprocess.CompletedProcess[str]]:
    d = tmp_path_factory.mktemp("evals")
    (d / "folder").mkdir()
    (d / "bad.json").write_text("{not json\n")
    (d / "gold5.json").write_text('{"questions": [{"q": "where?", "gold": 5}]}')
    (d / "questions.json").write_text('{"questions": [{"q": "where?", "gold": ["a.py"]}]}')
    env = {**os.environ, "CHORUS_DATA_DIR": str(d / "data"), "CHORUS_STORE_URL": "", "CHORUS_LLM_BASE_URL": "http://127.0.0.1:1/v1"}

    def run(args: tuple[str, ...]) -> subprocess.CompletedProcess[str]:
        argv = [a.replace("{D}", str(d)) for a in args]
        return subprocess.run(
            [sys.executable, "-m", "evals", "retrieval", *argv],
            capture_output=True, text=True, env=env, cwd=ROOT, timeout=300, check=False,
        )  # fmt: skip

    with ThreadPoolExecutor(max_workers=2) as pool:
        return dict(zip(CASES, pool.map(run, CASES.values()), strict=True))


@pytest.mark.parametrize("case_id", list(CASES))
def test_bad_input_is_one_line_and_exit_2(case_id: str, outcomes: dict[str, subprocess.CompletedProcess[str]]) -> None:
    done = outcomes[case_id]
    lines = done.stderr.strip().splitlines()
    assert done.returncode == 2, done.stderr
    assert len(lines) == 1 and lines[0].startswith("python -m evals: error:"), done.stderr
    assert "Traceback" not in done.stderr
