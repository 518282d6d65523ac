"""The resubmit hook (seed 004's `_resubmit_to_app`): after a PASSED turn's checkpoint is
stored, the Scheduler hands the workspace back to the person's application.

A hook is a command (an argv list, run in the workspace folder inside the Verifier's
sandbox: actors.relay.sandbox) or a Python callable `hook(checkpoint, workspace)`. What it
did is recorded as AppResubmitted in the run's `relay:<run>:resubmit` stream, keyed by the
checkpoint: a replay never runs it (it re-executes the turns only), and a scheduler that
restarts runs it only for a checkpoint that has no outcome yet. A hook that fails, times out
or raises is recorded with why (`ok` False); the relay goes on.

What a run keeps in its params (`hook_spec`) is the argv, or a callable's "module:name" so
another process (a restarted Ray actor) can import it; a callable that cannot be imported
is honoured only in the process that started the run (`local_hooks`).
"""

from __future__ import annotations

import importlib
import shlex
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from actors.relay.sandbox import SandboxPolicy, describe_stop, run_sandboxed
from actors.relay.events import AppResubmitted, CheckpointStored
from events.store import EventStore

Hook = Sequence[str] | Callable[[CheckpointStored, Path], Any]
OUTPUT_CHARS = 2000
CALLABLE = "callable"

local_hooks: dict[str, Callable[[CheckpointStored, Path], Any]] = {}  # run id -> a callable not importable


def resubmit_stream(run_id: str) -> str:
    return f"relay:{run_id}:resubmit"


def hook_spec(hook: Hook | None) -> list[str] | dict[str, str] | None:
    """What the run's params keep of `hook`: the argv, or {"callable": "module:name"}.
    ValueError for something that is neither."""
    if hook is None:
        return None
    if callable(hook):
        module, name = getattr(hook, "__module__", None), getattr(hook, "__qualname__", "")
        return {CALLABLE: f"{module}:{name}"}
    if isinstance(hook, str | bytes) or not isinstance(hook, Sequence):
        raise ValueError("resubmit takes a command as a list of arguments, or a callable")  # noqa: TRY004
    argv = [str(a) for a in hook]
    if not argv or not argv[0].strip():
        raise ValueError("the resubmit command is empty")
    return argv


def resolve(spec: Any, run_id: str) -> Hook | None:
    """The hook a run's params name: the argv, or the callable (imported, else the one this
    process was given); None when the run has none. A callable that cannot be found is
    returned as a hook that fails, so its absence is recorded, not skipped silently."""
    if spec is None:
        return None
    if isinstance(spec, dict):
        name = str(spec.get(CALLABLE, ""))
        found = local_hooks.get(run_id) or _import(name)
        if found is not None:
            return found

        def missing(checkpoint: CheckpointStored, workspace: Path) -> None:
            raise LookupError(f"the resubmit callable {name} is not available in this process")

        missing.__qualname__ = name
        return missing
    return [str(a) for a in spec]


def _import(name: str) -> Callable[..., Any] | None:
    module, _, attr = name.partition(":")
    if not module or not attr or "<" in attr:  # a lambda or a function inside a function
        return None
    try:
        target: Any = importlib.import_module(module)
        for part in attr.split("."):
            target = getattr(target, part)
    except (ImportError, AttributeError):
        return None
    return target if callable(target) else None


def describe_hook(hook: Hook) -> str:
    if callable(hook):
        return f"{getattr(hook, '__module__', '?')}:{getattr(hook, '__qualname__', repr(hook))}"
    return shlex.join(hook)


def run_hook(
    hook: Hook, checkpoint: CheckpointStored, workspace: Path, policy: SandboxPolicy | None = None
) -> AppResubmitted:
    """Run the hook once; its outcome as an event (not yet appended). Never raises for what
    the hook does."""
    fields: dict[str, Any] = {
        "task_id": checkpoint.task_id,
        "checkpoint_id": checkpoint.checkpoint_id,
        "hook": describe_hook(hook),
    }
    if callable(hook):
        try:
            returned = hook(checkpoint, workspace)
        except Exception as e:  # noqa: BLE001  # a failing hook is recorded, never a crash of the relay
            return AppResubmitted(**fields, ok=False, error=f"{type(e).__name__}: {e}"[:500])
        return AppResubmitted(**fields, ok=True, output=_cut("" if returned is None else str(returned)))
    policy = policy or SandboxPolicy()
    result = run_sandboxed(list(hook), workspace, policy)
    output = _cut("\n".join(s for s in (result.stdout.strip(), result.stderr.strip()) if s))
    error = None
    if not result.ok:
        error = describe_stop(result, policy) or f"exit status {result.returncode}"
        if result.returncode == 127 and result.stderr:
            error = result.stderr.strip().splitlines()[0]
    return AppResubmitted(**fields, ok=result.ok, returncode=result.returncode, output=output, error=error)


def resubmit(
    store: EventStore,
    run_id: str,
    checkpoint: CheckpointStored,
    hook: Hook,
    workspace: Path,
    policy: SandboxPolicy | None = None,
) -> AppResubmitted | None:
    """Run the hook for `checkpoint` and record what it did, unless that is recorded
    already (then None: nothing is run twice)."""
    stream = resubmit_stream(run_id)
    if any(
        isinstance(e, AppResubmitted) and e.checkpoint_id == checkpoint.checkpoint_id for e in store.read_stream(stream)
    ):
        return None
    event = run_hook(hook, checkpoint, workspace, policy).stamp(run_id=run_id, causation_id=str(checkpoint.event_id))
    (recorded,) = store.append(stream, [event], store.stream_version(stream))
    return recorded.event  # type: ignore[return-value]


def pending(store: EventStore, run_id: str, checkpoints: Sequence[CheckpointStored]) -> list[CheckpointStored]:
    """The checkpoints whose hook has no recorded outcome (a scheduler that died between
    the checkpoint and the hook)."""
    done = {e.checkpoint_id for e in store.read_stream(resubmit_stream(run_id)) if isinstance(e, AppResubmitted)}
    return [c for c in checkpoints if c.checkpoint_id not in done]


def describe_outcome(e: AppResubmitted) -> str:
    """The hook's outcome as a progress line."""
    if e.ok:
        return f"resubmitted {e.checkpoint_id}: {e.hook}"
    return f"RESUBMIT FAILED {e.checkpoint_id}: {e.hook}: {e.error or 'failed'}"


def _cut(text: str) -> str:
    return text if len(text) <= OUTPUT_CHARS else text[: OUTPUT_CHARS - 12] + "\n... (cut)"
