"""Run a Python command line that dies with the process that started it, or when idle.

    python -m actors.runtime.llm.child PARENT_PID [--idle-s N] -m llama_cpp.server --model ...
    python -m actors.runtime.llm.child PARENT_PID [--idle-s N] -c "code"

A daemon thread checks every second that PARENT_PID is still this process's parent; when it
is not (the parent exited, was killed, or crashed), this process sends itself SIGTERM, so a
`chorus` killed with SIGKILL does not leave the embedded LLM server holding its port and
3 GB of memory. PARENT_PID 0 watches nothing (the shared server, or `chorus model serve`).
Watching the parent from inside the child, rather than with PR_SET_PDEATHSIG, keeps the
server alive when the thread that started it ends while its process goes on.

With `--idle-s N` (N > 0) the server ends itself once N seconds have passed with no HTTP
request in flight (`actors.runtime.llm.idle`): that is how the one server every `chorus`
process on the machine shares goes away when nobody uses it. llama.cpp's app is wrapped to
count its requests; a `-c` server counts its own on `idle.CLOCK` (the tests' stand-ins).
"""

from __future__ import annotations

import os
import runpy
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from actors.runtime.llm import idle

POLL_S = 1.0
GRACE_S = 10.0
USAGE = "usage: python -m actors.runtime.llm.child PARENT_PID [--idle-s N] (-m MODULE | -c CODE) [ARGS...]"


def _parent_gone(parent: int) -> bool:
    return os.getppid() != parent


def _end_self() -> None:
    os.kill(os.getpid(), signal.SIGTERM)  # the server's own graceful shutdown
    time.sleep(GRACE_S)
    os._exit(143)


def watch(parent: int) -> None:
    while not _parent_gone(parent):
        time.sleep(POLL_S)
    _end_self()


def watch_idle(clock: idle.IdleClock) -> None:
    while not clock.expired(time.monotonic()):
        time.sleep(min(POLL_S, max(0.05, clock.left(time.monotonic()))))
    print(f"chorus: no request for {clock.idle_s:g}s: the shared LLM server stops", file=sys.stderr, flush=True)
    _end_self()


def streams_with_usage() -> None:
    """llama-cpp-python sends no usage in a streamed chat completion: end each stream with
    the usage chunk OpenAI sends for `stream_options.include_usage` (prompt tokens as the
    prompt was tokenised, completion tokens as the chunks of text sent)."""
    import llama_cpp

    create = llama_cpp.Llama.create_chat_completion

    def create_with_usage(self: Any, *args: Any, **kwargs: Any) -> Any:
        if not kwargs.get("stream"):
            return create(self, *args, **kwargs)
        sizes: list[int] = []
        tokenize = self.tokenize

        def counted(*a: Any, **k: Any) -> Any:
            tokens = tokenize(*a, **k)
            sizes.append(len(tokens))
            return tokens

        self.tokenize = counted  # the server serves one request at a time
        try:
            chunks = create(self, *args, **kwargs)
        except BaseException:
            del self.tokenize
            raise
        return with_usage(chunks, sizes, lambda: self.__dict__.pop("tokenize", None))

    llama_cpp.Llama.create_chat_completion = create_with_usage  # type: ignore[method-assign]


def with_usage(chunks: Iterable[dict[str, Any]], sizes: list[int], done: Callable[[], object]) -> Iterator[dict[str, Any]]:
    """`chunks`, then a usage chunk: the prompt is the largest text tokenised for the call."""
    last: dict[str, Any] | None = None
    text = 0
    try:
        for chunk in chunks:
            choices = chunk.get("choices") or [{}]
            if (choices[0].get("delta") or {}).get("content"):
                text += 1
            last = chunk
            yield chunk
    finally:
        done()
    if last is not None:
        prompt = max(sizes, default=0)
        yield {"id": last.get("id"), "object": "chat.completion.chunk", "created": last.get("created"),
               "model": last.get("model"), "choices": [],
               "usage": {"prompt_tokens": prompt, "completion_tokens": text, "total_tokens": prompt + text}}  # fmt: skip


def instrument_llama_server(clock: idle.IdleClock | None, aliases: list[str]) -> None:
    """Streams end with their usage; GET /v1/models answers at once, even while a completion
    runs (`idle.ModelsAtOnce`); with a clock, llama_cpp.server's requests are counted on it.
    (Its __main__ builds the app with `create_app`, looked up when runpy runs it.)"""
    import llama_cpp.server.app as app_module

    streams_with_usage()
    create_app = app_module.create_app

    def wrapped_app(*args: object, **kwargs: object) -> Any:
        app = create_app(*args, **kwargs)
        if aliases:
            app = idle.ModelsAtOnce(app, aliases)
        return idle.CountRequests(app, clock) if clock is not None else app

    app_module.create_app = wrapped_app  # type: ignore[assignment]


def model_aliases(args: list[str]) -> list[str]:
    """The `--model_alias` the server is started with (none: llama.cpp's own answer)."""
    return [args[i + 1] for i, a in enumerate(args[:-1]) if a == "--model_alias"]


def parse(argv: list[str]) -> tuple[int, float, list[str]]:
    """(parent pid, idle seconds, the rest: -m MODULE ... or -c CODE ...)."""
    if not argv:
        sys.exit(USAGE)
    parent, rest, idle_s = argv[0], argv[1:], 0.0
    if rest[:1] == ["--idle-s"] and len(rest) > 1:
        idle_s, rest = float(rest[1]), rest[2:]
    if len(rest) < 2 or rest[0] not in ("-m", "-c"):
        sys.exit(USAGE)
    return int(parent), idle_s, rest


def main(argv: list[str]) -> None:
    parent, idle_s, rest = parse(argv)
    if parent:
        threading.Thread(target=watch, args=(parent,), name="chorus-parent-watch", daemon=True).start()
    if idle_s > 0:
        idle.CLOCK = idle.IdleClock(idle_s, time.monotonic())
        threading.Thread(target=watch_idle, args=(idle.CLOCK,), name="chorus-idle-watch", daemon=True).start()
    if rest[:2] == ["-m", "llama_cpp.server"]:
        instrument_llama_server(idle.CLOCK, model_aliases(rest[2:]))
    if rest[0] == "-m":
        sys.argv = [rest[1], *rest[2:]]
        runpy.run_module(rest[1], run_name="__main__", alter_sys=True)
    else:
        sys.argv = ["-c", *rest[2:]]
        exec(compile(rest[1], "<child>", "exec"), {"__name__": "__main__"})


if __name__ == "__main__":
    main(sys.argv[1:])
