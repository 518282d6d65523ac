"""`find_definition(name)`: the definition of a class, function, method, constant or attribute
under the root, with its lines numbered, its bases, its subclasses and where an inherited
attribute is set (the symbol index in `actors/tools/symbols.py` does the work).

The index is built from the files under the root on first use and rebuilt when a file changes
(a cheap signature of paths, sizes and modification times). Python files are parsed with `ast`;
other source files go through universal-ctags when it is installed (Debian's
`universal-ctags`), and are left out otherwise.
"""

from __future__ import annotations

import shutil
import subprocess
import threading
from pathlib import Path
from typing import Any

from actors.runtime.registry import Registry, Tool
from actors.tools.arguments import alias_arg
from actors.tools.paths import (
    ToolInputError,
    read_small,
    rel_path,
    resolve_root,
    walk_files,
)
from actors.tools.symbols import (
    Definition,
    SymbolIndex,
    ctags_definitions,
    python_definitions,
    render,
)

# Source files ctags reads (Python has its own parser).
CTAGS_SUFFIXES = frozenset(
    ".c .h .cc .cpp .hpp .cxx .java .js .jsx .ts .tsx .go .rs .rb .php .cs .kt .scala .swift .lua .sh".split()
)
CTAGS_TIMEOUT = 60.0

_cache: dict[str, tuple[tuple[Any, ...], SymbolIndex, dict[str, list[str]]]] = {}
_lock = threading.Lock()


def _signature(files: list[Path]) -> tuple[Any, ...]:
    out = []
    for f in files:
        try:
            st = f.lstat()
        except OSError:
            continue
        out.append((str(f), st.st_size, st.st_mtime_ns))
    return tuple(out)


def build_index(root: str | Path) -> tuple[SymbolIndex, dict[str, list[str]]]:
    """The symbol index of the files under root and their lines (cached per root)."""
    base = resolve_root(root)
    files = [p for p in walk_files(base) if p.suffix.lower() == ".py" or p.suffix.lower() in CTAGS_SUFFIXES]
    sig = _signature(files)
    with _lock:
        cached = _cache.get(str(base))
        if cached is not None and cached[0] == sig:
            return cached[1], cached[2]
    definitions: list[Definition] = []
    sources: dict[str, list[str]] = {}
    others: list[str] = []
    for path in files:
        data = read_small(base, path)
        if data is None:
            continue
        text = data.decode("utf-8", errors="replace")
        rel = rel_path(path, base)
        sources[rel] = text.splitlines()
        if path.suffix.lower() == ".py":
            definitions += python_definitions(rel, text)
        else:
            others.append(rel)
    if others:
        definitions += _ctags(base, others)
    index = SymbolIndex(definitions, package=base.name)
    with _lock:
        _cache[str(base)] = (sig, index, sources)
    return index, sources


def _ctags(base: Path, files: list[str]) -> list[Definition]:
    exe = shutil.which("ctags")
    if exe is None:
        return []
    try:
        proc = subprocess.run(
            [exe, "--output-format=json", "--fields=+nKeZS{inherits}", "-f", "-", "-L", "-"],
            input="\n".join(files), capture_output=True, text=True, cwd=base, timeout=CTAGS_TIMEOUT,
        )
    except (OSError, subprocess.TimeoutExpired):
        return []
    return ctags_definitions(proc.stdout.splitlines())


def find_definition(root: str | Path, name: str) -> str:
    if not str(name or "").strip():
        raise ToolInputError("find_definition needs a name, e.g. find_definition(name='Packer') or name='Packer.pack'")
    index, sources = build_index(root)
    matches = index.lookup(name)
    return render(index, matches, sources, str(name).strip())


_NAME_ALIASES = ("name", "symbol", "identifier", "query", "class_name", "function", "class", "definition", "q")


@Registry.register_tool("find_definition")
class FindDefinition(Tool):
    description = (
        "Show where a class, function, method, constant or attribute is defined, with its lines "
        "numbered, its base classes and subclasses; Class.attr also finds an attribute the class "
        "inherits from a base class."
    )

    def __init__(self, root: str, **config: Any) -> None:
        super().__init__(root=root, **config)
        self.root = str(resolve_root(root))

    def execute(self, name: str = "", **extra: Any) -> str:
        value = alias_arg(name, extra, _NAME_ALIASES)
        if isinstance(value, (list, tuple)):
            value = " ".join(str(v) for v in value)
        return find_definition(self.root, str(value or ""))

    @classmethod
    def signature(cls) -> str:
        return f"{cls.name}(name: str)"
