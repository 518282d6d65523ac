"""Tokens/s of the embedded model through Chorus against a bare llama_cpp.server, with 0, 1
and 2 CPU-bound neighbours (`python -c "while True: pass"`), for each thread count.

- bare:   `python -m llama_cpp.server` on a free port, the openai client, not streamed;
- chorus: `LocalLlamaServer` (the shared server under its wrapper: requests counted, usage
  added to streams) and `OpenAIProvider` (streamed, inactivity timeout): what a run uses.

Per cell: a warm-up call (puts the generation prompt in llama.cpp's prefix cache), then a
call of that prompt, its time nearly all generation: generation tokens/s = completion tokens
/ wall time; and a call with a fresh long prompt and max_tokens=1: prompt tokens/s. One run
each: a table of ratios, not a precise figure. One llama.cpp server at a time; do not run it
while another is up (`pgrep -af llama_cpp`).

    .venv/bin/python tests/bench/bench_llm_threads.py [--threads 2,1] [--bare-threads 2] [--neighbours 0,1,2]
"""

from __future__ import annotations

import argparse
import json
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from actors.runtime.llm.local_model import ensure_model  # noqa: E402
from actors.runtime.llm.local_server import LocalLlamaServer, answers, stop_detached  # noqa: E402
from actors.runtime.llm.providers import OpenAIProvider  # noqa: E402
from actors.runtime.llm.types import LlmRequest  # noqa: E402
from actors.runtime.settings import Settings  # noqa: E402

GENERATE = [
    {"role": "system", "content": "You are a concise assistant."},
    {"role": "user", "content": "Write a numbered list of 30 short facts about lighthouses, one per line."},
]
PARAMS = {"temperature": 0.0, "max_tokens": 48, "seed": 7}
LONG = " ".join(f"Line {i}: the keeper climbs the stairs, trims the wick and logs the weather." for i in range(28))


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def fresh_prompt() -> list[dict[str, str]]:
    """A long prompt no cache holds (a new first line each time)."""
    return [{"role": "user", "content": f"{uuid.uuid4()}\n{LONG}\nSummarise in one word."}]


def wait_up(port: int, timeout_s: float = 300.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not answers(port, timeout=1.0):
        if time.monotonic() > deadline:
            raise SystemExit(f"no server on port {port} after {timeout_s:.0f}s")
        time.sleep(0.5)


def bare_call(port: int, model: str, messages: list[dict[str, str]], params: dict[str, Any]) -> tuple[int, int, float]:
    import openai

    client = openai.OpenAI(base_url=f"http://127.0.0.1:{port}/v1", api_key="x", timeout=900, max_retries=0)
    started = time.monotonic()
    r = client.chat.completions.create(model=model, messages=messages, **params)  # type: ignore[arg-type]
    return r.usage.prompt_tokens, r.usage.completion_tokens, time.monotonic() - started


def chorus_call(provider: OpenAIProvider, model: str, messages: list[dict[str, str]], params: dict[str, Any]) -> tuple[int, int, float]:
    started = time.monotonic()
    r = provider.complete(LlmRequest(model=model, messages=messages, params=params))
    return r.prompt_tokens, r.completion_tokens, time.monotonic() - started


def neighbours(n: int) -> list[subprocess.Popen[bytes]]:
    return [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(n)]


def measure(call: Any, kind: str, threads: int, levels: list[int]) -> list[dict[str, Any]]:
    rows = []
    for n in levels:
        busy = neighbours(n)
        try:
            time.sleep(1.0)  # let the neighbours take their cores
            call(GENERATE, {**PARAMS, "max_tokens": 1})  # warm: the prompt into the prefix cache
            _, gen_tokens, gen_s = call(GENERATE, PARAMS)
            prompt_tokens, _, prompt_s = call(fresh_prompt(), {"temperature": 0.0, "max_tokens": 1})
        finally:
            for p in busy:
                p.kill()
                p.wait()
        row = {"path": kind, "n_threads": threads, "neighbours": n,
               "gen_tokens": gen_tokens, "gen_tok_s": round(gen_tokens / gen_s, 2),
               "prompt_tokens": prompt_tokens, "prompt_tok_s": round(prompt_tokens / prompt_s, 1)}  # fmt: skip
        print(json.dumps(row), flush=True)
        rows.append(row)
    return rows


def run_bare(model_path: Path, alias: str, threads: int, levels: list[int], log: Path, batch: int = 0) -> list[dict[str, Any]]:
    port = free_port()
    cmd = [sys.executable, "-m", "llama_cpp.server", "--model", str(model_path), "--model_alias", alias,
           "--host", "127.0.0.1", "--port", str(port), "--n_ctx", "8192", "--n_threads", str(threads),
           "--n_threads_batch", str(batch or threads), "--interrupt_requests", "false"]  # fmt: skip
    with open(log, "ab") as out:
        server = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT)
    try:
        wait_up(port)
        return measure(lambda m, p: bare_call(port, alias, m, p), "bare", threads, levels)
    finally:
        server.terminate()
        server.wait(timeout=30)


def run_chorus(settings: Settings, threads: int, levels: list[int]) -> list[dict[str, Any]]:
    settings = settings.model_copy(update={"llm_port": free_port(), "llm_threads": threads})
    server = LocalLlamaServer(settings).start()
    try:
        provider = OpenAIProvider(base_url=server.base_url, model=settings.llm_model, timeout_s=300, structured="json_object")
        return measure(lambda m, p: chorus_call(provider, settings.llm_model, m, p), "chorus", threads, levels)
    finally:
        stop_detached(settings)


def table(rows: list[dict[str, Any]]) -> str:
    out = ["| path | n_threads | neighbours | generation tok/s | prompt tok/s |", "|---|---|---|---|---|"]
    for r in rows:
        out.append(f"| {r['path']} | {r['n_threads']} | {r['neighbours']} | {r['gen_tok_s']} | {r['prompt_tok_s']} |")
    return "\n".join(out)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--threads", default="2,1", help="thread counts through Chorus")
    ap.add_argument("--bare-threads", default="2", help="thread counts of the bare server")
    ap.add_argument("--neighbours", default="0,1,2")
    ap.add_argument("--bare-batch", type=int, default=0, help="the bare server's prompt threads (default: its --bare-threads)")
    args = ap.parse_args()
    levels = [int(x) for x in args.neighbours.split(",")]
    with tempfile.TemporaryDirectory() as tmp:
        settings = Settings.from_env(data_dir=Path(tmp), store_url=f"sqlite:///{tmp}/c.db", llm_idle_s=600)
        model_path = ensure_model(settings)
        rows: list[dict[str, Any]] = []
        for t in [int(x) for x in args.bare_threads.split(",") if x]:
            rows += run_bare(model_path, settings.llm_model, t, levels, Path(tmp) / "bare.log", args.bare_batch)
        for t in [int(x) for x in args.threads.split(",") if x]:
            rows += run_chorus(settings, t, levels)
    print(table(rows))


if __name__ == "__main__":
    main()
