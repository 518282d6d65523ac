"""The Registry (seed 000 §1.1, §2.1): a plain service locator for tools, LLMs, agents,
embedders and run kinds.

A third party adds a tool with the decorator and nothing else:

    @Registry.register_tool("word_count")
    class WordCount(Tool):
        description = "Count the words in a text."
        def execute(self, text: str) -> str:
            return str(len(text.split()))

or, as a plain function, with `@tool` (`actors.runtime.function_tool`, `from actors import tool`).

`Registry.get_tool(name)` creates the tool as a Ray actor; `Registry.tool_class(name)` gives
the class itself for in-process use (replay, unit tests). A tool is also found by its import
path, `package.module:name` (a `@tool` function or a Tool subclass), with no entry point: a
name registered in this process comes first (the task tools' `system:run_script` reads like a
path too), then the path is imported.

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
from actors.runtime.import_path import ImportPathError, import_object, is_import_path
from actors.runtime.placement import ray_options
from events.registry import on_unknown_type

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
        """The tool registered as `name`, or else the one at import path `name`
        ("module:function" or "module:Class"). `topic` (a ToolSpec's, the path of the
        implementation a run recorded) is imported when the name is unknown in this process
        (a Ray worker has not imported the user's module) or registered here to another
        implementation. RegistryError, one line, when there is no such tool."""
        load_workloads()
        known = cls._tools.get(name)
        if topic and (known is None or _path_of_tool(known) != topic):
            try:
                return tool_at(topic)
            except RegistryError:  # not importable as a tool: its module may register `name`
                if known is None:
                    try:
                        importlib.import_module(topic.split(":", 1)[0])
                    except ImportError:
                        pass
                known = cls._tools.get(name)
        if known is None and is_import_path(name):
            return tool_at(name)
        return _lookup(cls._tools, "tool", name)

    @classmethod
    def topic_of(cls, name: str) -> str:
        """The import path of the tool `name` (registered, or a path): what any process imports."""
        return _path_of_tool(cls.tool_class(name))

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
        """The `RunKind` whose runs carry `name` in `RunSubmitted.kind`."""
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


def tool_at(path: str) -> type:
    """The tool at import path `path`: a `@tool` function's class, or a Tool subclass.
    RegistryError (one line) when the path cannot be imported or names something else."""
    try:
        obj = import_object(path)
    except ImportPathError as e:
        raise RegistryError(f"no tool registered as {path!r}, and {e}") from None
    found = getattr(obj, "__chorus_tool__", None)  # set by @tool (actors.runtime.function_tool)
    if found is None and isinstance(obj, type) and issubclass(obj, Tool):
        found = obj
        if not found.name:
            found.name = obj.__name__
    if found is None:
        what = "a function" if callable(obj) else type(obj).__name__
        raise RegistryError(
            f"{path} is {what}, not a tool: decorate it with @tool (from actors import tool) or subclass Tool"
        )
    return found


def _path_of_tool(tool_cls: type) -> str:
    return getattr(tool_cls, "import_path", "") or f"{tool_cls.__module__}:{tool_cls.__qualname__}"


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


def _load_for_an_unknown_type() -> None:
    load_workloads()  # looked up when called: a test may stand in for it


# A log read before any lookup here (a fixture loaded from Python, a projection caught up, the
# HTTP client decoding what the server sent) names event types that a workload registers from
# its own folder: an unknown name loads the plugins, then is looked up again.
on_unknown_type(_load_for_an_unknown_type)
