"""The audit trail: every event of every run, the LLM call log, and token and cost totals.

Two halves under one name: `projections.audit_index` writes the view (`AuditProjection`,
an index over the log: which streams and positions hold a run's events, and one row per
LLM call), and `projections.audit_query` reads it and the log it indexes (`AuditTrail`).
Neither imports this module, so importing it from either side makes no cycle.
"""

from projections.audit_index import AuditProjection
from projections.audit_query import AuditEvent, AuditTrail, LlmCall, Usage

__all__ = ["AuditEvent", "AuditProjection", "AuditTrail", "LlmCall", "Usage"]
