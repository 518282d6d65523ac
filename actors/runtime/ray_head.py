"""One local Ray instance per machine, shared by the `chorus` processes that need Ray.

Starting Ray is most of what a short `chorus run` costs besides its model calls (9.6 s of a
17 s run with an instant model on a loaded 2-core machine; joining a running instance takes
0.4-1.2 s). So a `Client` with no Ray address joins the machine's shared head, and starts one
if there is none: `python -m actors.runtime.ray_head` runs `ray start --head --block` in a
session of its own and stops it once no process has used it for `CHORUS_RAY_IDLE_S` seconds
(600; 0: each process starts a Ray of its own and stops it, as before). It listens on
`CHORUS_RAY_PORT` (6390) of this machine only.

A process using the head leaves a file named by its pid in `/tmp/chorus-<uid>/ray-PORT-users/`;
the watch counts the live ones. A job's workers run with the environment and the folder of
the process that submitted it (`driver_runtime_env`: its CHORUS_*, OPENAI_* and PYTHONPATH
variables, and a setup hook that enters its working folder), not the head's.

It runs in Ray's token mode with a token of its own (`/tmp/chorus-<uid>/ray-token`, readable
by this user only), so only this user's processes can join it. Its start is noted in
`/tmp/chorus-<uid>/ray-PORT.json` (the watch's pid, the Python it runs)
under a lock, so processes starting at once end with one head; a head of another Python (a
second virtual environment) is not joined: that process starts a Ray of its own.
"""

from __future__ import annotations

import argparse
import atexit
import contextlib
import json
import os
import secrets
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

from actors.runtime.machine import alive, locked, state_folder

ENV_PREFIXES = ("CHORUS_", "OPENAI_", "HF_", "TRANSFORMERS_")
ENV_NAMES = ("PYTHONPATH",)
CWD_VAR = "CHORUS_DRIVER_CWD"
READY = "Ray runtime started"
START_TIMEOUT_S = 120.0


class SharedRayError(RuntimeError):
    """The shared head could not be used; the caller starts a Ray of its own."""


def token_path() -> Path:
    """The shared head's authentication token (Ray's token mode), readable by this user only:
    a process of another user, or on another machine, cannot join it."""
    path = state_folder() / "ray-token"
    if not path.exists():
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w") as f:
            f.write(secrets.token_hex(32))
    return path


def auth_env() -> dict[str, str]:
    """The variables with which a process joins the shared head (and the head runs)."""
    return {"RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN_PATH": str(token_path())}


def note_path(port: int) -> Path:
    return state_folder() / f"ray-{port}.json"


def users_dir(port: int) -> Path:
    return state_folder() / f"ray-{port}-users"


def running(port: int) -> dict[str, Any] | None:
    """The note of the head on `port`, if its watch runs and it is ready."""
    try:
        note = json.loads(note_path(port).read_text())
    except (OSError, ValueError):
        return None
    if not isinstance(note, dict) or not note.get("ready") or not alive(int(note.get("pid", 0))):
        return None
    return note if _listening(port) else None


def _listening(port: int, timeout: float = 1.0) -> bool:
    with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), timeout=timeout):
        return True
    return False


def shared_head(port: int, idle_s: float, log: Path) -> str:
    """The address of the machine's shared head, started now if there is none; this process
    is counted as its user until it exits. SharedRayError when it cannot be used."""
    with locked(note_path(port).with_suffix(".lock")):
        note = running(port)
        if note is not None and note.get("python") != sys.executable:
            raise SharedRayError(f"the shared Ray on port {port} runs {note.get('python')}, not this Python")
        if note is None:
            _start(port, idle_s, log)
        _count_me(port)  # under the lock: the watch cannot stop the head between the check and this
    join_with_token()
    return f"127.0.0.1:{port}"


def join_with_token() -> None:
    """Make this process send the shared head's token: by its path in the environment (not the
    token: this process's children see no secret). Ray reads the mode when it is imported: if
    it was, it is told to read it again, as Ray's own `_enable_token_auth` does."""
    os.environ.pop("RAY_AUTH_TOKEN", None)  # a token a local Ray instance left would be sent instead
    os.environ.update(auth_env())
    if "ray" not in sys.modules:
        return
    try:
        from ray._raylet import AuthenticationTokenLoader, Config

        Config.initialize("")
        AuthenticationTokenLoader.instance().reset_cache()
    except (ImportError, AttributeError) as e:  # another Ray version: not joined (a Ray of its own)
        raise SharedRayError(f"this Ray cannot switch to the shared head's token: {e}") from None


