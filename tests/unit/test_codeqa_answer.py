"""What an answer relied on (`actors.codeqa.answer.relied_on`), read from semantic_file_search's
output in every form the tool prints: the repository index's rankings (hybrid, the default;
dense; lexical), seed 003's HyDE (ranked by similarity, or few candidates by occurrences),
and the hybrid-HyDE fallback. Each output is made by the tool's own formatter."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from actors.codeqa.answer import Source, relied_on
from actors.codeqa.hyde import RankedFile, SemanticResult
from actors.codeqa.occurrences import FileCount
from actors.codeqa.formatting import format_fallback, format_index_hits, format_semantic
from actors.codeqa.fusion import FallbackResult
from actors.index.vectors import Hit

ANSWER = "apply_discount in shop/shop/billing.py takes 10% off; checkout in cart.py calls it."
HITS = [
    Hit("shop/shop/billing.py", 6, 10, "def apply_discount", "python", 0.0331),
    Hit("shop/shop/cart.py", 1, 6, "def checkout", "python", 0.0325),
    Hit("notes/README.md", 1, 2, "# notes", "markdown", 0.0161),
]
EXPECTED = [Source("shop/shop/billing.py", ((6, 10),)), Source("shop/shop/cart.py", ((1, 6),))]


def returned(tool: str, output: str, ok: bool = True) -> SimpleNamespace:
    return SimpleNamespace(type_name="ToolReturned", tool=tool, output=output, ok=ok)


def count(path: str, line: int) -> FileCount:
    return FileCount(path, 3, (("discount", 3),), line, "def apply_discount(total, code):")


def hyde_result(ranked: list[RankedFile] | None, candidates: list[FileCount]) -> SemanticResult:
    return SemanticResult("q", "hyde", ["discount", "code"], 1, len(candidates), candidates, ranked, chunks=len(candidates))


@pytest.mark.parametrize("ranking", ["hybrid", "dense", "lexical"])
def test_the_index_rankings_output_gives_the_named_files_with_their_line_ranges(ranking) -> None:
    output = format_index_hits(ranking, HITS)
    assert output.splitlines()[1] == "1. shop/shop/billing.py lines 6-10 (score 0.033)"
    assert relied_on([returned("semantic_file_search", output)], ANSWER) == EXPECTED


def test_hydes_ranked_output_gives_the_same_sources() -> None:
    ranked = [RankedFile(h.path, h.start_line, h.end_line, 0.8 - i / 10) for i, h in enumerate(HITS)]
    output = format_semantic(hyde_result(ranked, [count(h.path, 1) for h in HITS]))
    assert output.splitlines()[2] == "1. shop/shop/billing.py lines 6-10 (similarity 0.80)"
    assert relied_on([returned("semantic_file_search", output)], ANSWER) == EXPECTED


def test_hydes_few_candidates_give_the_line_each_shows() -> None:
    output = format_semantic(hyde_result(None, [count("shop/shop/billing.py", 6), count("shop/shop/cart.py", 4)]))
    assert output.splitlines()[2].startswith("1. shop/shop/billing.py (3 occurrences; line 6: ")
    sources = relied_on([returned("semantic_file_search", output)], ANSWER)
    assert sources == [Source("shop/shop/billing.py", ((6, 6),)), Source("shop/shop/cart.py", ((4, 4),))]


def test_the_fallbacks_output_gives_the_same_sources_whether_hyde_ran_or_not() -> None:
    hyde = hyde_result([], [])
    for found in (FallbackResult(HITS, None), FallbackResult(HITS, "dense and lexical disagree", hyde=hyde),
                  FallbackResult(HITS, "dense and lexical disagree", error="timeout")):
        output = format_fallback(found)
        assert relied_on([returned("semantic_file_search", output)], ANSWER) == EXPECTED, output


def test_an_index_note_a_failed_search_and_unnamed_files_add_nothing() -> None:
    note = "(The repository index was refreshed first: 3 of 3 files embedded, 3 chunks, in 2 s.)"
    output = format_index_hits("hybrid", HITS) + "\n" + note
    events = [
        returned("semantic_file_search", output),
        returned("semantic_file_search", format_index_hits("hybrid", [Hit("shop/shop/tax.py", 1, 9, "", "", 0.1)]), ok=False),
        returned("semantic_file_search", format_index_hits("hybrid", [])),
    ]
    assert relied_on(events, ANSWER) == EXPECTED
    assert relied_on(events, "Nothing named.") == []


def test_sources_from_a_read_and_a_search_merge_per_file() -> None:
    read = returned("read_code", "shop/shop/billing.py, lines 8-14 of 20:\n 8: x")
    search = returned("semantic_file_search", format_index_hits("hybrid", HITS))
    sources = relied_on([search, read], ANSWER)
    assert [s.line() for s in sources] == ["shop/shop/billing.py lines 6-14", "shop/shop/cart.py lines 1-6"]
