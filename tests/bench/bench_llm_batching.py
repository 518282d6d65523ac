"""Concurrent calls on the embedded model: llama.cpp's native `llama-server` (parallel slots,
continuous batching, prefix cache) against today's bare `python -m llama_cpp.server`, on the
same GGUF and the same threads (issue 38; docs/decisions/0012-parallel-slots.md).

Per server, back to back in one session (one server up at a time, started and stopped here):

- single: one chat completion, a fresh ~1,000-token prompt, ~60 tokens generated, streamed:
  prompt tokens/s = prompt tokens / time to the first token; generation tokens/s = tokens
  after the first / time from the first token to the last.
- three vs one: three completions sent at once whose prompts share a ~1,000-token head and
  differ in a short tail (three synths in a simulation microcycle), against one of them
  alone: wall time of the three / wall time of the one. "cold": the head is new to the
  server; "warm": the head was sent once just before (untimed, max_tokens=1), as when the
  same context is asked about again.
- chorus: three vs one as above, through Chorus: the embedded server as Chorus starts it and
  each call through its gateway and provider (`--servers bare,chorus`: the same calls on the
  bare server and through Chorus, one after the other).
- checks: what `OpenAIProvider` sends (stream, stream_options.include_usage, response_format
  json_schema / json_object with a schema): is the answer valid JSON with the schema's keys,
  does the stream end with a usage chunk and [DONE]; does GET /v1/models answer while a
  completion runs.

The baseline is started here, not through Chorus's wrapper (`actors.runtime.llm.child`): a
bare server, as llama-cpp-python ships it. HTTP is the standard library's, so the client adds
nothing of its own. One run per cell; every figure printed with the 1-minute load average
taken just before it: a table of ratios, not precise figures, and no thresholds.

Only one llama.cpp server may run at a time on a small machine: this script waits (up to
--wait-s) while another is up, and never leaves its own running.

    .venv/bin/python tests/bench/bench_llm_batching.py [--llama-server PATH] [--gguf PATH]
        [--servers bare,native,chorus] [--rounds 1] [--slots 3] [--native-args "--cache-reuse 256"]

`--llama-server` (or CHORUS_LLAMA_SERVER) is a llama-server binary built from the
llama.cpp source the llama-cpp-python sdist carries (vendor/llama.cpp), with the same GGML
flags as scripts/setup.sh; see the decision record for the build line.
"""

from __future__ import annotations

import argparse
import atexit
import http.client
import json
import os
import shlex
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
HOST = "127.0.0.1"
ALIAS = "bench-model"
CTX = 8192
MAX_TOKENS = 60
# a ~1,000-token head: numbered log lines the answers quote (so they run to max_tokens)
LOG = "\n".join(
    f"Line {i}: at {8 + i // 6:02d}:{(i * 7) % 60:02d} the keeper climbed the stairs, trimmed the wick and logged the weather."
    for i in range(1, 36)
)
SYNTHS = ("the historian", "the engineer", "the sailor")
SCHEMA = {
    "type": "object",
    # bounded, so that a small model that rambles inside a string still closes the object
    "properties": {
        "answer": {"type": "string", "maxLength": 80},
        "lines": {"type": "array", "items": {"type": "integer"}, "maxItems": 5},
    },
    "required": ["answer", "lines"],
    "additionalProperties": False,
}

_SERVERS: list[subprocess.Popen[bytes]] = []


# -- servers ----------------------------------------------------------------------------------


def free_port() -> int:
    with socket.socket() as s:
        s.bind((HOST, 0))
        return s.getsockname()[1]


def other_llama_servers() -> list[str]:
    """Command lines of llama.cpp servers running on this machine that are not ours."""
    ours = {p.pid for p in _SERVERS}
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) in ours or int(entry.name) == os.getpid():
            continue
        try:
            cmd = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if ("llama_cpp.server" in cmd or "llama-server" in cmd) and "bench_llm_batching" not in cmd:
            found.append(f"{entry.name}: {cmd.strip()[:160]}")
    return found