def _start(port: int, idle_s: float, log: Path) -> None:
    if _listening(port):
        raise SharedRayError(f"port {port} is taken by something that is not a Chorus Ray head (CHORUS_RAY_PORT)")
    log.parent.mkdir(parents=True, exist_ok=True)
    # The head's processes get none of this process's job variables: a variable in the head's
    # environment that a later job does not set would reach that job's workers.
    env = {k: v for k, v in os.environ.items() if not (k.startswith(ENV_PREFIXES) or k.startswith("RAY_"))}
    token_path()  # made before the head needs it
    with open(log, "ab") as out:
        watch = subprocess.Popen(
            [sys.executable, "-m", "actors.runtime.ray_head", "--port", str(port), "--idle-s", str(idle_s)],
            stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True,
            cwd=str(Path.home()), env=env,
        )  # fmt: skip
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        if running(port) is not None:
            return
        if watch.poll() is not None:
            raise SharedRayError(f"the shared Ray head ended as it started (exit {watch.returncode}; log: {log})")
        time.sleep(0.2)
    raise SharedRayError(f"the shared Ray head did not start within {START_TIMEOUT_S:.0f}s (log: {log})")


def _count_me(port: int) -> None:
    folder = users_dir(port)
    folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    mine = folder / str(os.getpid())
    mine.touch()
    atexit.register(lambda: mine.unlink(missing_ok=True))


def live_users(port: int) -> list[int]:
    """The pids of the processes that use the head and still run (the files of the others
    are removed)."""
    found = []
    for f in users_dir(port).glob("*"):
        if f.name.isdigit() and alive(int(f.name)):
            found.append(int(f.name))
        else:
            f.unlink(missing_ok=True)
    return found


def driver_runtime_env(environ: dict[str, str] | None = None, cwd: str | None = None) -> dict[str, Any]:
    """What a job's workers on the shared head start with: this process's Chorus, OpenAI and
    model-cache variables and PYTHONPATH, and its working folder (entered by `enter_driver_cwd`)."""
    env = os.environ if environ is None else environ
    chosen = {k: v for k, v in env.items() if k.startswith(ENV_PREFIXES) or k in ENV_NAMES}
    chosen[CWD_VAR] = cwd or os.getcwd()
    return {"env_vars": chosen, "worker_process_setup_hook": "actors.runtime.ray_head.enter_driver_cwd"}


def enter_driver_cwd() -> None:
    """A worker's setup hook: work in the submitting process's folder, as a worker of a Ray of
    its own would (relative paths and `module:function` import paths resolve the same)."""
    cwd = os.environ.get(CWD_VAR)
    if cwd and os.path.isdir(cwd):
        os.chdir(cwd)
        if cwd not in sys.path:
            sys.path.insert(0, cwd)


# -- the watch: `python -m actors.runtime.ray_head --port P --idle-s S` --------------------------


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m actors.runtime.ray_head")
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--idle-s", type=float, required=True)
    opts = parser.parse_args(argv)
    env = {**os.environ, **auth_env()}
    head = subprocess.Popen(
        [sys.executable, "-m", "ray.scripts.scripts", "start", "--head", "--block", "--port", str(opts.port), "--include-dashboard=false",
         "--disable-usage-stats", "--num-cpus", str(os.cpu_count() or 1)],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env,
    )  # fmt: skip
    note = {"pid": os.getpid(), "port": opts.port, "python": sys.executable, "started": time.time(), "ready": False}
    note_path(opts.port).write_text(json.dumps(note))
    ready = threading.Event()

    def echo() -> None:
        for line in head.stdout or ():
            sys.stdout.write(line)
            sys.stdout.flush()
            if READY in line:
                ready.set()

    threading.Thread(target=echo, daemon=True).start()
    signal.signal(signal.SIGTERM, lambda *_: head.terminate())
    try:
        while head.poll() is None and not ready.wait(0.5):
            pass
        if head.poll() is None:
            note_path(opts.port).write_text(json.dumps({**note, "ready": True}))
        watch(head, opts.port, opts.idle_s)
    finally:
        with contextlib.suppress(OSError, ValueError):
            if json.loads(note_path(opts.port).read_text()).get("pid") == os.getpid():
                note_path(opts.port).unlink()
    return head.returncode or 0


def watch(head: subprocess.Popen[str], port: int, idle_s: float, every_s: float = 2.0) -> None:
    """Until the head ends: stop it once no process has used it for `idle_s` seconds."""
    last_used = time.monotonic()
    while head.poll() is None:
        time.sleep(every_s)
        with locked(note_path(port).with_suffix(".lock")):  # not while a process is joining
            if live_users(port):
                last_used = time.monotonic()
            elif time.monotonic() - last_used > idle_s:
                print(f"ray_head: no process used the shared Ray for {idle_s:g}s: stopping it", flush=True)
                note_path(port).unlink(missing_ok=True)  # a process joining from now on starts a new one
                head.terminate()
                try:
                    head.wait(timeout=60)
                except subprocess.TimeoutExpired:
                    head.kill()
                return


if __name__ == "__main__":
    sys.exit(main())
