"""The Handler's direct tools that touch the world: `system:run_script` and `system:read_files`.

They run only on the live side of the wall (in the task actor); what they return is recorded
as `ToolReturned` before the workflow sees it, and a replay serves that record instead.

`system:run_script` is NOT a sandbox. It runs `/bin/sh -c COMMAND` in the workspace folder
with a timeout, with stdin closed, and with an environment reduced to a few harmless
variables (PATH, HOME, LANG, ...) so API keys and tokens in the caller's environment are not
inherited. It is started through a launcher that is itself started with that clean
environment, so the script's parent (`/proc/$PPID/environ`) holds no secret either. Where
the kernel allows unprivileged user namespaces, the launcher is `unshare` and the script
runs in its own PID and mount namespaces with a private /proc: it sees only its own
processes, so no ancestor's or other process's environment; and when it ends, everything it
started ends with it. Elsewhere the launcher is a plain `/bin/sh` and other processes of the
same user (the actor among them) stay readable through /proc. Either way the script's whole
process group is killed when it times out or finishes. It can still read and write anything
the user can, and use the network. Its output is read in chunks and only the first
`MAX_OUTPUT_CHARS` of each stream are kept; the rest is drained and counted, not stored.
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterator, Mapping
from functools import lru_cache
from typing import Any

from actors.runtime.registry import Registry, Tool
from actors.tools.paths import ToolInputError, is_binary, read_head, resolve_in_root, resolve_root
from actors.tools.process import drain, kill_group

KEPT_ENV = ("PATH", "HOME", "LANG", "LANGUAGE", "LC_ALL", "LC_CTYPE", "TERM", "TZ", "TMPDIR", "USER", "LOGNAME", "SHELL")
DEFAULT_TIMEOUT_S = 30.0
MAX_TIMEOUT_S = 600.0
MAX_OUTPUT_CHARS = 64_000
DRAIN_AFTER_KILL_S = 5.0
MAX_READ_BYTES = 200_000
# The launchers: the script is `/bin/sh -c COMMAND` started by one of these, which stays its
# parent (a shell that is not the last command cannot `exec` it away).
NAMESPACE_LAUNCHER = ("unshare", "--user", "--map-root-user", "--pid", "--fork", "--mount-proc", "--kill-child")
PLAIN_LAUNCHER = ("/bin/sh", "-c", '/bin/sh -c "$1"; exit $?', "chorus-launcher")


def script_env(environ: dict[str, str] | None = None) -> dict[str, str]:
    """The environment a script gets: an allow-list, so no secret is inherited by accident."""
    source = os.environ if environ is None else environ
    return {k: source[k] for k in KEPT_ENV if k in source}


@lru_cache(maxsize=1)
def namespaces_work() -> bool:
    """Whether `unshare` can give a script its own user, PID and mount namespaces here
    (asked once per process: some kernels and containers forbid it)."""
    try:
        done = subprocess.run(
            [*NAMESPACE_LAUNCHER, "/bin/sh", "-c", "exit 0"],
            check=False,
            env=script_env(),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            timeout=10,
        )
    except (OSError, subprocess.SubprocessError):
        return False
    return done.returncode == 0


def launch_argv(command: str) -> list[str]:
    """How a script is started: in its own namespaces where possible, else under a plain shell."""
    if namespaces_work():
        return [*NAMESPACE_LAUNCHER, "/bin/sh", "-c", command]
    return [*PLAIN_LAUNCHER, command]


def isolation() -> str:
    return "namespaces" if namespaces_work() else "plain"


class RunScript(Tool):
    description = "Run a shell command in the workspace folder, with a timeout; returns exit code, stdout, stderr."

    def __init__(self, root: str, **config: Any) -> None:
        super().__init__(root=root, **config)
        self.root = str(resolve_root(root))

    def execute(self, command: str = "", timeout: Any = None, **extra: Any) -> str:
        if extra:
            raise ToolInputError(f"system:run_script takes command and timeout, not {', '.join(sorted(extra))}")
        if not isinstance(command, str) or not command.strip():
            raise ToolInputError("system:run_script needs a command to run")
        limit = _timeout(timeout)
        proc = subprocess.Popen(
            launch_argv(command),
            cwd=self.root,
            env=script_env(),  # the launcher's own environment, hence the script's parent's, is clean
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,  # its own process group: we can kill all it started
        )
        try:
            out, err, timed_out = drain(proc, limit, MAX_OUTPUT_CHARS, DRAIN_AFTER_KILL_S)
        finally:
            kill_group(proc)  # background leftovers of a script that finished
            for pipe in (proc.stdout, proc.stderr):
                if pipe is not None:
                    pipe.close()
            try:
                proc.wait(timeout=DRAIN_AFTER_KILL_S)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        return json.dumps(
            {
                "exit_code": proc.returncode,
                "stdout": out.text(),
                "stderr": err.text(),
                "timed_out": timed_out,
                "timeout_s": limit,
            },
            ensure_ascii=False,
        )


def _timeout(value: Any) -> float:
    if value is None or value == "":
        return DEFAULT_TIMEOUT_S
    try:
        seconds = float(value)
    except (TypeError, ValueError):
        raise ToolInputError(f"timeout must be a number of seconds, not {value!r}") from None
    if not 0 < seconds <= MAX_TIMEOUT_S:
        raise ToolInputError(f"timeout must be between 0 and {MAX_TIMEOUT_S:g} seconds, not {seconds:g}")
    return seconds


class ReadFiles(Tool):
    description = "Read whole text files under the workspace folder; returns their contents."

    def __init__(self, root: str, **config: Any) -> None:
        super().__init__(root=root, **config)
        self.root = str(resolve_root(root))

    def execute(self, paths: Any = None, **extra: Any) -> str:
        if extra:
            raise ToolInputError(f"system:read_files takes paths, not {', '.join(sorted(extra))}")
        if isinstance(paths, str):
            paths = [p for p in (x.strip() for x in paths.split(",")) if p]
        if not isinstance(paths, list) or not paths:
            raise ToolInputError("system:read_files needs a list of paths")
        files: dict[str, str] = {}
        errors: dict[str, str] = {}
        for path in paths:
            try:
                files[str(path)] = self._read(str(path))
            except (ToolInputError, OSError) as e:
                errors[str(path)] = str(e).splitlines()[0] if str(e) else type(e).__name__
        return json.dumps({"files": files, "errors": errors}, ensure_ascii=False)

    def _read(self, path: str) -> str:
        real = resolve_in_root(self.root, path)
        if not real.exists():
            raise ToolInputError(f"no such file: {path}")
        if real.is_dir():
            raise ToolInputError(f"{path} is a folder, not a file")
        # regular files only, opened without following links: never outside, never blocking
        data = read_head(resolve_root(self.root), real, MAX_READ_BYTES + 1)
        if is_binary(data[:4096]):
            raise ToolInputError(f"{path} is a binary file")
        text = data[:MAX_READ_BYTES].decode("utf-8", errors="replace")
        if len(data) > MAX_READ_BYTES:
            text += f"\n... (cut at {MAX_READ_BYTES} bytes)"
        return text


SYSTEM_TOOLS: dict[str, type[Tool]] = {"system:run_script": RunScript, "system:read_files": ReadFiles}
for _name, _cls in SYSTEM_TOOLS.items():
    _cls.name = _name


class WorkspaceTools(Mapping[str, Tool]):
    """Every direct tool for a workspace: the two system tools and the Registry's tools
    (read_file, search_files, and any a user registered), each confined to the workspace.
    A tool is created when first used, so one that cannot start fails only its own calls."""

    def __init__(self, workspace: str) -> None:
        self.workspace = workspace
        self._made: dict[str, Tool] = {}

    def __getitem__(self, name: str) -> Tool:
        if name not in self._made:
            cls = SYSTEM_TOOLS.get(name) or Registry.tool_class(name)
            self._made[name] = cls(root=self.workspace)
        return self._made[name]

    def __iter__(self) -> Iterator[str]:
        return iter(tool_names())

    def __len__(self) -> int:
        return len(tool_names())


def workspace_tools(workspace: str) -> WorkspaceTools:
    return WorkspaceTools(workspace)


def tool_names() -> list[str]:
    return sorted({*SYSTEM_TOOLS, *Registry.names()["tools"]})
