"""The `chorus` command as a user runs it: a fresh process, the given environment."""

from __future__ import annotations

import os
import subprocess
import sys


def chorus(*args: str, env: dict[str, str], timeout: float = 180) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "actors.cli", *args],
        capture_output=True, text=True, env={**os.environ, **env}, timeout=timeout,
    )  # fmt: skip
