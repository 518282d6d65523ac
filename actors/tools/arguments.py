"""Reading the arguments a small model passes to a tool.

A small model often names an argument differently from the signature it was shown (`file`
for `path`, `keyword` for `query`, `line` for `start_line`), or passes a number as text.
Tools accept those instead of failing the step: each tool lists its aliases, and these two
functions read them the same way for every tool.
"""

from __future__ import annotations

from collections.abc import Container, Mapping, Sequence
from typing import Any

from actors.tools.paths import ToolInputError

UNSET = (None, "")


def alias_arg(value: Any, extra: Mapping[str, Any], aliases: Sequence[str], unset: Container[Any] = UNSET) -> Any:
    """`value` if the model set it (it is not in `unset`); else the first of `aliases` it
    used instead among `extra` (names compared case-insensitively, empty values skipped);
    else `value`."""
    if value not in unset:
        return value
    lowered = {str(k).lower(): v for k, v in extra.items()}
    return next((lowered[a] for a in aliases if lowered.get(a) not in UNSET), value)


def whole_number(value: Any, name: str, default: int) -> int:
    """`value` as an int (`"12"`, `12.0` too); `default` when it is unset. Anything else is
    a `ToolInputError` naming the argument."""
    if value is None or value == "":
        return default
    if isinstance(value, bool):
        raise ToolInputError(f"{name} must be a whole number, not {value!r}")
    try:
        return int(float(str(value).strip()))
    except ValueError:
        raise ToolInputError(f"{name} must be a whole number, e.g. {name}=1; got {value!r}") from None
