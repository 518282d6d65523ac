"""The Handler's direct tools that touch the world: `system:run_script` and `system:read_files`.

They run only on the live side of the wall (in the task actor); what they return is recorded
as `ToolReturned` before the workflow sees it, and a replay serves that record instead.

`system:run_script` is NOT a sandbox. It runs `/bin/sh -c COMMAND` in the workspace folder
with a timeout, with stdin closed, and with an environment reduced to a few harmless
variables (PATH, HOME, LANG, ...) so API keys and tokens in the caller's environment are not
inherited. The script's whole process group is killed when it times out or finishes, so
nothing it started in the background is left running (a process that escapes with `setsid`
can survive). It can still read and write anything the user can, and use the network.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
from collections.abc import Iterator, Mapping
from typing import Any

from actors.runtime.registry import Registry, Tool
from actors.tools.paths import ToolInputError, is_binary, resolve_in_root, resolve_root

KEPT_ENV = ("PATH", "HOME", "LANG", "LANGUAGE", "LC_ALL", "LC_CTYPE", "TERM", "TZ", "TMPDIR", "USER", "LOGNAME", "SHELL")
DEFAULT_TIMEOUT_S = 30.0
MAX_TIMEOUT_S = 600.0
MAX_OUTPUT_CHARS = 64_000
MAX_READ_BYTES = 200_000


def script_env(environ: dict[str, str] | None = None) -> dict[str, str]:
    """The environment a script gets: an allow-list, so no secret is inherited by accident."""
    source = os.environ if environ is None else environ
    return {k: source[k] for k in KEPT_ENV if k in source}


def _cut(data: bytes) -> str:
    text = data.decode("utf-8", errors="replace")
    if len(text) <= MAX_OUTPUT_CHARS:
        return text
    return text[:MAX_OUTPUT_CHARS] + f"\n... ({len(text) - MAX_OUTPUT_CHARS} more characters cut)"


def _kill_group(proc: subprocess.Popen[bytes]) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


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
            ["/bin/sh", "-c", command],
            cwd=self.root,
            env=script_env(),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,  # its own process group: we can kill all it started
        )
        timed_out = False
        try:
            out, err = proc.communicate(timeout=limit)
        except subprocess.TimeoutExpired:
            timed_out = True
            _kill_group(proc)
            try:
                out, err = proc.communicate(timeout=5)
            except subprocess.TimeoutExpired:  # pipes held open by an escaped process
                proc.kill()
                out, err = b"", b""
        finally:
            _kill_group(proc)  # background leftovers of a script that finished
        return json.dumps(
            {
                "exit_code": proc.returncode,
                "stdout": _cut(out),
                "stderr": _cut(err),
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
        with open(real, "rb") as f:
            data = f.read(MAX_READ_BYTES + 1)
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
