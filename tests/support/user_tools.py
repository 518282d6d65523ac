"""Tools of a user's own, as plain functions (`@tool`), found by import path on Ray workers."""

from __future__ import annotations

import json
from typing import Annotated

from pydantic import Field

from actors import Workspace, tool
from actors.runtime.llm.types import LlmRequest


@tool
def count_words(text: str, unique: bool = False) -> str:
    """Count the words in a text.

    With unique, count each word once. (This paragraph is not in the description.)"""
    words = text.lower().split()
    return f"{len(set(words) if unique else words)} words"


@tool(name="lines_in")
def count_lines(path: Annotated[str, Field(description="a file under the run's folder")], root: Workspace) -> int:
    """How many lines a file in the run's folder has."""
    target = (root / path).resolve()
    if not target.is_relative_to(root):
        raise ValueError(f"{path} is outside the run's folder")
    return len(target.read_text().splitlines())


def not_a_tool(text: str) -> str:
    return text


NOT_CALLABLE = 3


def counts_with_example_tool(request: LlmRequest) -> str:
    """A scripted model: calls word_count (examples/tools/word_count.py) with a wrong argument
    first, then rightly, then answers with what it saw."""
    from tests.support.fake_llm import step_of

    step = step_of(request)
    if step == 1:
        return json.dumps({"thought": "count", "action": "word_count", "args": {"words": "one two"}})
    if step == 2:
        return json.dumps({"thought": "again", "action": "word_count", "args": {"text": "the quick brown fox"}})
    seen = request.messages[-1]["content"]
    answer = "4 words" if "4 words" in seen else "unknown"
    return json.dumps({"thought": "done", "action": "answer", "args": {"answer": answer}})
