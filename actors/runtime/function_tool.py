"""Tools as plain functions: `@tool` (exported as `from actors import tool`).

    from actors import tool

    @tool
    def word_count(text: str) -> int:
        \"\"\"Count the words in a text.\"\"\"
        return len(text.split())

The function's name is the tool's name (`@tool(name="...")` to choose another), its
docstring's first paragraph the description the model reads, and its parameters' annotations
the JSON schema of its arguments (pydantic; `Annotated[str, Field(description=...)]` and
defaults work as in a pydantic model). The decorated function is returned unchanged, still
callable as a function, with the `Tool` subclass the Registry knows under its name attached
(`tool_of(function)`): `Registry.tool_class`, `get_tool` on Ray, the ReAct prompt's
`signature()` and `ToolSpec` see an ordinary tool.

Arguments from the model are validated against the schema (lax, so "3" reads as 3; an
argument the function does not take is refused); a mismatch raises `ToolArgumentsError`, a
ValueError whose one-line message the agent shows the model as a failed call.

What the run gives, never the model, is asked for by annotation and left out of the schema:

- `Workspace` (a `Path`): the run's folder (`--root`; a tool actor's `config["root"]`),
  resolved. `def grep(pattern: str, folder: Workspace) -> str`.
- `ToolContext` (`actors.runtime.tool_context`): the recorded LLM gateway and embedder, for a
  tool that calls a model itself (`uses_context`).

A tool is found by its import path (`package.module:function`) on any process, a Ray worker
included, with no entry point: `Registry.tool_class("examples.tools.word_count:word_count")`;
`chorus run --tools examples.tools.word_count:word_count`; `Client.submit(tools=[word_count])`.

The result becomes the observation text: a string as it is, a pydantic model, dict or list
as JSON, anything else by `str()`. `async def` tools are run to completion.
"""

from __future__ import annotations

import asyncio
import inspect
import json
import typing
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any, ClassVar, TypeVar, overload

from pydantic import BaseModel, ConfigDict, ValidationError, create_model

from actors.runtime.import_path import path_of
from actors.runtime.registry import Registry, Tool

F = TypeVar("F", bound=Callable[..., Any])

TOOL_ATTRIBUTE = "__chorus_tool__"  # the Tool subclass, on the decorated function


class _WorkspaceMarker:
    def __repr__(self) -> str:
        return "Workspace"


WORKSPACE = _WorkspaceMarker()
Workspace = Annotated[Path, WORKSPACE]
"""A parameter annotated `Workspace` receives the run's folder (a resolved `Path`); the model
never sees it."""


class ToolArgumentsError(ValueError):
    """The model's arguments do not fit the tool's signature; one line, shown to the model."""


class ToolDefinitionError(TypeError):
    """A function `@tool` cannot make a tool of (positional-only or `*args` parameters)."""


class FunctionTool(Tool):
    """The base of the tools `@tool` makes; one subclass per function."""

    function: ClassVar[Callable[..., Any]]
    arguments: ClassVar[type[BaseModel]]  # the parameters the model fills in
    workspace_params: ClassVar[tuple[str, ...]] = ()
    context_params: ClassVar[tuple[str, ...]] = ()
    import_path: ClassVar[str] = ""  # `module:function`: the ToolSpec's topic

    def execute(self, **kwargs: Any) -> str:
        values = self.validate(kwargs)
        for param in self.workspace_params:
            values[param] = self.workspace()
        for param in self.context_params:
            values[param] = self.config.get("context")
        result = type(self).function(**values)
        if inspect.isawaitable(result):
            result = asyncio.run(_awaited(result))
        return observation(result)

    @classmethod
    def validate(cls, args: dict[str, Any]) -> dict[str, Any]:
        """The arguments as the function takes them; ToolArgumentsError (one line) if they do
        not fit."""
        try:
            model = cls.arguments.model_validate(args)
        except ValidationError as e:
            raise ToolArgumentsError(f"{cls.name}: {_problems(e)}; call it as {cls.signature()}") from None
        return {field: getattr(model, field) for field in cls.arguments.model_fields}

    def workspace(self) -> Path:
        root = self.config.get("root")
        if not root:
            raise RuntimeError(f"tool {self.name} needs the run's folder, and was given none (config root)")
        return Path(root).expanduser().resolve()

    @classmethod
    def signature(cls) -> str:
        """`name(arg: type, arg: type = default)`, the parameters the model fills in."""
        params = []
        for field, info in cls.arguments.model_fields.items():
            text = f"{field}: {_type_text(info.annotation)}"
            if not info.is_required():
                text += f" = {info.get_default(call_default_factory=True)!r}"
            params.append(text)
        return f"{cls.name}({', '.join(params)})"

    @classmethod
    def parameters(cls) -> dict[str, Any]:
        """The JSON schema of the arguments (what a function-calling API takes)."""
        return cls.arguments.model_json_schema()


async def _awaited(result: Any) -> Any:
    return await result


@overload
def tool(function: F, /) -> F: ...
@overload
def tool(*, name: str | None = None, description: str | None = None) -> Callable[[F], F]: ...


