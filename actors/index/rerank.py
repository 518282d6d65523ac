"""Reranking the fused top files with the LLM (`rerank-llm`, issue 15): the model is shown the
question and each of the top `files` files as its path and the headers of its chunks (the
classes and functions they sit in, `class LoopContext > def revindex`), and answers with the
number of the file most likely to answer; that file goes first, the others keep their fused
order. One call per query. (A reply that is a list of numbers, best first, is applied as an
order; see `rerank_request` for why the request asks for one file.)

No cross-encoder installs here with its weights inside the package (flashrank, the small one
on PyPI, fetches its model from a hub at run time), so the local LLM does the reranking.

Everything here is pure: `candidates` builds what the model is shown from fused hits and the
collection's chunks, `rerank_request` the request, `parse_order` reads the reply and
`apply_order` puts it into the ranking; `rerank` is the three around one call given as a
function (`ToolContext.complete` in the evaluation, a scripted model in tests). A reply that names no candidate (garbage, an empty
list, numbers out of range) leaves the fused order as it was; a partial one puts the files it
names first, in its order, and the rest after them in their fused order. The call itself is
made by whoever holds the LLM (`ToolContext.complete`, recorded in its stream).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from actors.runtime.llm.types import LlmError, LlmRequest, LlmResult

RERANK_FILES = 5  # files the model reorders (the "top 5 files")
HEADER_CHARS = 400  # of headers shown per file
_LIST = re.compile(r"\[([\d\s,]*)\]")  # a bare list of numbers in a reply that is not JSON


@dataclass(frozen=True)
class Candidate:
    path: str
    headers: tuple[str, ...]  # distinct chunk headers: the file's best hits' first, then the rest in line order


def file_order(paths: Iterable[str]) -> list[str]:
    """Distinct paths in first-seen order (hits are chunks; a file can hold several)."""
    seen: set[str] = set()
    return [p for p in paths if not (p in seen or seen.add(p))]


def candidates(
    hit_keys: Sequence[tuple[str, int, int]],
    headers: Mapping[tuple[str, int, int], str],
    *,
    files: int = RERANK_FILES,
) -> list[Candidate]:
    """The top `files` files of a fused ranking of chunks `hit_keys` (path, start, end), each
    with its chunk headers: those of its hits first (best first), then every other header the
    collection holds for that file (`headers`: chunk key -> header), in line order."""
    top = file_order(k[0] for k in hit_keys)[:files]
    by_file: dict[str, list[str]] = {p: [] for p in top}
    for key in hit_keys:
        if key[0] in by_file:
            by_file[key[0]].append(headers.get(key, ""))
    for key in sorted(k for k in headers if k[0] in by_file):
        by_file[key[0]].append(headers[key])
    return [Candidate(p, tuple(file_order(h for h in by_file[p] if h))) for p in top]


def describe(candidate: Candidate, limit: int = HEADER_CHARS) -> str:
    """`path: header; header; ...`, the headers cut to `limit` characters."""
    text = "; ".join(candidate.headers) or "(no classes or functions)"
    if len(text) > limit:
        text = text[: limit - 3].rstrip("; ") + "..."
    return f"{candidate.path}: {text}"


def choice_schema(n: int) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {"file": {"type": "integer", "minimum": 1, "maximum": max(n, 1)}},
        "required": ["file"],
    }


def rerank_request(question: str, cands: Sequence[Candidate], model: str = "", limit: int = HEADER_CHARS) -> LlmRequest:
    """One request: the question and the numbered candidates; the reply is `{"file": N}`, the
    one most likely to answer (constrained by a schema where the server can). It asks for one
    file, not a full order: asked for `{"ranking": [...]}`, Qwen2.5-Coder-1.5B answered
    `[5, 4, 3, 2, 1]` — the example list reversed — to 5 of the first 6 questions of a
    held-out set, whatever the files were."""
    n = len(cands)
    system = (
        "You are given a question about a code repository and a numbered list of its source "
        "files, each shown as its path and the classes and functions in it. Choose the one file "
        "most likely to hold the code the question asks about. Reply with JSON only: "
        '{"file": <its number>}.'
    )
    listing = "\n".join(f"{i}. {describe(c, limit)}" for i, c in enumerate(cands, 1))
    return LlmRequest(
        model=model,
        messages=[
            {"role": "system", "content": system},
            {"role": "user", "content": f"Question: {question.strip()}\n\nFiles:\n{listing}"},
        ],
        params={"temperature": 0.0, "max_tokens": 16},
        response_schema=choice_schema(n),
    )


def parse_order(parsed: Mapping[str, Any] | None, content: str, paths: Sequence[str]) -> list[int]:
    """The candidates (0-based positions in `paths`) the reply names, in its order, each
    once: numbers 1..n, or paths, from `{"file": N}` (the request's form) or a list,
    `{"ranking": [...]}` (any list under any key will do),
    or, when the reply is not JSON, from the first bracketed list of numbers in its text.
    Empty when it names none."""
    items: list[Any] = []
    if isinstance(parsed, Mapping):
        if "file" in parsed and not isinstance(parsed["file"], list):
            items = [parsed["file"]]
        else:
            ranking = parsed.get("ranking")
            if not isinstance(ranking, list):
                ranking = next((v for v in parsed.values() if isinstance(v, list)), None)
            items = list(ranking or [])
    elif content and (found := _LIST.search(content)):
        items = re.findall(r"\d+", found.group(1))
    out: list[int] = []
    for item in items:
        i = _position(item, paths)
        if i is not None and i not in out:
            out.append(i)
    return out


def _position(item: Any, paths: Sequence[str]) -> int | None:
    if isinstance(item, bool):
        return None
    if isinstance(item, int) or (isinstance(item, str) and item.strip().isdigit()):
        n = int(item)
        return n - 1 if 1 <= n <= len(paths) else None
    if isinstance(item, str) and item.strip() in paths:
        return list(paths).index(item.strip())
    return None


def apply_order(ranked: Sequence[str], top: Sequence[str], order: Sequence[int]) -> list[str]:
    """The files `ranked` (fused order) with its `top` candidates reordered: those `order`
    names first, then the other candidates in fused order, then the rest of `ranked`. An
    empty `order` gives `ranked` unchanged."""
    files = file_order(ranked)
    if not order:
        return files
    head = [top[i] for i in order] + [p for i, p in enumerate(top) if i not in order]
    return head + [p for p in files if p not in head]


@dataclass(frozen=True)
class Reranked:
    paths: list[str]  # the files, best first
    order: list[int]  # the candidates the reply named (0-based), in its order; empty: fused order kept
    reply: LlmResult | None = None  # None: no call (fewer than two candidates) or the call failed
    error: str = ""  # why the call failed


def rerank(
    question: str,
    hit_keys: Sequence[tuple[str, int, int]],
    headers: Mapping[tuple[str, int, int], str],
    complete: Callable[[LlmRequest], LlmResult],
    *,
    files: int = RERANK_FILES,
    model: str = "",
) -> Reranked:
    """The files of the fused chunk ranking `hit_keys`, the top `files` reordered by one call
    of `complete`. With fewer than two candidates no call is made; a failed call (`LlmError`)
    or an unusable reply keeps the fused order."""
    ranked = file_order(k[0] for k in hit_keys)
    cands = candidates(hit_keys, headers, files=files)
    if len(cands) < 2:
        return Reranked(ranked, [])
    top = [c.path for c in cands]
    try:
        reply = complete(rerank_request(question, cands, model))
    except LlmError as e:
        return Reranked(ranked, [], None, str(e) or type(e).__name__)
    order = parse_order(reply.parsed, reply.content, top)
    return Reranked(apply_order(ranked, top, order), order, reply)
