"""Finding a user's function or class by its import path, `package.module:name` (or
`package.module.name`), so a tool or an agent of one's own runs with no packaging and no
entry point: a Ray worker imports the same path the driver recorded."""

from __future__ import annotations

import importlib
import re
from typing import Any

IMPORT_PATH = re.compile(r"^[A-Za-z_][\w]*(\.[A-Za-z_][\w]*)*(:[A-Za-z_][\w]*(\.[A-Za-z_][\w]*)*)?$")


class ImportPathError(LookupError):
    """An import path that does not name an importable object; the message is one line
    naming the path and what to install or fix."""


def is_import_path(text: str) -> bool:
    """Whether `text` reads as `module:name`. A registered name may read so too (the task
    tools' `system:run_script`): callers look a name up in the Registry first."""
    return ":" in text and bool(IMPORT_PATH.match(text))


def import_object(path: str) -> Any:
    """The object `path` names: `module:attr.attr` or `module.attr`. ImportPathError (one
    line) when the module cannot be imported or has no such name."""
    if not IMPORT_PATH.match(path or ""):
        raise ImportPathError(f"{path!r} is not an import path (expected package.module:name)")
    module_name, _, attrs = path.partition(":")
    if not attrs:
        module_name, _, attrs = path.rpartition(".")
        if not module_name:
            raise ImportPathError(f"{path!r} is not an import path (expected package.module:name)")
    try:
        obj: Any = importlib.import_module(module_name)
    except ImportError as e:
        raise ImportPathError(
            f"cannot import {module_name!r} for {path!r}: {e} (is it installed, or on PYTHONPATH?)"
        ) from None
    for attr in attrs.split("."):
        try:
            obj = getattr(obj, attr)
        except AttributeError:
            raise ImportPathError(f"module {module_name!r} has no {attrs!r} (from {path!r})") from None
    return obj


def path_of(obj: Any) -> str:
    """The import path of a module-level function or class: `module:qualname`. ValueError for
    one defined inside a function or in `__main__` (a Ray worker could not import it)."""
    module, qualname = getattr(obj, "__module__", None), getattr(obj, "__qualname__", None)
    if not module or not qualname or "<locals>" in qualname:
        raise ValueError(f"{obj!r} is not defined at a module's top level: a Ray worker could not import it")
    if module == "__main__":
        raise ValueError(f"{qualname} is defined in __main__: put it in a module so a Ray worker can import it")
    return f"{module}:{qualname}"
