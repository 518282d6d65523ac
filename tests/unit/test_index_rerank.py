"""`rerank-llm` (actors/index/rerank.py), pure: the fused top files shown to the model by their
chunk headers, its reply parsed, the ranking reordered as the model says, and the fused order
kept when the reply is garbage or the call fails. The model is scripted (ScriptedProvider)
and called through a ToolContext, as the evaluation calls the real one."""

from __future__ import annotations

import json

import pytest

from actors.index.rerank import (
    Candidate,
    apply_order,
    candidates,
    describe,
    parse_order,
    rerank,
    rerank_request,
)
from actors.testing.model import ScriptedProvider
from actors.runtime.llm.types import LlmError, LlmRequest
from actors.runtime.tool_context import ToolContext

# A fused ranking of chunks, best first: six files, `loop.py` twice; and every chunk's header
# as the collection holds them (some files have chunks the ranking does not reach).
HITS = [
    ("env.py", 1, 40),
    ("filters.py", 300, 340),
    ("env.py", 41, 80),
    ("runtime.py", 400, 440),
    ("loaders.py", 1, 30),
    ("utils.py", 10, 50),
    ("lexer.py", 1, 40),
]
HEADERS = {
    ("env.py", 1, 40): "",
    ("env.py", 41, 80): "class Environment > def __init__",
    ("env.py", 81, 120): "class Template",
    ("filters.py", 300, 340): "def do_filesizeformat",
    ("runtime.py", 1, 50): "class Context",
    ("runtime.py", 400, 440): "class LoopContext > def revindex",
    ("loaders.py", 1, 30): "class PackageLoader",
    ("utils.py", 10, 50): "class LRUCache",
    ("lexer.py", 1, 40): "class Lexer",
}
FUSED = ["env.py", "filters.py", "runtime.py", "loaders.py", "utils.py", "lexer.py"]
QUESTION = "How does LoopContext compute revindex?"


def scripted(*replies: str) -> tuple[ToolContext, ScriptedProvider]:
    provider = ScriptedProvider(list(replies))
    return ToolContext.local(provider, tool="rerank"), provider


def test_candidates_are_the_top_files_with_their_hits_headers_first_then_the_rest():
    cands = candidates(HITS, HEADERS, files=5)
    assert [c.path for c in cands] == FUSED[:5]
    assert cands[0].headers == ("class Environment > def __init__", "class Template")
    # the hit's header first, then the file's other headers in line order
    assert cands[2].headers == ("class LoopContext > def revindex", "class Context")
    assert candidates(HITS, HEADERS, files=2)[1] == Candidate("filters.py", ("def do_filesizeformat",))
    assert describe(Candidate("a.py", ())) == "a.py: (no classes or functions)"
    long = describe(Candidate("a.py", tuple(f"def f{i}" for i in range(200))), limit=60)
    assert len(long) <= len("a.py: ") + 60 and long.endswith("...")


def test_the_request_numbers_the_files_and_asks_for_the_best_ones_number():
    request = rerank_request(QUESTION, candidates(HITS, HEADERS), model="m")
    user = request.messages[-1]["content"]
    assert user.startswith(f"Question: {QUESTION}")
    assert "3. runtime.py: class LoopContext > def revindex; class Context" in user
    assert "1. env.py: class Environment > def __init__; class Template" in user
    assert request.response_schema["properties"]["file"]["maximum"] == 5
    assert request.model == "m" and request.params["temperature"] == 0.0


def test_the_model_reorders_the_top_files_as_it_says():
    context, provider = scripted(json.dumps({"file": 3}))
    out = rerank(QUESTION, HITS, HEADERS, context.complete)
    # runtime.py first, then the other candidates and the rest in fused order
    assert out.paths == ["runtime.py", "env.py", "filters.py", "loaders.py", "utils.py", "lexer.py"]
    assert out.order == [2] and out.reply is not None and provider.calls == 1
    assert "LoopContext" in provider.requests[0].messages[-1]["content"]

    context, _ = scripted(json.dumps({"file": 5}))
    assert rerank(QUESTION, HITS, HEADERS, context.complete).paths == ["utils.py", *FUSED[:4], "lexer.py"]
    # a list is applied as an order, best first
    context, _ = scripted(json.dumps({"ranking": [3, 1]}))
    assert rerank(QUESTION, HITS, HEADERS, context.complete).paths[:3] == ["runtime.py", "env.py", "filters.py"]
    context, _ = scripted(json.dumps({"ranking": [5, 4, 3, 2, 1]}))
    assert rerank(QUESTION, HITS, HEADERS, context.complete).paths == [*reversed(FUSED[:5]), "lexer.py"]


@pytest.mark.parametrize(
    "reply",
    [
        "I cannot tell which file answers this.",  # prose
        '{"ranking": [9, 0, -1]}',  # numbers out of range
        '{"file": 6}',  # not a candidate
        '{"file": "the runtime"}',  # not a number nor a path
        '{"ranking": []}',  # nothing named
        '{"answer": "runtime.py is best"}',  # no list at all
        '{"ranking": [true, "six", null]}',  # wrong types
        "",
    ],
)
def test_garbage_keeps_the_fused_order(reply):
    context, provider = scripted(reply)
    out = rerank(QUESTION, HITS, HEADERS, context.complete)
    assert out.paths == FUSED and out.order == [] and provider.calls == 1


def test_replies_that_are_not_clean_json_still_count_when_they_name_candidates():
    top = FUSED[:5]
    assert parse_order(None, "Ranking: [3, 1, 3, 7]", top) == [2, 0]  # repeats and 7 dropped
    assert parse_order({"files": ["runtime.py", 2]}, "", top) == [2, 1]  # paths, any key
    assert parse_order({"ranking": ["4", 4]}, "", top) == [3]
    assert apply_order(FUSED, top, [4]) == ["utils.py", *FUSED[:4], "lexer.py"]
    assert apply_order(FUSED + ["env.py"], top, []) == FUSED  # deduplicated, unchanged


def test_a_failed_call_keeps_the_fused_order_and_says_why():
    def fail(request: LlmRequest):
        raise LlmError("timeout", "the model took too long")

    out = rerank(QUESTION, HITS, HEADERS, fail)
    assert out.paths == FUSED and out.reply is None and "took too long" in out.error


def test_no_call_with_fewer_than_two_files():
    context, provider = scripted('{"file": 1}')
    one = [("env.py", 1, 40), ("env.py", 41, 80)]
    assert rerank(QUESTION, one, HEADERS, context.complete).paths == ["env.py"]
    assert rerank(QUESTION, [], HEADERS, context.complete).paths == []
    assert provider.calls == 0
