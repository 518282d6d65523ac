"""The resubmit hook's configuration and one run of it (actors.relay.resubmit), without a
store: what a run's params keep of a hook, how another process finds it again, and a
callable's outcome as an AppResubmitted."""

from __future__ import annotations

from pathlib import Path

import pytest

from actors.relay import resubmit
from actors.relay.events import CheckpointStored

CHECKPOINT = CheckpointStored(task_id="t", checkpoint_id="t:checkpoint:1", turn_id="t:turn:1")


def importable(checkpoint: CheckpointStored, workspace: Path) -> str:
    return f"{checkpoint.checkpoint_id} in {workspace.name}"


def test_params_keep_the_argv_or_the_callables_name():
    assert resubmit.hook_spec(["make", "deploy"]) == ["make", "deploy"]
    assert resubmit.hook_spec(importable) == {"callable": f"{__name__}:importable"}
    assert resubmit.hook_spec(None) is None
    for bad in ("make deploy", [], [""], 3):
        with pytest.raises(ValueError):
            resubmit.hook_spec(bad)  # type: ignore[arg-type]


def test_a_callable_is_found_again_by_its_name_else_recorded_as_missing():
    assert resubmit.resolve({"callable": f"{__name__}:importable"}, "r1") is importable
    assert resubmit.resolve(["make"], "r1") == ["make"]
    assert resubmit.resolve(None, "r1") is None
    missing = resubmit.resolve({"callable": f"{__name__}:<lambda>"}, "r2")
    done = resubmit.run_hook(missing, CHECKPOINT, Path("/tmp"))  # type: ignore[arg-type]
    assert not done.ok and "not available in this process" in (done.error or "")


def test_a_callables_outcome_is_an_event():
    done = resubmit.run_hook(importable, CHECKPOINT, Path("/tmp/ws"))
    assert (done.ok, done.output, done.checkpoint_id, done.returncode) == (
        True,
        "t:checkpoint:1 in ws",
        CHECKPOINT.checkpoint_id,
        None,
    )
    assert done.hook == f"{__name__}:importable"
