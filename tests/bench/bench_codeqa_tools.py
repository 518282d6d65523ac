"""Seed 003's per-tool latency table ("Performance Characteristics"), measured here.

Each of the five code-question tools is timed in-process (the tool's own work, as the seed
times it; a call through Ray adds about 1 ms) over a repositories folder holding a copy of
the installed eventsourcing package (site-packages/eventsourcing: ~30 files, ~12k lines of
Python). `semantic_file_search` is measured with seed 003's HyDE ranking (`ranking="hyde"`;
the default, hybrid, is timed by bench_codeqa_first_search), two ways:

- scripted model: the HyDE answer and keywords come from a script (no LLM time), so the row
  is the pipeline's own cost: keyword candidates, 500-token chunks (MiniLM's tokenizer),
  MiniLM embeddings of the HyDE answer and every chunk, cosine ranking. "cold" embeds every
  chunk; "warm" is the same tool asked again (chunk vectors kept for the tool's life);
- local model (`--llm URL`, or `--local-model` to start the embedded llama.cpp server):
  the whole pipeline with Qwen2.5-Coder-1.5B writing the HyDE answer and the keywords.

    .venv/bin/python -m tests.bench.bench_codeqa_tools [--rounds N] [--llm URL | --local-model]

Prints a markdown table: median, mean and range of each tool's wall time.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from actors.codeqa.config import SEMANTIC_SEARCH_CONFIG  # noqa: E402
from actors.codeqa.hyde import fallback_keywords  # noqa: E402
from actors.codeqa.tools import (  # noqa: E402
    GetRepoDocumentation,
    ListAvailableRepositories,
    ReadCode,
    SearchKeyword,
    SemanticFileSearch,
)
from actors.runtime.llm.types import LlmRequest  # noqa: E402
from actors.runtime.tool_context import ToolContext  # noqa: E402

SEED = {  # seed 003's "Avg Time" column (GPT-4o and Ada-2 on Azure)
    "list_available_repositories": "<0.01s",
    "get_repo_documentation": "0.05s",
    "search_keyword": "0.30s",
    "semantic_file_search": "8-12s",
    "read_code": "0.05s",
}
QUESTIONS = [
    "Which module encrypts stored events with AES?",
    "How does the SQLite recorder open its database and set WAL mode?",
    "How does an application take a snapshot of an aggregate?",
]
KEYWORDS = ["snapshot", "recorder", "notify", "cipher", "aggregate"]
READS = [
    {"path": "eventsourcing/application.py"},  # the whole file: truncated at 200 lines
    {"path": "eventsourcing/sqlite.py", "start_line": 100, "end_line": 180},
]


def corpus() -> Path:
    import eventsourcing

    source = Path(eventsourcing.__file__).parent
    repos = Path(tempfile.mkdtemp(prefix="chorus-codeqa-bench-")) / "repos"
    shutil.copytree(source, repos / "eventsourcing", ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    return repos


def timed(fn: Callable[[], object], rounds: int) -> list[float]:
    out = []
    for _ in range(rounds):
        started = time.perf_counter()
        fn()
        out.append(time.perf_counter() - started)
    return out


def scripted(request: LlmRequest) -> str:
    """HyDE: the question itself; keywords: the question's own words (deterministic)."""
    question = next(m["content"] for m in request.messages if m["role"] == "user")
    question = question.removeprefix("Question: ").split("\n\nCode:")[0]
    if request.response_schema:
        return json.dumps({"keywords": fallback_keywords(question, SEMANTIC_SEARCH_CONFIG)})
    return question


