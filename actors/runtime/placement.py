"""Where a run's actors go on a Ray cluster: placement rules, read from `CHORUS_PLACEMENT`.

A rule names an actor role (the part of its name before ':') and where that role may
run. The roles: a run's lead actor by its kind (`agent` for `agent:RUN`, `task`, `relay`),
`tool` for the tool actors an agent starts, `relay` also for a relay's builder and verifier
(`relay:RUN:builder`), `synth` and `director` for a simulation's, `vectors` for the
vector-store actor, and `*` for any role no rule names:

    CHORUS_PLACEMENT="agent=resource:chorus_llm+spread, vectors=resource:chorus_vectors"

- `resource:NAME`: only on nodes that declare the custom resource, e.g. the nodes that
  have the model, started with `ray start --resources='{"chorus_llm": 1}'`. Each actor
  takes a sliver of it (0.001), so the resource says where, not how many: a finished
  run's actor stays alive (its state can still be asked for) and must not block the next.
  `resource:NAME:AMOUNT` takes AMOUNT instead, which caps how many live actors a node
  holds (its declared amount / AMOUNT). When a node is lost, its actors restart on
  another node that has the resource.
- `node:NODE_ID` (hard) or `node:NODE_ID:soft`: node affinity. A hard rule keeps the actor
  on that node or nowhere, so an actor on a lost node cannot restart: prefer `:soft`
  (there if it is alive, elsewhere if not) or a resource.
- `spread`: Ray's SPREAD strategy, across the nodes that fit (Ray's default packs
  actors onto one node until it is half used).
- `any`: Ray's default placement.

Parts join with `+`: `agent=resource:chorus_llm+spread` spreads the agents over the nodes
that have the model.

Empty (the default) places nothing: every actor goes where Ray puts it, as on one machine.
Parsing is pure; `ray_options` turns a rule into `ActorClass.options(...)` keywords.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, replace
from typing import Any

MARKER = 0.001  # what `resource:NAME` takes of a node's NAME: up to 1000 actors per unit


class PlacementError(ValueError):
    """A placement rule that cannot be read (the message is one line and names it)."""


@dataclass(frozen=True)
class Rule:
    resource: str = ""  # a custom resource the node must have
    amount: float = MARKER
    strategy: str = ""  # "" (Ray's default) | spread | node
    node: str = ""  # for `node`: the node's id
    soft: bool = False


def _part(text: str, rule: Rule) -> Rule:
    parts = [p.strip() for p in text.strip().split(":")]
    kind = parts[0]
    if kind in ("spread", "any") and len(parts) == 1:
        if kind == "spread" and rule.strategy:
            raise PlacementError(f"placement {text!r}: one of spread and node per rule")
        return replace(rule, strategy="spread") if kind == "spread" else rule
    if kind == "resource" and len(parts) in (2, 3) and parts[1]:
        if rule.resource:
            raise PlacementError(f"placement {text!r}: one resource per rule")
        amount = MARKER
        if len(parts) == 3:
            try:
                amount = float(parts[2])
            except ValueError:
                raise PlacementError(f"placement {text!r}: the amount {parts[2]!r} is not a number") from None
            if not math.isfinite(amount) or amount <= 0:
                raise PlacementError(f"placement {text!r}: the amount must be positive")
        return replace(rule, resource=parts[1], amount=amount)
    if kind == "node" and len(parts) in (2, 3) and parts[1]:
        if rule.strategy:
            raise PlacementError(f"placement {text!r}: one of spread and node per rule")
        if not re.fullmatch(r"[0-9a-f]{56}", parts[1]):
            raise PlacementError(f"placement {text!r}: a node id is 56 hex digits (see `ray list nodes`)")
        if len(parts) == 3 and parts[2] not in ("soft", "hard"):
            raise PlacementError(f"placement {text!r}: after the node id write soft or hard")
        return replace(rule, strategy="node", node=parts[1], soft=len(parts) == 3 and parts[2] == "soft")
    raise PlacementError(
        f"placement {text!r}: use resource:NAME[:AMOUNT], node:NODE_ID[:soft], spread or any, joined by +"
    )


def parse_rule(text: str) -> Rule:
    """`resource:chorus_llm+spread` → Rule(resource="chorus_llm", strategy="spread")."""
    rule = Rule()
    for part in text.split("+"):
        rule = _part(part, rule)
    return rule


def parse_placement(text: str) -> dict[str, Rule]:
    """`ROLE=RULE, ROLE=RULE, ...` → {role: rule}. Empty text: no rules."""
    rules: dict[str, Rule] = {}
    for item in filter(None, (part.strip() for part in (text or "").split(","))):
        role, sep, rule = item.partition("=")
        role = role.strip()
        if not sep or not role or not rule.strip():
            raise PlacementError(f"CHORUS_PLACEMENT item {item!r}: write ROLE=RULE, e.g. agent=resource:chorus_llm")
        if role in rules:
            raise PlacementError(f"CHORUS_PLACEMENT names {role!r} twice")
        rules[role] = parse_rule(rule)
    return rules


def role_of(actor_name: str) -> str:
    """An actor's role from its name: `agent:RUN` → `agent`."""
    return actor_name.split(":", 1)[0]


def rule_for(rules: dict[str, Rule], actor_name: str) -> Rule | None:
    return rules.get(role_of(actor_name), rules.get("*"))


def option_fields(rule: Rule | None) -> dict[str, Any]:
    """The `.options(...)` keywords of a rule, with node affinity left as a description
    (`("node", id, soft)`) so this stays free of Ray; `ray_options` builds the strategy."""
    fields: dict[str, Any] = {}
    if rule is None:
        return fields
    if rule.resource:
        fields["resources"] = {rule.resource: rule.amount}
    if rule.strategy == "spread":
        fields["scheduling_strategy"] = "SPREAD"
    elif rule.strategy == "node":
        fields["scheduling_strategy"] = ("node", rule.node, rule.soft)
    return fields


def ray_options(placement: str, actor_name: str) -> dict[str, Any]:
    """`ActorClass.options(**ray_options(settings.placement, name))` for an actor named `name`."""
    fields = option_fields(rule_for(parse_placement(placement), actor_name))
    strategy = fields.get("scheduling_strategy")
    if isinstance(strategy, tuple):
        from ray.util.scheduling_strategies import (
            NodeAffinitySchedulingStrategy,  # lazily: Ray shells only
        )

        _, node_id, soft = strategy
        fields["scheduling_strategy"] = NodeAffinitySchedulingStrategy(node_id=node_id, soft=soft)
    return fields