def wait_alone(wait_s: float) -> None:
    deadline = time.monotonic() + wait_s
    while True:
        others = other_llama_servers()
        if not others:
            return
        if time.monotonic() > deadline:
            raise SystemExit("another llama.cpp server is running (stop it: `chorus model stop`):\n" + "\n".join(others))
        print(f"# waiting: another llama.cpp server is running ({others[0]})", file=sys.stderr, flush=True)
        time.sleep(10)


def stop_server(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        try:
            os.killpg(proc.pid, signal.SIGTERM)
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=5)
        except ProcessLookupError:
            pass
    if proc in _SERVERS:
        _SERVERS.remove(proc)


def _stop_all(*_: Any) -> None:
    for proc in list(_SERVERS):
        stop_server(proc)
    if _:
        sys.exit(143)


def start_server(cmd: list[str], port: int, log: Path, timeout_s: float = 300.0) -> subprocess.Popen[bytes]:
    with open(log, "ab") as out:
        out.write(f"\n=== {' '.join(cmd)}\n".encode())
        out.flush()
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True)
    _SERVERS.append(proc)
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise SystemExit(f"server exited with {proc.returncode}; see {log}:\n" + log.read_text()[-2000:])
        if models(port, 1.0) is not None:
            return proc
        time.sleep(0.5)
    stop_server(proc)
    raise SystemExit(f"server not up after {timeout_s:.0f}s; see {log}")


def bare_command(gguf: Path, port: int, threads: int, threads_batch: int, interrupt: bool) -> list[str]:
    return [sys.executable, "-m", "llama_cpp.server", "--model", str(gguf), "--model_alias", ALIAS,
            "--host", HOST, "--port", str(port), "--n_ctx", str(CTX),
            "--n_threads", str(threads), "--n_threads_batch", str(threads_batch),
            # its default (True) ends a stream with [DONE] as soon as another request waits:
            # the calls sent at once would come back cut short instead of served in turn
            "--interrupt_requests", str(interrupt).lower()]  # fmt: skip


def native_command(binary: Path, gguf: Path, port: int, threads: int, threads_batch: int, slots: int, extra: list[str]) -> list[str]:
    # one KV pool of CTX tokens shared by the slots (as much memory as today's server), each
    # slot able to use all of it
    return [str(binary), "-m", str(gguf), "--alias", ALIAS, "--host", HOST, "--port", str(port),
            "-c", str(CTX), "-t", str(threads), "-tb", str(threads_batch),
            "-np", str(slots), "--cont-batching", "--kv-unified", "--no-webui", *extra]  # fmt: skip


# -- HTTP -------------------------------------------------------------------------------------


def models(port: int, timeout: float = 2.0) -> list[str] | None:
    try:
        conn = http.client.HTTPConnection(HOST, port, timeout=timeout)
        conn.request("GET", "/v1/models")
        r = conn.getresponse()
        body = json.loads(r.read() or b"{}")
        conn.close()
        if r.status != 200 or not isinstance(body.get("data"), list):
            return None
        return [str(m.get("id")) for m in body["data"]]
    except (OSError, ValueError):
        return None


