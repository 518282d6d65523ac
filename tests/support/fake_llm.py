"""Scripted models for fast tests. Each decides from the request alone (the "Step N of M"
line the prompt ends with), so a restarted actor gets the same reply for the same step —
as a real deterministic server would."""

from __future__ import annotations

import json
import re
import time

from actors.runtime.llm.types import LlmRequest

_STEP = re.compile(r"Step (\d+) of (\d+)")


def step_of(request: LlmRequest) -> int:
    found = _STEP.findall(str(request.messages[-1].get("content", "")))
    return int(found[-1][0]) if found else 1


def _step(thought: str, action: str, **args: object) -> str:
    return json.dumps({"thought": thought, "action": action, "args": args})


# The line of notes.txt (NOTES) that states the answer: what a grounded answer quotes.
QUOTE = {"source": "notes.txt:2", "quote": "the marker is ALPHA-7"}


def search_read_answer(request: LlmRequest) -> str:
    """search → read → answer about notes.txt."""
    n = step_of(request)
    if n == 1:
        return _step("Find the marker.", "search_files", query="marker")
    if n == 2:
        return _step("Read the file.", "read_file", path="notes.txt", start_line=1)
    return _step("Found it.", "answer", answer="The marker is ALPHA-7, in notes.txt.", **QUOTE)


def slow_reader(request: LlmRequest) -> str:
    """Eight reads of notes.txt, one line range each, then the answer; 0.3 s per call so a
    test has time to kill the actor mid-run."""
    time.sleep(0.3)
    n = step_of(request)
    if n <= 8:
        return _step(f"Read line {n}.", "read_file", path="notes.txt", start_line=n, end_line=n)
    return _step("Done.", "answer", answer="Read line by line, the notes give the marker ALPHA-7.", **QUOTE)


def repeater(request: LlmRequest) -> str:
    """Searches for the same thing until told off twice, then answers."""
    n = step_of(request)
    if n <= 3:
        return _step(f"Search, try {n}.", "search_files", query="marker")
    return _step("Answer.", "answer", answer="ALPHA-7", **QUOTE)


def garbage_then_answer(request: LlmRequest) -> str:
    n = step_of(request)
    if n == 1:
        return "I think I should look at the files first!!"
    return _step("Answer.", "answer", answer="ALPHA-7")


def never_answers(request: LlmRequest) -> str:
    n = step_of(request)
    return _step("Keep reading.", "read_file", path="notes.txt", start_line=n, end_line=n)


def sleepy(request: LlmRequest) -> str:
    time.sleep(0.25)
    return never_answers(request)


NOTES = "\n".join(
    ["notes for the test", "the marker is ALPHA-7", *[f"line {i}" for i in range(3, 13)]]
) + "\n"


def make_repo(root) -> None:
    """The tiny folder the scripted agents read."""
    (root / "notes.txt").write_text(NOTES)
    (root / "README.md").write_text("# Demo\nReplay runs from the log.\n")


def searches_forever(request: LlmRequest) -> str:
    """A new search every step (never a repeat, never the same thought), never an answer."""
    n = step_of(request)
    return _step(f"Try word number {n}.", "search_files", query=f"word{n}")