def tool(function: Any = None, /, *, name: str | None = None, description: str | None = None) -> Any:
    """Make `function` a tool registered under its name (or `name`), described by its
    docstring's first paragraph (or `description`); returns the function unchanged."""

    def decorate(func: F) -> F:
        cls = make_tool_class(func, name=name, description=description)
        setattr(func, TOOL_ATTRIBUTE, cls)
        Registry.register_tool(cls.name)(cls)
        return func

    return decorate(function) if function is not None else decorate


def tool_of(obj: Any) -> type[Tool] | None:
    """The Tool class of a `@tool` function (or a Tool subclass itself); None otherwise."""
    if isinstance(obj, type) and issubclass(obj, Tool):
        return obj
    return getattr(obj, TOOL_ATTRIBUTE, None)


def tool_ref(obj: Any) -> str:
    """What a run records for a tool given as a registered name or import path (as it is), a
    `@tool` function or a Tool subclass (its import path, `module:name`). ValueError (one
    line) for a function defined where a Ray worker cannot import it (`__main__`, a local)."""
    if isinstance(obj, str):
        return obj
    if not callable(obj):
        raise ValueError(f"a tool is a name, an import path or a @tool function, not {obj!r}")
    return path_of(obj)


def make_tool_class(func: Callable[..., Any], *, name: str | None = None, description: str | None = None) -> type[FunctionTool]:
    if not callable(func) or isinstance(func, type):
        raise ToolDefinitionError(f"@tool takes a function, not {func!r}")
    tool_name = name or func.__name__
    if not tool_name.isidentifier():
        raise ToolDefinitionError(f"tool name {tool_name!r} must be an identifier (letters, digits, _)")
    hints = typing.get_type_hints(func, include_extras=True)
    fields: dict[str, Any] = {}
    workspace: list[str] = []
    context: list[str] = []
    for param in inspect.signature(func).parameters.values():
        if param.kind in (param.POSITIONAL_ONLY, param.VAR_POSITIONAL, param.VAR_KEYWORD):
            raise ToolDefinitionError(
                f"tool {tool_name}: parameter {param.name} must be a named one (no /, *args or **kwargs)"
            )
        hint = hints.get(param.name, Any)
        if _is_workspace(hint):
            workspace.append(param.name)
            continue
        if _is_context(hint):
            context.append(param.name)
            continue
        default = ... if param.default is param.empty else param.default
        fields[param.name] = (hint, default)
    arguments = create_model(  # type: ignore[call-overload]
        f"{tool_name}_arguments",
        __config__=ConfigDict(extra="forbid", arbitrary_types_allowed=True, coerce_numbers_to_str=True),
        **fields,
    )
    attrs = {
        "__module__": func.__module__,
        "__qualname__": f"{func.__qualname__}.{TOOL_ATTRIBUTE}",  # found by pickle on a worker
        "__doc__": func.__doc__,
        "name": tool_name,
        "description": description if description is not None else first_paragraph(func.__doc__),
        "uses_context": bool(context),
        "function": staticmethod(func),
        "arguments": arguments,
        "workspace_params": tuple(workspace),
        "context_params": tuple(context),
        "import_path": f"{func.__module__}:{func.__qualname__}",
    }
    return type(f"{tool_name}_tool", (FunctionTool,), attrs)


def first_paragraph(doc: str | None) -> str:
    text = inspect.cleandoc(doc or "")
    return " ".join(text.split("\n\n", 1)[0].split())


def observation(result: Any) -> str:
    if isinstance(result, str):
        return result
    if isinstance(result, BaseModel):
        return result.model_dump_json()
    if isinstance(result, (dict, list, tuple)):
        return json.dumps(result, ensure_ascii=False, default=str)
    return "" if result is None else str(result)


def _is_workspace(hint: Any) -> bool:
    return typing.get_origin(hint) is Annotated and any(m is WORKSPACE for m in hint.__metadata__)


def _is_context(hint: Any) -> bool:
    return (
        isinstance(hint, type)
        and hint.__name__ == "ToolContext"
        and hint.__module__ == "actors.runtime.tool_context"
    )


def _type_text(hint: Any) -> str:
    if typing.get_origin(hint) is Annotated:
        hint = typing.get_args(hint)[0]
    if isinstance(hint, type) and not typing.get_args(hint):
        return hint.__name__
    return str(hint).replace("typing.", "")


def _problems(e: ValidationError) -> str:
    """The validation errors in one line: `argument 'n': Input should be a valid integer`."""
    parts = []
    for err in e.errors(include_url=False):
        where = ".".join(str(p) for p in err["loc"]) or "arguments"
        if err["type"] == "extra_forbidden":
            parts.append(f"it takes no argument {where!r}")
        elif err["type"] == "missing":
            parts.append(f"argument {where!r} is missing")
        else:
            parts.append(f"argument {where!r}: {err['msg']}")
    return "; ".join(parts)


__all__ = [
    "FunctionTool",
    "ToolArgumentsError",
    "ToolDefinitionError",
    "Workspace",
    "first_paragraph",
    "make_tool_class",
    "observation",
    "tool",
    "tool_of",
    "tool_ref",
]