def chat(port: int, messages: list[dict[str, str]], max_tokens: int, stream: bool = True, **extra: Any) -> dict[str, Any]:
    """One chat completion; with stream, times of the first and last text chunks."""
    body: dict[str, Any] = {"model": ALIAS, "messages": messages, "max_tokens": max_tokens,
                            "temperature": 0.0, "seed": 7, "stream": stream, **extra}  # fmt: skip
    if stream:
        body["stream_options"] = {"include_usage": True}
    conn = http.client.HTTPConnection(HOST, port, timeout=900)
    sent = time.monotonic()
    conn.request("POST", "/v1/chat/completions", json.dumps(body), {"Content-Type": "application/json"})
    r = conn.getresponse()
    out: dict[str, Any] = {"status": r.status, "sent": sent, "first": None, "last": None, "chunks": 0,
                           "text": "", "usage": None, "done": False, "timings": None}  # fmt: skip
    if r.status != 200:
        out["error"] = r.read().decode(errors="replace")[:300]
        out["end"] = time.monotonic()
        conn.close()
        return out
    if not stream:
        data = json.loads(r.read())
        out["end"] = time.monotonic()
        out["text"] = data["choices"][0]["message"].get("content") or ""
        out["usage"], out["timings"] = data.get("usage"), data.get("timings")
        conn.close()
        return out
    parts = []
    for raw in r:
        line = raw.decode(errors="replace").strip()
        if not line.startswith("data:"):
            continue
        payload = line[5:].strip()
        if payload == "[DONE]":
            out["done"] = True
            break
        chunk = json.loads(payload)
        if chunk.get("usage"):
            out["usage"] = chunk["usage"]
        if chunk.get("timings"):
            out["timings"] = chunk["timings"]
        for choice in chunk.get("choices") or []:
            text = (choice.get("delta") or {}).get("content")
            if text:
                now = time.monotonic()
                out["first"] = out["first"] or now
                out["last"] = now
                out["chunks"] += 1
                parts.append(text)
    out["end"] = time.monotonic()
    out["text"] = "".join(parts)
    conn.close()
    return out


def prompt(head: str, tail: str) -> list[dict[str, str]]:
    return [
        {"role": "system", "content": f"Session {head}. You are one voice in a panel reading the keeper's log below.\n\n{LOG}"},
        {"role": "user", "content": tail},
    ]


def tail(i: int) -> str:
    first = 3 + 11 * i
    return f"Speaking as {SYNTHS[i % 3]}, copy lines {first} to {first + 9} of the log exactly, one per line."


def load() -> float:
    return round(os.getloadavg()[0], 2)


# -- measurements -----------------------------------------------------------------------------


def single(port: int) -> dict[str, Any]:
    messages = prompt(uuid.uuid4().hex, tail(0))
    before = load()
    r = chat(port, messages, MAX_TOKENS)
    prompt_tokens = (r["usage"] or {}).get("prompt_tokens")
    if not prompt_tokens:  # llama_cpp.server sends no usage in a stream: ask again (cached)
        prompt_tokens = (chat(port, messages, 1, stream=False)["usage"] or {}).get("prompt_tokens", 0)
    ttft = r["first"] - r["sent"]
    gen_s = r["last"] - r["first"]
    return {"load": before, "prompt_tokens": prompt_tokens, "gen_tokens": r["chunks"],
            "prompt_tok_s": round(prompt_tokens / ttft, 1), "gen_tok_s": round((r["chunks"] - 1) / gen_s, 2) if gen_s > 0 else None,
            "wall_s": round(r["end"] - r["sent"], 2), "server_timings": r["timings"]}  # fmt: skip


def concurrent(port: int, n: int, warm: bool, send: Any = None) -> dict[str, Any]:
    """Wall time of one call alone, then of n at once (fresh heads each; warm: head sent just
    before). `send(messages, max_tokens)`: how a call is made (default: this script's own HTTP)."""
    send = send or (lambda messages, max_tokens: chat(port, messages, max_tokens))

    def batch(k: int) -> tuple[float, list[dict[str, Any]]]:
        head = uuid.uuid4().hex
        if warm:
            send(prompt(head, "Say ready."), 1)
        results: list[dict[str, Any]] = [{} for _ in range(k)]

        def one(i: int) -> None:
            results[i] = send(prompt(head, tail(i)), MAX_TOKENS)

        threads = [threading.Thread(target=one, args=(i,)) for i in range(k)]
        started = time.monotonic()
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        return time.monotonic() - started, results

    load_one = load()
    one_s, _ = batch(1)
    load_n = load()
    n_s, results = batch(n)
    ends = sorted(round(r["end"] - min(x["sent"] for x in results), 1) for r in results)
    evaluated = [(r["timings"] or {}).get("prompt_n") for r in results]
    return {"warm": warm, "load": f"{load_one}/{load_n}", "one_s": round(one_s, 2), "n_s": round(n_s, 2),
            "ratio": round(n_s / one_s, 2), "ends_s": ends, "tokens": [r["chunks"] for r in results],
            "prompt_evaluated": evaluated}  # fmt: skip