def row(name: str, times: list[float], note: str = "") -> str:
    med, mean = statistics.median(times), statistics.fmean(times)
    fmt = (lambda s: f"{s * 1000:.2f} ms") if max(times) < 1 else (lambda s: f"{s:.1f} s")
    print(f"  measured {name}{note}: median {fmt(med)}", file=sys.stderr, flush=True)
    return (
        f"| `{name}`{note} | {SEED.get(name, '')} | {fmt(med)} | {fmt(mean)} | "
        f"{fmt(min(times))}–{fmt(max(times))} | {len(times)} |"
    )


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=20, help="calls per fast tool and argument")
    ap.add_argument("--llm", help="an OpenAI-compatible endpoint for the local-model row")
    ap.add_argument("--local-model", action="store_true", help="start the embedded llama.cpp server for that row")
    ap.add_argument("--llm-questions", type=int, default=3)
    args = ap.parse_args()

    from actors.runtime.embeddings import MiniLMEmbedder
    from actors.testing.model import ScriptedProvider

    repos = corpus()
    root = str(repos)
    load_before = os.getloadavg()[0]
    rows = []

    lister = ListAvailableRepositories(root=root)
    rows.append(row("list_available_repositories", timed(lister.execute, args.rounds * 5)))
    doc = GetRepoDocumentation(root=root)
    rows.append(row("get_repo_documentation", timed(lambda: doc.execute(repo="eventsourcing"), args.rounds * 2)))
    search = SearchKeyword(root=root)
    times = [t for k in KEYWORDS for t in timed(lambda k=k: search.execute(keyword=k), args.rounds)]
    rows.append(row("search_keyword", times))
    reader = ReadCode(root=root)
    times = [t for r in READS for t in timed(lambda r=r: reader.execute(**r), args.rounds)]
    rows.append(row("read_code", times))

    embedder = MiniLMEmbedder()
    embedder.embed(["load the model before timing"])
    cold, warm = [], []
    for question in QUESTIONS:
        context = ToolContext.local(ScriptedProvider(scripted), embedder, tool="semantic_file_search")
        tool = SemanticFileSearch(root=root, context=context, ranking="hyde")
        cold += timed(lambda q=question: tool.execute(query=q), 1)
        warm += timed(lambda q=question: tool.execute(query=q), 2)
    rows.append(row("semantic_file_search", cold, " (scripted model, cold)"))
    rows.append(row("semantic_file_search", warm, " (scripted model, warm)"))

    llm_note = ""
    if args.llm or args.local_model:
        from actors.runtime.llm.providers import OpenAIProvider
        from actors.runtime.settings import Settings

        server = None
        url = args.llm
        if url is None:
            from actors.runtime.llm.local_server import LocalLlamaServer

            server = LocalLlamaServer(Settings.from_env())
            server.start()
            url = server.base_url
        provider = OpenAIProvider(url, Settings.from_env().llm_model, structured="json_object", timeout_s=3600)
        total, llm = [], []
        for question in QUESTIONS[: args.llm_questions]:
            context = ToolContext.local(provider, embedder, tool="semantic_file_search")
            tool = SemanticFileSearch(root=root, context=context, ranking="hyde")
            total += timed(lambda q=question: tool.execute(query=q), 1)
            done = [e for e in context.store.read_stream(context.stream_id) if e.type_name == "LlmCompleted"]
            llm.append(sum(e.latency_s for e in done))
            replies = " | ".join(e.content[:120].replace("\n", " ") for e in done[1:])
            print(f"  {question!r}: {total[-1]:.1f}s, of which {len(done)} LLM calls {llm[-1]:.1f}s", file=sys.stderr)
            print(f"    keyword replies: {replies}", file=sys.stderr)
        rows.append(row("semantic_file_search", total, " (local model)"))
        llm_note = f"; local-model rows: LLM time {statistics.fmean(llm):.1f}s of {statistics.fmean(total):.1f}s on average"
        if server is not None:
            server.stop()

    from importlib.metadata import version

    print(
        f"Machine: nproc {os.cpu_count()}, {platform.machine()}, Python {platform.python_version()}, "
        f"eventsourcing {version('eventsourcing')}; load average {load_before:.1f} at start, "
        f"{os.getloadavg()[0]:.1f} at end{llm_note}.\n"
    )
    print("| tool | seed 003 (GPT-4o, Ada-2) | median here | mean | range | calls |")
    print("|---|---|---|---|---|---|")
    print("\n".join(rows))
    shutil.rmtree(repos.parent, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
