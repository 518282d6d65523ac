"""The Handler's direct tools that touch the world: `system:run_script` and `system:read_files`.

They run only on the live side of the wall (in the task actor); what they return is recorded
as `ToolReturned` before the workflow sees it, and a replay serves that record instead.

`system:run_script` runs `/bin/sh -c COMMAND` in the workspace folder inside the sandbox
Chorus has for code a model wrote (actors.tools.sandbox, bubblewrap; the relay's checks use
the same one). The workspace is bound read-write at its own path, since scripts are there to
work on it (list it, run a program in it, write an output file), and is the one host folder
it can change; its `.git` stays read-only. Besides that it sees a read-only /usr, the Python
of Chorus's venv, a private /tmp (its HOME), its own processes only; no home, no data
directory, no sockets, no network. It runs as an unprivileged uid without capabilities, with
limits on processes, file size, CPU and memory, stdin closed, and an environment of a few
harmless variables (LANG, TZ, ...): no API key or token of the caller's. At the timeout,
or when it ends, everything it started is killed, and so it is when the actor dies. Its
output is read in chunks and only the first `MAX_OUTPUT_CHARS` of each stream are kept; the
rest is drained and counted, not stored. Without bubblewrap a call fails, saying how to
install it: scripts never run unconfined.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterator, Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

from actors.runtime.registry import Registry, Tool
from actors.tools.paths import ToolInputError, is_binary, read_head, resolve_in_root, resolve_root
from actors.tools.sandbox import SandboxPolicy, run_sandboxed

DEFAULT_TIMEOUT_S = 30.0
MAX_TIMEOUT_S = 600.0
MAX_OUTPUT_CHARS = 64_000
MAX_READ_BYTES = 200_000
# A script's fence; its wall-clock timeout (and CPU time, the same) comes with each call.
SCRIPT_POLICY = SandboxPolicy(
    timeout_s=DEFAULT_TIMEOUT_S, cpu_s=int(DEFAULT_TIMEOUT_S), memory_mb=2048, max_processes=128,
    max_file_mb=1024, tmp_mb=512, max_output_chars=MAX_OUTPUT_CHARS,
)  # fmt: skip


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
        policy = replace(SCRIPT_POLICY, timeout_s=limit, cpu_s=math.ceil(limit))
        result = run_sandboxed(["/bin/sh", "-c", command], Path(self.root), policy)
        return json.dumps(
            {
                "exit_code": result.returncode,
                "stdout": result.stdout,
                "stderr": result.stderr,
                "timed_out": result.timed_out,
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