def checks(port: int) -> dict[str, Any]:
    """What Chorus's OpenAIProvider sends: json_schema and json_object under a stream with usage."""
    out: dict[str, Any] = {}
    ask = [{"role": "user", "content": "Which lines of a lighthouse log would say the weather? Answer as JSON."}]
    for mode, fmt in (
        ("json_schema", {"type": "json_schema", "json_schema": {"name": "step", "schema": SCHEMA}}),
        ("json_object", {"type": "json_object", "schema": SCHEMA}),
    ):
        r = chat(port, ask, 300, response_format=fmt)
        try:
            parsed = json.loads(r["text"])
            valid = isinstance(parsed, dict) and set(parsed) == {"answer", "lines"}
        except ValueError:
            valid = False
        usage = r["usage"] or {}
        out[mode] = {"status": r["status"], "valid_json": valid, "done": r["done"],
                     "usage": bool(usage.get("prompt_tokens")) and bool(usage.get("completion_tokens")),
                     "completion_tokens": usage.get("completion_tokens", r["chunks"]), "text": r["text"][:120],
                     "error": (r.get("error") or "")[:160] or None}  # fmt: skip
    # GET /v1/models while a completion runs
    busy = threading.Thread(target=chat, args=(port, prompt(uuid.uuid4().hex, tail(1)), MAX_TOKENS))
    busy.start()
    time.sleep(1.0)
    started = time.monotonic()
    ids = models(port, timeout=5.0)
    out["models_while_busy"] = {"ids": ids, "s": round(time.monotonic() - started, 2)}
    busy.join()
    out["provider"] = provider_check(port)
    return out


def provider_check(port: int) -> Any:
    """The product's client (`OpenAIProvider`, streamed, structured="auto") on this server."""
    try:
        sys.path.insert(0, str(ROOT))
        from actors.runtime.llm.providers import OpenAIProvider
        from actors.runtime.llm.types import LlmRequest
    except Exception as e:  # noqa: BLE001 - outside the venv
        return f"skipped ({type(e).__name__})"
    provider = OpenAIProvider(base_url=f"http://{HOST}:{port}/v1", model=ALIAS, timeout_s=300, max_retries=0)
    try:
        r = provider.complete(LlmRequest(model=ALIAS, messages=[{"role": "user", "content": "Name one lighthouse. JSON."}],
                                         params={"temperature": 0.0, "max_tokens": 300}, response_schema=SCHEMA))  # fmt: skip
    except Exception as e:  # noqa: BLE001 - reported, not raised
        return f"failed: {e}"
    return {"mode": provider.mode, "parsed": r.parsed is not None, "prompt_tokens": r.prompt_tokens,
            "completion_tokens": r.completion_tokens}  # fmt: skip


# -- main -------------------------------------------------------------------------------------


def find_gguf(arg: str | None) -> Path:
    if arg:
        return Path(arg)
    if os.environ.get("CHORUS_GGUF"):
        return Path(os.environ["CHORUS_GGUF"])
    sys.path.insert(0, str(ROOT))
    from actors.runtime.llm.local_model import ensure_model
    from actors.runtime.settings import Settings

    with tempfile.TemporaryDirectory() as tmp:
        return ensure_model(Settings.from_env(data_dir=Path(tmp), store_url=f"sqlite:///{tmp}/c.db"))


