"""A scripted model for research runs: it recognises which prompt it is given (plan, map,
reduce, report, or a ReAct step) and answers it the way a sensible model would."""

from __future__ import annotations

import json
import subprocess

from actors.index.searcher import MAP_SYSTEM, REDUCE_SYSTEM
from actors.research.prompts import PLAN_SYSTEM, REPORT_SYSTEM, TOOL_PLAN_SYSTEM
from actors.runtime.llm.types import LlmRequest
from tests.support.fake_llm import step_of

LEDGER = '''"""The ledger: where payments are recorded."""


class Ledger:
    """Keeps every payment in order."""

    def __init__(self):
        self.entries = []

    def record(self, amount, payee):
        """Append a payment; the marker of this repository is LEDGER-42."""
        self.entries.append((amount, payee))
        return len(self.entries)
'''


def make_repo(root, *, git: bool = False):
    """A small repository with one answer file, one binary and one huge file to skip."""
    root.mkdir(parents=True, exist_ok=True)
    (root / "pkg").mkdir(exist_ok=True)
    (root / "pkg" / "ledger.py").write_text(LEDGER)
    (root / "pkg" / "colours.py").write_text("RED = 1\nGREEN = 2\nBLUE = 3\n\n\ndef mix(a, b):\n    return a + b\n")
    (root / "README.md").write_text("# Payments\n\nA tiny payments library. See pkg/.\n")
    (root / "logo.png").write_bytes(b"\x89PNG\r\n\x1a\n\0\0binary")
    (root / "blob.dat").write_bytes(b"\0\1\2" * 100)
    (root / "dump.txt").write_text("x" * 1_100_000)
    if git:
        env = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@e", "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@e", "HOME": str(root)}
        for cmd in (["git", "init", "-q"], ["git", "add", "-A"], ["git", "commit", "-qm", "init"]):
            subprocess.run(cmd, cwd=root, check=True, env=env, capture_output=True)
    return root


def _system(request: LlmRequest) -> str:
    first = request.messages[0]
    return str(first.get("content", "")) if first.get("role") == "system" else ""


def researcher(request: LlmRequest) -> str:
    system = _system(request)
    user = str(request.messages[-1].get("content", ""))
    if system == PLAN_SYSTEM:
        return json.dumps({"steps": ["Search the code for where payments are recorded", "Read the class found"]})
    if system.startswith(TOOL_PLAN_SYSTEM.split("{")[0]):
        return json.dumps({"steps": ["repository_search: where are payments recorded", "find_definition: Ledger.record"]})
    if system == MAP_SYSTEM:
        if "LEDGER-42" in user or "class Ledger" in user:
            return "Ledger.record appends a payment to entries; the marker is LEDGER-42."
        return "not relevant"
    if system == REDUCE_SYSTEM:
        return "Payments are recorded by Ledger.record in pkg/ledger.py (marker LEDGER-42)."
    if system == REPORT_SYSTEM:
        return "# Where payments are recorded\n\nPayments are recorded by `Ledger.record` (pkg/ledger.py:1-14); its marker is LEDGER-42."
    n = step_of(request)
    if n == 1:
        return json.dumps({"thought": "Search the index.", "action": "repository_search", "args": {"query": "where are payments recorded"}})
    if "find_definition(" not in system:  # a researcher recorded before grounding: the search's answer
        return json.dumps({"thought": "The search answered it.", "action": "answer", "args": {"answer": "Ledger.record in pkg/ledger.py records payments (LEDGER-42)."}})
    if n == 2:
        return json.dumps({"thought": "Read the method.", "action": "find_definition", "args": {"name": "Ledger.record"}})
    answer = {"answer": "Ledger.record in pkg/ledger.py records payments (LEDGER-42).", "source": "pkg/ledger.py:12",
              "quote": "self.entries.append((amount, payee))"}
    return json.dumps({"thought": "The definition answers it.", "action": "answer", "args": answer})
