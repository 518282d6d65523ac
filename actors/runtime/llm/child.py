"""Run a Python command line that dies with the process that started it.

    python -m actors.runtime.llm.child PARENT_PID -m llama_cpp.server --model ...
    python -m actors.runtime.llm.child PARENT_PID -c "code"

A daemon thread checks every second that PARENT_PID is still this process's parent; when it
is not (the parent exited, was killed, or crashed), this process sends itself SIGTERM, so a
`chorus` killed with SIGKILL does not leave the embedded LLM server holding its port and
3 GB of memory. PARENT_PID 0 watches nothing (`chorus model serve`: a server meant to stay up).
Watching the parent from inside the child, rather than with PR_SET_PDEATHSIG, keeps the
server alive when the thread that started it ends while its process goes on.
"""

from __future__ import annotations

import os
import runpy
import signal
import sys
import threading
import time

POLL_S = 1.0
GRACE_S = 10.0


def _parent_gone(parent: int) -> bool:
    return os.getppid() != parent


def watch(parent: int) -> None:
    while not _parent_gone(parent):
        time.sleep(POLL_S)
    os.kill(os.getpid(), signal.SIGTERM)  # the server's own graceful shutdown
    time.sleep(GRACE_S)
    os._exit(143)


def main(argv: list[str]) -> None:
    if len(argv) < 3 or argv[1] not in ("-m", "-c"):
        sys.exit("usage: python -m actors.runtime.llm.child PARENT_PID (-m MODULE | -c CODE) [ARGS...]")
    parent = int(argv[0])
    if parent:
        threading.Thread(target=watch, args=(parent,), name="chorus-parent-watch", daemon=True).start()
    if argv[1] == "-m":
        sys.argv = [argv[2], *argv[3:]]
        runpy.run_module(argv[2], run_name="__main__", alter_sys=True)
    else:
        sys.argv = ["-c", *argv[3:]]
        exec(compile(argv[2], "<child>", "exec"), {"__name__": "__main__"})


if __name__ == "__main__":
    main(sys.argv[1:])
