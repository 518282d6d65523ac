"""A command as it crosses between processes: bytes, not a pickled pydantic model.

A Ray call pickles a pydantic model argument field by field and rebuilds it on the other side;
bytes go through as they are. Measured here (`tests.bench.bench_actor`'s column "bare call with
command", and a direct comparison in BENCHMARKS.md, "Actors"): a command sent as a model costs
about 0.25 ms a call over a call with no argument; as its JSON, validated by the receiving
actor, about 0.1 ms. So commands that cross a Ray call (`Client.spawn`'s start commands, an
actor host's `handle`) travel as `to_wire(command)`, and the actor that receives one calls
`from_wire`, which validates it into its own type exactly as constructing it would.

The wire form is the command type's import path, a newline, then pydantic's JSON of the
command. `from_wire` accepts only a subclass of `Command`, and accepts a command object as it
is (a caller in the same process, a test).
"""

from __future__ import annotations

import importlib
from functools import reduce

from actors.runtime.behaviour import Command


class WireError(ValueError):
    """Bytes that do not hold a command."""


def to_wire(command: Command) -> bytes:
    cls = type(command)
    return f"{cls.__module__}:{cls.__qualname__}\n".encode() + cls.__pydantic_serializer__.to_json(command)


def from_wire(data: bytes | Command) -> Command:
    if isinstance(data, Command):
        return data
    head, newline, body = bytes(data).partition(b"\n")
    module, colon, name = head.decode("utf-8", "replace").partition(":")
    if not (newline and colon and module and name):
        raise WireError(f"not a command on the wire: {bytes(data)[:60]!r}")
    try:
        cls = reduce(getattr, name.split("."), importlib.import_module(module))
    except (ImportError, AttributeError):
        cls = None
    if not (isinstance(cls, type) and issubclass(cls, Command)):
        raise WireError(f"{module}:{name} is not a command type")
    return cls.model_validate_json(body)