def chorus_session(args: argparse.Namespace) -> dict[str, Any]:
    """Three calls at once against one alone through Chorus: the embedded server as Chorus
    runs it (the machine's shared one, `Client.ensure_llm`), each call through the gateway and
    `OpenAIProvider` that agents and synths use (streamed, retried, recorded as events)."""
    sys.path.insert(0, str(ROOT))
    from actors.runtime.client import Client
    from actors.runtime.llm.gateway import LlmGateway
    from actors.runtime.llm.providers import provider_from_settings
    from actors.runtime.llm.types import LlmRequest
    from actors.runtime.settings import Settings

    wait_alone(args.wait_s)
    with tempfile.TemporaryDirectory() as tmp:
        client = Client(settings=Settings.from_env(store_url=f"sqlite:///{tmp}/c.db"))
        started = time.monotonic()
        settings = client.ensure_llm()
        up_s = round(time.monotonic() - started, 1)
        gateway = LlmGateway(provider_from_settings(settings))
        calls = iter(range(10**6))

        def send(messages: list[dict[str, str]], max_tokens: int) -> dict[str, Any]:
            request = LlmRequest(model=settings.llm_model, messages=messages, params={"temperature": 0.0, "max_tokens": max_tokens})
            sent = time.monotonic()
            outcome = gateway.call(request, next(calls))
            done = outcome.events[-1]
            return {"sent": sent, "end": time.monotonic(), "chunks": getattr(done, "completion_tokens", 0),
                    "timings": {"prompt_n": getattr(done, "prompt_tokens", None)}}  # fmt: skip

        try:
            send([{"role": "user", "content": "Say hi."}], 4)  # first call: weights paged in
            row: dict[str, Any] = {"server": "chorus", "up_s": up_s, "threads": "as Chorus sets them"}
            for name, warm in (("cold", False), ("warm", True)):
                row[name] = concurrent(0, args.slots, warm=warm, send=send)
                print(json.dumps({"server": "chorus", name: row[name]}), flush=True)
            return row
        finally:
            client.close()
            subprocess.run([str(ROOT / ".venv/bin/chorus"), "model", "stop"], check=False, capture_output=True)


