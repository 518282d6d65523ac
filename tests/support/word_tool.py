"""A third-party tool: the decorator is all it takes to be usable by agents."""

from __future__ import annotations

from actors.runtime.registry import Registry, Tool


@Registry.register_tool("word_count")
class WordCount(Tool):
    description = "Count the words in a text."

    def execute(self, text: str) -> str:
        return f"{len(text.split())} words"


def counts_words(request) -> str:
    """A scripted model that calls word_count once, then answers with what it saw."""
    import json

    from tests.support.fake_llm import step_of

    if step_of(request) == 1:
        return json.dumps({"thought": "count", "action": "word_count", "args": {"text": "one two three"}})
    seen = request.messages[-1]["content"]
    answer = "3 words" if "3 words" in seen else "unknown"
    return json.dumps({"thought": "done", "action": "answer", "args": {"answer": answer}})
