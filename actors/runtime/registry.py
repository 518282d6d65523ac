"""The Registry (seed 000 §1.1, §2.1): a plain service locator for tools, LLMs, agents,
embedders and run kinds.

A third party adds a tool with the decorator and nothing else:

    @Registry.register_tool("word_count")
    class WordCount(Tool):
        description = "Count the words in a text."
        def execute(self, text: str) -> str:
            return str(len(text.split()))

`Registry.get_tool(name)` creates the tool as a Ray actor; `Registry.tool_class(name)` gives
the class itself for in-process use (replay, unit tests).

The runtime names no workload. A workload (or a provider) is a module listed under the
`chorus.plugins` entry-point group (pyproject.toml); importing it registers its run kind,
agents and tools.
The registry imports every such module on its first lookup, so a workload plugs in, here or
in a package of your own, without an edit to the runtime.
"""

from __future__ import annotations

import importlib
import inspect
import os
from collections.abc import Callable
from importlib.metadata import entry_points
from typing import Any, ClassVar, TypeVar

from actors.runtime.actor_options import restartable
from actors.runtime.placement import ray_options

T = TypeVar("T", bound=type)


class RegistryError(LookupError):
    pass


class Tool:
    """Base of tools. `execute` returns the observation text; raising is a failed call."""

    name: ClassVar[str] = ""
    description: ClassVar[str] = ""
    # True: the agent passes `context=ToolContext(...)` (a recorded LLM, the embedder).
    uses_context: ClassVar[bool] = False

    def __init__(self, **config: Any) -> None:
        self.config = config

    def execute(self, **kwargs: Any) -> str:
        raise NotImplementedError

    @classmethod
    def signature(cls) -> str:
        """`name(arg: type, ...)` for prompts, from `execute`'s annotations."""
        params = []
        for p in list(inspect.signature(cls.execute).parameters.values())[1:]:
            if p.kind in (p.VAR_KEYWORD, p.VAR_POSITIONAL):
                continue
            ann = p.annotation if isinstance(p.annotation, str) else getattr(p.annotation, "__name__", "")
            opt = "" if p.default is p.empty else f" = {p.default!r}"
            params.append(f"{p.name}: {ann}{opt}" if ann else p.name)
        return f"{cls.name}({', '.join(params)})"


class Registry:
    _tools: ClassVar[dict[str, type]] = {}
    _llms: ClassVar[dict[str, Callable[..., Any]]] = {}
    _agents: ClassVar[dict[str, type]] = {}
    _embedders: ClassVar[dict[str, Callable[..., Any]]] = {}
    _run_kinds: ClassVar[dict[str, Any]] = {}

    # -- registration ----------------------------------------------------------------

    @classmethod
    def register_tool(cls, name: str) -> Callable[[T], T]:
        def deco(tool_cls: T) -> T:
            tool_cls.name = name  # type: ignore[attr-defined]
            cls._tools[name] = tool_cls
            return tool_cls

        return deco

    @classmethod
    def register_llm(cls, name: str) -> Callable[[T], T]:
        def deco(factory: T) -> T:
            cls._llms[name] = factory
            return factory

        return deco

    @classmethod
    def register_agent(cls, name: str) -> Callable[[T], T]:
        def deco(agent_cls: T) -> T:
            cls._agents[name] = agent_cls
            return agent_cls

        return deco

    @classmethod
    def register_embedder(cls, name: str) -> Callable[[T], T]:
        def deco(factory: T) -> T:
            cls._embedders[name] = factory
            return factory

        return deco

    @classmethod
    def register_run_kind(cls, kind: Any) -> Any:
        """Register a `RunKind` (an instance, or a class to instantiate); returns it."""
        instance = kind() if isinstance(kind, type) else kind
        if not instance.name:
            raise RegistryError(f"{type(instance).__name__} has no name")
        cls._run_kinds[instance.name] = instance
        return kind

    # -- lookup ----------------------------------------------------------------------

    @classmethod
    def tool_class(cls, name: str, topic: str = "") -> type:
        """The class registered as `name`; `topic` ("module:Class") is imported first if the
        name is not known in this process (a Ray worker has not imported the user's module)."""
        load_workloads()
        if name not in cls._tools and topic:
            importlib.import_module(topic.split(":", 1)[0])
        return _lookup(cls._tools, "tool", name)

    @classmethod
    def topic_of(cls, name: str) -> str:
        tool_cls = cls.tool_class(name)
        return f"{tool_cls.__module__}:{tool_cls.__qualname__}"

    @classmethod
    def get_tool(cls, name: str, topic: str = "", *, placement: str = "", **config: Any) -> Any:
        """A new Ray actor running the tool (Ray must be initialised), placed by the
        `placement` rules (CHORUS_PLACEMENT) of role `tool`."""
        import ray  # lazily: the registry is imported by pure cores, which must not load Ray

        tool_cls = cls.tool_class(name, topic)
        # Restarted, and a call cut off by its death re-sent, as every run actor (actor_options).
        options = restartable(**ray_options(placement, f"tool:{name}"))
        return ray.remote(tool_cls).options(**options).remote(**config)

    @classmethod
    def get_llm(cls, name: str, **config: Any) -> Any:
        load_workloads()
        return _lookup(cls._llms, "llm", name)(**config)

    @classmethod
    def agent_class(cls, name: str) -> type:
        load_workloads()
        return _lookup(cls._agents, "agent", name)

    @classmethod
    def get_embedder(cls, name: str, **config: Any) -> Any:
        load_workloads()
        return _lookup(cls._embedders, "embedder", name)(**config)

    @classmethod
    def run_kind(cls, name: str) -> Any:
        """The `RunKind` whose runs carry `name` in `RunSubmitted.agent`."""
        load_workloads()
        return _lookup(cls._run_kinds, "run kind", name)

    @classmethod
    def run_kinds(cls) -> list[Any]:
        load_workloads()
        return list(cls._run_kinds.values())

    @classmethod
    def default_run_kind(cls) -> Any:
        """The kind a goal runs as when none is named (the one registered `default = True`)."""
        for kind in cls.run_kinds():
            if kind.default:
                return kind
        raise RegistryError("no run kind is registered as the default (is Chorus installed? pip install -e .)")

    @classmethod
    def names(cls) -> dict[str, list[str]]:
        load_workloads()
        return {
            "tools": sorted(cls._tools),
            "llms": sorted(cls._llms),
            "agents": sorted(cls._agents),
            "embedders": sorted(cls._embedders),
            "run_kinds": sorted(cls._run_kinds),
        }


def _lookup(table: dict[str, Any], kind: str, name: str) -> Any:
    try:
        return table[name]
    except KeyError:
        known = ", ".join(sorted(table)) or "none"
        raise RegistryError(f"no {kind} registered as {name!r} (known: {known})") from None


PLUGINS_GROUP = "chorus.plugins"
PLUGINS_ENV = "CHORUS_PLUGINS"
_loaded = False


def load_workloads() -> None:
    """Import every module registered under the `chorus.plugins` entry-point group, and the
    modules named in CHORUS_PLUGINS (comma-separated: a workload of one's own, with its
    event types and run kind, read and replayed with no packaging), once."""
    global _loaded
    if _loaded:
        return
    _loaded = True
    for entry in entry_points(group=PLUGINS_GROUP):
        entry.load()
    for name in filter(None, (n.strip() for n in os.environ.get(PLUGINS_ENV, "").split(","))):
        try:
            importlib.import_module(name)
        except ImportError as e:
            raise RegistryError(f"{PLUGINS_ENV} names {name!r}, which cannot be imported: {e}") from None