def session(kind: str, args: argparse.Namespace, gguf: Path, log: Path) -> dict[str, Any]:
    if kind == "chorus":
        return chorus_session(args)
    wait_alone(args.wait_s)
    port = free_port()
    cores = os.cpu_count() or 2
    threads, threads_batch = max(1, cores // 2), cores  # docs/decisions/0011-llm-threads.md
    if kind == "bare":
        cmd = bare_command(gguf, port, threads, threads_batch, args.bare_interrupt)
    else:
        cmd = native_command(Path(args.llama_server), gguf, port, threads, threads_batch, args.slots, shlex.split(args.native_args))
    started = time.monotonic()
    proc = start_server(cmd, port, log)
    up_s = round(time.monotonic() - started, 1)
    try:
        chat(port, [{"role": "user", "content": "Say hi."}], 4)  # first call: weights paged in
        row: dict[str, Any] = {"server": kind, "up_s": up_s, "threads": f"{threads}/{threads_batch}"}
        row["single"] = single(port)
        print(json.dumps({"server": kind, "single": row["single"]}), flush=True)
        row["cold"] = concurrent(port, args.slots, warm=False)
        print(json.dumps({"server": kind, "cold": row["cold"]}), flush=True)
        row["warm"] = concurrent(port, args.slots, warm=True)
        print(json.dumps({"server": kind, "warm": row["warm"]}), flush=True)
        if not args.no_checks:
            row["checks"] = checks(port)
            print(json.dumps({"server": kind, "checks": row["checks"]}), flush=True)
        return row
    finally:
        stop_server(proc)


def table(rows: list[dict[str, Any]], slots: int) -> str:
    out = [
        f"| server | load (1 min) | prompt tok/s | gen tok/s | {slots} at once / 1 alone, cold head | {slots} / 1, warm head "
        "| tokens out, cold / warm | prompt tokens computed, cold / warm |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        s = r.get("single") or {"load": "-", "prompt_tok_s": "-", "gen_tok_s": "-"}
        c, w = r["cold"], r["warm"]
        out.append(f"| {r['server']} | {s['load']} / {c['load']} / {w['load']} | {s['prompt_tok_s']} | {s['gen_tok_s']} "
                   f"| {c['ratio']} ({c['n_s']} / {c['one_s']} s) | {w['ratio']} ({w['n_s']} / {w['one_s']} s) "
                   f"| {c['tokens']} / {w['tokens']} | {c['prompt_evaluated']} / {w['prompt_evaluated']} |")  # fmt: skip
    bare = [r for r in rows if r["server"] == "bare"]
    native = [r for r in rows if r["server"] == "native"]
    chorus = [r for r in rows if r["server"] == "chorus"]
    if bare and chorus:
        out.append("")
        out.append(f"through Chorus / bare, {slots} at once: cold {chorus[0]['cold']['n_s'] / bare[0]['cold']['n_s']:.2f}x "
                   f"the bare wall time, warm {chorus[0]['warm']['n_s'] / bare[0]['warm']['n_s']:.2f}x")  # fmt: skip
    if bare and native:
        b, n = bare[0]["single"], native[0]["single"]
        out.append("")
        out.append(f"native / bare, single call: prompt {n['prompt_tok_s'] / b['prompt_tok_s']:.2f}x, "
                   f"generation {n['gen_tok_s'] / b['gen_tok_s']:.2f}x; "
                   f"{slots} at once, cold: {native[0]['cold']['n_s'] / bare[0]['cold']['n_s']:.2f}x the bare wall time, "
                   f"warm: {native[0]['warm']['n_s'] / bare[0]['warm']['n_s']:.2f}x")  # fmt: skip
    for r in rows:
        if "checks" in r:
            out.append(f"{r['server']} checks: {json.dumps(r['checks'])}")
    return "\n".join(out)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--llama-server", default=os.environ.get("CHORUS_LLAMA_SERVER", "/tmp/llama-native/build/bin/llama-server"))
    ap.add_argument("--gguf", default=None, help="default: the embedded model (CHORUS_GGUF, or assembled as Chorus does)")
    ap.add_argument("--servers", default="bare,native", help="bare, native, chorus (the embedded server through Chorus's gateway)")
    ap.add_argument("--rounds", type=int, default=1, help="sessions of each server, taken turn about")
    ap.add_argument("--slots", type=int, default=3, help="the native server's slots, and the calls sent at once")
    ap.add_argument("--native-args", default="--cache-reuse 256", help="more flags for llama-server")
    ap.add_argument("--bare-interrupt", action="store_true", help="the bare server as shipped: a new request cuts the stream in progress short")
    ap.add_argument("--no-checks", action="store_true")
    ap.add_argument("--wait-s", type=float, default=900.0, help="how long to wait for another llama.cpp server to go")
    args = ap.parse_args()
    atexit.register(_stop_all)
    signal.signal(signal.SIGTERM, _stop_all)
    gguf = find_gguf(args.gguf)
    kinds = [k for k in args.servers.split(",") if k]
    if not set(kinds) <= {"bare", "native", "chorus"}:
        raise SystemExit(f"--servers: bare, native or chorus, not {args.servers}")
    if "native" in kinds and not Path(args.llama_server).is_file():
        raise SystemExit(f"no llama-server at {args.llama_server} (--llama-server, CHORUS_LLAMA_SERVER)")
    print(f"# {gguf.name}, {os.cpu_count()} cores, servers {kinds} x {args.rounds}", flush=True)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        log = Path(tmp) / "servers.log"
        try:
            for _ in range(args.rounds):
                for kind in kinds:
                    rows.append(session(kind, args, gguf, log))
        except BaseException:
            print(f"# server log tail:\n{log.read_text()[-1500:] if log.exists() else ''}", file=sys.stderr)
            raise
    print(table(rows, args.slots))


if __name__ == "__main__":
    main()
