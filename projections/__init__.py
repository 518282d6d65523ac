"""The views: projection runner, read models, replay / fork / diff tools (issue 3).

Every read model is a projection (rule 3): it folds the global log into tables in the
store's own database, tracks the position it has processed in the same transaction as
its rows, and can be dropped and rebuilt to an identical result.

    runner = ProjectionRunner(store)      # every registered projection
    runner.run_once()                     # catch up, in batches
    runner.run_forever(stop)              # follow the log live
    trail = AuditTrail(store)             # query the audit trail (AuditTrail.open catches it up)
    runs = RunsView.open(store).list(20)  # the 20 newest runs, caught up first
"""

from projections.audit import AuditEvent, AuditProjection, AuditTrail, LlmCall, Usage
from projections.projection import (
    Projection,
    UnknownProjection,
    projection_names,
    register_projection,
    registered_projections,
)
from projections.runner import ProjectionRunner, ProjectionStatus, RebuildResult
from projections.runs import RunsProjection, RunsView
from projections.snapshot_files import ActorSnapshot, read_snapshot
from projections.snapshots import SnapshotProjection
from projections.views import ViewCursor, ViewStore

__all__ = [
    "ActorSnapshot",
    "AuditEvent",
    "AuditProjection",
    "AuditTrail",
    "LlmCall",
    "Projection",
    "ProjectionRunner",
    "ProjectionStatus",
    "RebuildResult",
    "RunsProjection",
    "RunsView",
    "SnapshotProjection",
    "UnknownProjection",
    "Usage",
    "ViewCursor",
    "ViewStore",
    "projection_names",
    "register_projection",
    "read_snapshot",
    "registered_projections",
]
