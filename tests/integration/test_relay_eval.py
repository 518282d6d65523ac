"""`python -m evals relay` through the real command, over HTTP to a scripted OpenAI-compatible
endpoint: a builder that is wrong until a verifier's defect capsule tells it why, so the
single shot fails where the relay passes on its second turn, and the hidden tests judge
both. Also the verifier's coherence modes, which decide what such a run costs."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from actors.relay.recording import verifier_stream
from actors.relay.verifier import Verifier
from actors.runtime.llm.types import LlmRequest
from events.effects import LlmRequested
from events.store import EventStore
from evals.humaneval import load_problems
from tests.support.sim_endpoint import serving

ROOT = Path(__file__).resolve().parents[2]
PROBLEMS = {p.entry_point: p for p in load_problems()}
COHERENT = json.dumps({"meets_criteria": True, "reason": "the body does what the docstring says", "unmet": []})


def learner(request: LlmRequest) -> str:
    """Answers a builder with a wrong body the first time and the reference solution once its
    prompt carries a defect; answers a coherence check yes."""
    system, user = request.messages[0]["content"], request.messages[-1]["content"]
    if "You are the Verifier" in system:
        return COHERENT
    name = re.search(r"Complete the function (\w+)", user).group(1)
    p = PROBLEMS[name]
    body = p.canonical_solution if "FAILED verification" in user else "    return None\n"
    return f"I completed {name}.\n\nFile: solution.py\n```python\n{p.prompt}{body}```\n\nVerification hints:\n- pytest\n"


def evals(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "evals", *args],
        env={**os.environ, **env},
        cwd=ROOT,  # `python -m evals` runs from a checkout
        capture_output=True,
        text=True,
        timeout=300,
    )


@pytest.fixture
def env(tmp_path):
    with serving(learner) as url:
        yield {"CHORUS_DATA_DIR": str(tmp_path), "CHORUS_LLM_BASE_URL": url, "CHORUS_STORE_URL": ""}


def test_the_relay_passes_where_a_single_shot_fails_and_the_table_says_so(env, tmp_path):
    out = tmp_path / "eval"
    done = evals(env, "relay", "--problems", "0,2", "--out", str(out))
    assert done.returncode == 0, done.stderr
    rows = {line.split("|")[1].strip(): line for line in done.stdout.splitlines() if line.startswith("| s") or line.startswith("| r")}
    assert "0.0% (0/2)" in rows["single"] and "100.0% (2/2)" in rows["relay"], done.stdout
    assert "| 2.00 |" in rows["relay"] and "| 1.00 |" in rows["single"]  # mean builder turns
    assert done.stdout.strip().splitlines()[0] == "| method | pass@1 | mean turns | mean tokens | s/problem |"
    # progress: one line per problem, naming both methods' outcomes
    lines = [ln for ln in done.stderr.splitlines() if ln.startswith("HumanEval/")]
    assert len(lines) == 2 and all("single fail" in ln and "relay PASS 2 turns" in ln for ln in lines)
    report = json.loads((out / "report.json").read_text())
    assert {(o["problem"], o["method"], o["passed"]) for o in report["outcomes"]} == {
        ("HumanEval/0", "single", False), ("HumanEval/0", "relay", True),
        ("HumanEval/2", "single", False), ("HumanEval/2", "relay", True),
    }  # fmt: skip
    assert all(o["why"] for o in report["outcomes"] if not o["passed"])  # the hidden tests' reason
    # the coherence check was asked only on the turn whose tests passed (the default mode)
    with EventStore(f"sqlite:///{out / 'humaneval.db'}") as store:
        for o in report["outcomes"]:
            asked = [e for e in store.read_stream(verifier_stream(o["run_id"])) if isinstance(e, LlmRequested)]
            assert [e.call_index for e in asked] == [2]  # turn 2's; the single shot is turn 1


def test_a_verifier_asks_for_coherence_as_configured():
    assert Verifier(coherence="off").coherence == "off"
    with pytest.raises(ValueError, match="coherence must be one of always, when-checks-pass, off"):
        Verifier(coherence="sometimes")  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("--problems", "0-200"), "there are problems 0-163"),
        (("--problems", "x"), "not a number"),
        (("--methods", "single,best"), "unknown best"),
        (("--max-retries", "-1"), "0 or more"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(env, tmp_path, args, message):
    done = evals(env, "relay", "--out", str(tmp_path / "o"), *args)
    assert done.returncode == 2
    assert message in done.stderr and len(done.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "o").exists()
