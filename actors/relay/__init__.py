"""The builder/verifier relay (seed 004): a roadmap worked through in turns. A builder
passes a BatonPacket to a verifier; the scheduler stores a checkpoint, retries with the
DefectCapsule, or escalates to a person.
    events.py              its event types (RoadmapPlanned, RelayTurnStarted, BatonPassed ...)
    scheduler.py, roadmap.py, baton.py, edits.py, patch.py, verdict.py, workspace.py,
    check_config.py        the pure core: the Scheduler's decide/evolve and what it folds
    prompts.py             the Builder's and the Verifier's prompts
    builder.py, verifier.py, checks.py, sandbox.py, recording.py, workspace_files.py,
    git_workspace.py, memory.py   the turns' effects: model calls, checks in bubblewrap, files
    actor.py, run.py, session.py   the Ray shells (`RelayActor`, the Scheduler) and driving them
    checkpoints.py, escalations.py its views (seed 004's tables; escalations for a person)
    replay.py, fork.py, resubmit.py   replay, fork at a turn, the resubmit hook
    kind.py                its RunKind, `RelayRun`; cli.py, `chorus relay`; api.py, its HTTP
                           routes; progress.py
"""
