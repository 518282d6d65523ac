"""Finding a user's function or class by its import path, `package.module:name` (or
`package.module.name`), so a tool or an agent of one's own runs with no packaging and no
entry point: a Ray worker imports the same path the driver recorded."""

from __future__ import annotations

import importlib
import re
import sys
from pathlib import Path
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
    """The import path of a module-level function or class: `module:qualname` (for one in a
    script run as `__main__`, the name its script is importable by). ValueError for one
    defined inside a function or in an interactive session (a Ray worker could not import it)."""
    module, qualname = getattr(obj, "__module__", None), getattr(obj, "__qualname__", None)
    if not module or not qualname or "<locals>" in qualname:
        raise ValueError(f"{obj!r} is not defined at a module's top level: a Ray worker could not import it")
    if module == "__main__":
        module = _main_module_name()
    return f"{module}:{qualname}"


def _main_module_name() -> str:
    """The name `__main__` is importable by elsewhere: its own under `python -m pkg.mod`;
    for `python path/to/script.py`, the script's file name (its folder is sys.path[0] here,
    and Ray puts the driver script's folder on its workers' path too). The script must then
    keep its driver code under `if __name__ == "__main__":`, as an importer runs the rest."""
    main = sys.modules.get("__main__")
    spec = getattr(main, "__spec__", None)
    if spec is not None and spec.name and spec.name != "__main__":
        return spec.name
    file = getattr(main, "__file__", None)
    if file and file.endswith(".py") and sys.path and Path(sys.path[0] or ".").resolve() == Path(file).resolve().parent:
        return Path(file).stem
    raise ValueError("defined in an interactive session: put it in a module so a Ray worker can import it")
