"""Replay, fork, diff and state-at: the runtime in another mode (as Temporal's replayer is its
worker in another mode). They re-execute or fold actors from the log, with no model, no
network and no tool side effects, and write nothing to the log.

    replay_run(store, run_id)          re-execute a run; identical, or the first difference
    diff_runs(store, run_a, run_b)     where two runs of one kind part
    state_at(store, stream, version)   an actor's state at any version
    snapshot_at(store, stream, version)  the same as a snapshot document
    timeline(store, run_id)            the run as a person debugging it reads it
    export_run / load_fixture          runs as JSON-lines replay fixtures
"""

from actors.runtime.replay.diff import RunDiff, diff_runs
from actors.runtime.replay.fixtures import FixtureError, export_run, load_fixture
from actors.runtime.replay.report import Divergence, ReplayReport
from actors.runtime.replay.rerun import replay_run, replay_stream, run_kind_of, run_records
from actors.runtime.replay.state import UnknownStream, behaviour_for, snapshot_at, state_at
from actors.runtime.replay.timeline import timeline

__all__ = [
    "Divergence",
    "FixtureError",
    "ReplayReport",
    "RunDiff",
    "UnknownStream",
    "behaviour_for",
    "diff_runs",
    "export_run",
    "load_fixture",
    "replay_run",
    "replay_stream",
    "run_kind_of",
    "run_records",
    "snapshot_at",
    "state_at",
    "timeline",
]
