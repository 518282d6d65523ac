"""The Verifier's sandbox (seed 004): the commands it runs on a builder's code (ruff, pytest,
probes, the resubmit hook, the benchmark's judge) are the builder's code running, so they
run in the one sandbox Chorus has for code a model wrote: actors.tools.sandbox (bubblewrap),
the same as the task workflows' scripts. This module only names it for the relay."""

from __future__ import annotations

from actors.tools.sandbox import (
    SandboxPolicy,
    SandboxResult,
    SandboxUnavailable,
    describe_stop,
    run_sandboxed,
)

__all__ = ["SandboxPolicy", "SandboxResult", "SandboxUnavailable", "describe_stop", "run_sandboxed"]
