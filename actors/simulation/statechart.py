"""A generic hierarchical state machine interpreter (seed 002's world processes). Pure.

A chart is plain data, as a content pack writes it:

    initial: calm
    states:
      calm:
        transitions: [{target: storm, after: 3}]
      storm:
        initial: gusting
        on_enter: [{set_environment: {weather: stormy}}]
        transitions: [{target: calm, when: {tide: low}}]    # applies in every child
        states:
          gusting: {transitions: [{target: raging, after: 2}]}
          raging: {}

The active state is a dotted path to a leaf ("storm.gusting"). A transition fires when all
its guards hold: `after: N` (at least N ticks since the process last transitioned) and
`when: {key: value}` (every key equals the environment's). Transitions are looked for from
the leaf outwards, so a child's transition wins over its ancestor's, and an ancestor's
applies to all its descendants. Entering a compound state enters its initial leaf. One
transition per step: a process moves at most once a tick, which keeps replay simple.

`after` counts from the process's last transition (its `entered_tick`), for an ancestor's
transition too: the world model keeps one entry tick per process.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

Chart = Mapping[str, Any]


def _states(node: Mapping[str, Any]) -> Mapping[str, Any]:
    states = node.get("states") or {}
    return states if isinstance(states, Mapping) else {}


def state_at(chart: Chart, path: str) -> Mapping[str, Any]:
    """The definition of the state at `path`; KeyError if there is none."""
    node: Mapping[str, Any] = chart
    for part in path.split("."):
        states = _states(node)
        if part not in states:
            raise KeyError(path)
        node = states[part] or {}
    return node


def exists(chart: Chart, path: str) -> bool:
    try:
        state_at(chart, path)
    except KeyError:
        return False
    return True


def enter(chart: Chart, path: str) -> str:
    """The leaf reached by entering `path`: down through each compound state's initial."""
    node = state_at(chart, path)
    while _states(node):
        child = node.get("initial") or next(iter(_states(node)))
        path = f"{path}.{child}" if path else child
        node = _states(node)[child] or {}
    return path


def initial_state(chart: Chart) -> str:
    """The leaf a process starts in: the chart's initial state, entered."""
    first = chart.get("initial") or next(iter(_states(chart)))
    return enter(chart, first)


def ancestors(path: str) -> list[str]:
    """`path` and every state above it, innermost first: "a.b.c" -> [a.b.c, a.b, a]."""
    parts = path.split(".")
    return [".".join(parts[:i]) for i in range(len(parts), 0, -1)]


def resolve_target(chart: Chart, owner: str, target: str) -> str | None:
    """A transition's target as a full path: a sibling of `owner` or of one of its
    ancestors (nearest first), else an absolute path from the chart's top."""
    scopes = [a.rsplit(".", 1)[0] if "." in a else "" for a in ancestors(owner)]
    for scope in scopes:
        candidate = f"{scope}.{target}" if scope else target
        if exists(chart, candidate):
            return candidate
    return target if exists(chart, target) else None


def enabled(transition: Mapping[str, Any], ticks_in_state: int, environment: Mapping[str, Any]) -> bool:
    after = transition.get("after")
    when = transition.get("when")
    if after is None and when is None:
        return False  # no guard: never fires (validate_chart reports it)
    if after is not None and ticks_in_state < after:
        return False
    if when is not None and any(environment.get(k) != v for k, v in when.items()):
        return False
    return True


def step(chart: Chart, path: str, ticks_in_state: int, environment: Mapping[str, Any]) -> str | None:
    """The leaf the process moves to now, or None if no transition is due."""
    for owner in ancestors(path):
        for transition in state_at(chart, owner).get("transitions") or []:
            if enabled(transition, ticks_in_state, environment):
                target = resolve_target(chart, owner, transition["target"])
                if target is None:
                    raise ValueError(f"{owner}: unknown target state {transition['target']!r}")
                return enter(chart, target)
    return None


def entered_states(source: str, target: str) -> list[str]:
    """The states entered going from leaf `source` to leaf `target`, outermost first:
    those of `target` below the deepest state the two share (a self-transition re-enters
    the leaf)."""
    s, t = source.split("."), target.split(".")
    shared = 0
    while shared < min(len(s), len(t)) and s[shared] == t[shared]:
        shared += 1
    if shared == len(t):  # target is source (or an ancestor of it): re-enter the leaf
        shared -= 1
    return [".".join(t[: i + 1]) for i in range(shared, len(t))]


def on_enter(chart: Chart, path: str) -> list[Mapping[str, Any]]:
    """The effects of entering the one state at `path` (not its ancestors or children)."""
    return list(state_at(chart, path).get("on_enter") or [])


def validate_chart(chart: Any) -> list[tuple[str, str]]:
    """Problems of a chart as (path, message): unknown initial or target states, transitions
    without a guard, malformed guards. Paths read like `states.storm.transitions[0].target`."""
    problems: list[tuple[str, str]] = []
    if not isinstance(chart, Mapping) or not _states(chart):
        return [("states", "a process needs a mapping of states")]

    def walk(node: Mapping[str, Any], prefix: str, where: str) -> None:
        states = _states(node)
        initial = node.get("initial")
        if states and initial is not None and str(initial) not in states:
            problems.append((f"{where}initial" if where else "initial", f"unknown state {initial!r}"))
        for name, state in states.items():
            path = f"{prefix}.{name}" if prefix else str(name)
            here = f"{where}states.{name}"
            if not isinstance(name, str) or "." in name or not name:
                problems.append((here, "a state name is a non-empty string without '.'"))
                continue
            if state is None:
                continue
            if not isinstance(state, Mapping):
                problems.append((here, "a state must be a mapping"))
                continue
            transitions = state.get("transitions") or []
            if not isinstance(transitions, list):
                problems.append((f"{here}.transitions", "must be a list"))
                transitions = []
            for i, t in enumerate(transitions):
                at = f"{here}.transitions[{i}]"
                if not isinstance(t, Mapping) or "target" not in t:
                    problems.append((at, "a transition needs a target"))
                    continue
                if resolve_target(chart, path, str(t["target"])) is None:
                    problems.append((f"{at}.target", f"unknown state {t['target']!r}"))
                after, when = t.get("after"), t.get("when")
                if after is None and when is None:
                    problems.append((at, "a transition needs `after` or `when`"))
                if after is not None and (isinstance(after, bool) or not isinstance(after, int) or after < 0):
                    problems.append((f"{at}.after", "must be a whole number of ticks"))
                if when is not None and not isinstance(when, Mapping):
                    problems.append((f"{at}.when", "must be a mapping of environment values"))
            effects = state.get("on_enter") or []
            if not isinstance(effects, list):
                problems.append((f"{here}.on_enter", "must be a list of effects"))
            walk(state, path, f"{here}.")

    walk(chart, "", "")
    return problems
