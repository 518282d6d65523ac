"""The symbol index behind find_definition: definitions, bases, inherited class attributes,
nested classes, methods' overrides, and the tool's rendering, on a small synthetic package."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from actors.tools.definitions import FindDefinition, build_index, find_definition
from actors.tools.paths import ToolInputError
from actors.tools.symbols import (
    SymbolIndex,
    clean_name,
    ctags_definitions,
    python_definitions,
)

BASE = '''"""Base classes."""

LIMIT = 30
_private = "x"


class StoreError(Exception):
    """Anything the store raises."""


class Store:
    """A store of records."""

    page_size = 50
    name: str = "store"

    def __init__(self, path):
        self.path = path
        self.retries = 3

    def read(self, key):
        return self.path + key

    class Options:
        timeout = 2.5

        class Inner:
            depth = 7
'''

SQL = '''from pkg.base import Store, StoreError


class ConflictError(StoreError):
    pass


class SqlStore(Store):
    def read(self, key):
        raise ConflictError(f"no row for {key!r}")


class FastSqlStore(SqlStore):
    page_size = 500

    def flush(self):
        pass
'''


@pytest.fixture
def pkg(tmp_path: Path) -> Path:
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("")
    (tmp_path / "pkg" / "base.py").write_text(BASE)
    (tmp_path / "pkg" / "sql.py").write_text(SQL)
    (tmp_path / "pkg" / "broken.py").write_text("def nope(:\n")
    return tmp_path


def index_of(*files: tuple[str, str]) -> SymbolIndex:
    return SymbolIndex([d for path, text in files for d in python_definitions(path, text)])


def test_definitions_kinds_lines_and_bases() -> None:
    defs = {d.qualname: d for d in python_definitions("pkg/base.py", BASE)}
    assert defs["LIMIT"].kind == "constant" and defs["LIMIT"].line == 3
    assert defs["_private"].kind == "variable"
    assert defs["StoreError"].kind == "class" and defs["StoreError"].bases == ("Exception",)
    store = defs["Store"]
    assert (store.kind, store.line, store.end_line) == ("class", 11, 28)
    assert defs["Store.page_size"].kind == "attribute" and defs["Store.page_size"].line == 14
    assert defs["Store.name"].line == 15  # an annotated assignment
    assert defs["Store.read"].kind == "method" and defs["Store.read"].parent == "Store"
    # self.x = ... in a method is an attribute of the class
    assert defs["Store.retries"].kind == "attribute" and defs["Store.retries"].line == 19
    # nested classes
    assert defs["Store.Options"].parent == "Store"
    assert defs["Store.Options.Inner.depth"].line == 28


def test_a_file_that_does_not_parse_gives_nothing() -> None:
    assert python_definitions("x.py", "def nope(:\n") == []


def test_lookup_by_simple_dotted_and_module_qualified_names() -> None:
    index = index_of(("pkg/base.py", BASE), ("pkg/sql.py", SQL))
    assert [m.definition.path for m in index.lookup("SqlStore")] == ["pkg/sql.py"]
    assert index.lookup("Store.Options.Inner")[0].definition.line == 27
    assert index.lookup("pkg.sql.SqlStore")[0].definition.qualname == "SqlStore"
    assert index.lookup("pkg.base.SqlStore") == []  # the module part must match the path
    assert index.lookup("`SqlStore.read()`")[0].definition.path == "pkg/sql.py"
    assert index.lookup("sqlstore")[0].definition.name == "SqlStore"  # another case, as a fallback
    assert index.lookup("") == [] and index.lookup("NoSuchThing") == []


def test_an_inherited_class_attribute_resolves_through_the_bases() -> None:
    index = index_of(("pkg/base.py", BASE), ("pkg/sql.py", SQL))
    own = index.lookup("FastSqlStore.page_size")
    assert own[0].definition.line == 14 and own[0].definition.path == "pkg/sql.py" and own[0].via == ()
    inherited = index.lookup("SqlStore.page_size")
    assert len(inherited) == 1
    m = inherited[0]
    assert (m.definition.path, m.definition.line) == ("pkg/base.py", 14)
    assert m.via == ("SqlStore", "Store")
    two_up = index.lookup("FastSqlStore.retries")[0]
    assert two_up.via == ("FastSqlStore", "SqlStore", "Store") and two_up.definition.line == 19


def test_subclasses_and_overrides() -> None:
    index = index_of(("pkg/base.py", BASE), ("pkg/sql.py", SQL))
    store = index.lookup("Store")[0].definition
    assert [d.qualname for d in index.subclasses(store)] == ["SqlStore"]
    read = index.lookup("Store.read")[0].definition
    assert [(d.qualname, d.path) for d in index.overrides(read)] == [("SqlStore.read", "pkg/sql.py")]


def test_clean_name_reads_what_models_write() -> None:
    assert clean_name("Packer()") == "Packer"
    assert clean_name("`msgpack.Packer`") == "msgpack.Packer"
    assert clean_name("fallback.py:Packer") == "Packer"
    assert clean_name("pkg/sql.py::SqlStore.read") == "SqlStore.read"
    assert clean_name("class Store") == "Store"


def test_the_tool_shows_the_definition_numbered_as_read_file_numbers_it(pkg: Path) -> None:
    out = find_definition(pkg, "SqlStore.page_size")
    assert out.startswith("SqlStore does not set page_size itself; it inherits it: SqlStore -> Store.")
    assert "pkg/base.py, lines 14-14 of 28:" in out and "14:     page_size = 50" in out
    cls = find_definition(pkg, "Store")
    assert "class Store is defined in pkg/base.py line 11." in cls
    assert "Subclasses: SqlStore (pkg/sql.py:8)." in cls
    # a class is shown as an outline: its members' first lines, not its docstring
    assert "14:     page_size = 50" in cls and "19:         self.retries = 3" in cls
    assert "A store of records" not in cls
    error = find_definition(pkg, "ConflictError")
    assert "class ConflictError(StoreError)" in error
    method = find_definition(pkg, "SqlStore.read")
    assert 'raise ConflictError(f"no row for {key!r}")' in method
    # a method's overrides are listed, and their first lines shown under it, headed by their owner
    base_read = find_definition(pkg, "Store.read")
    assert "Overridden in: SqlStore.read (pkg/sql.py:9)." in base_read
    assert "pkg/sql.py, lines 9-10 of 17 (override SqlStore.read):" in base_read
    assert base_read.index("return self.path + key") < base_read.index('raise ConflictError(f"no row for {key!r}")')


def test_unknown_names_suggest_close_ones_and_empty_names_are_refused(pkg: Path) -> None:
    out = find_definition(pkg, "SqlStor")
    assert out.startswith("No definition named 'SqlStor'") and "SqlStore" in out
    with pytest.raises(ToolInputError):
        find_definition(pkg, "  ")
    assert "class SqlStore" in FindDefinition(root=str(pkg)).execute(symbol="SqlStore")  # an alias name


def test_the_index_is_rebuilt_when_a_file_changes(pkg: Path) -> None:
    first, _ = build_index(pkg)
    assert build_index(pkg)[0] is first  # cached
    (pkg / "pkg" / "sql.py").write_text(SQL + "\n\nclass Later:\n    pass\n")
    again, _ = build_index(pkg)
    assert again is not first and again.lookup("Later")


def test_ctags_json_lines_become_definitions() -> None:
    lines = [
        '{"_type": "tag", "name": "Shape", "path": "src/shape.ts", "language": "TypeScript", "line": 3, "end": 20, "kind": "class", "inherits": "Base"}',
        '{"_type": "tag", "name": "area", "path": "src/shape.ts", "language": "TypeScript", "line": 5, "kind": "method", "scope": "Shape", "scopeKind": "class"}',
        '{"_type": "ptag", "name": "JSON_OUTPUT_VERSION"}',
        "not json",
    ]
    defs = ctags_definitions(lines)
    assert [(d.qualname, d.kind, d.bases) for d in defs] == [("Shape", "class", ("Base",)), ("Shape.area", "method", ())]


@pytest.mark.skipif(shutil.which("ctags") is None, reason="universal-ctags is not installed")
def test_other_languages_come_from_ctags(tmp_path: Path) -> None:
    (tmp_path / "shape.js").write_text("class Shape {\n  area() {\n    return 0;\n  }\n}\n\nfunction makeShape() {\n  return new Shape();\n}\n")
    out = find_definition(tmp_path, "makeShape")
    assert "makeShape is defined in shape.js line 7." in out and "7: function makeShape() {" in out


def test_a_variable_local_to_a_function_is_found_where_it_is_assigned(tmp_path: Path) -> None:
    (tmp_path / "poll.py").write_text(
        "def wait(timeout):\n    interval_ms = 100.0\n    max_interval_ms = 800.0\n    while True:\n"
        "        interval_ms = min(interval_ms * 2, max_interval_ms)\n"
    )
    out = find_definition(tmp_path, "max_interval_ms")
    assert out.startswith("max_interval_ms is not a class, function, method or module-level name; it is assigned in 1 place(s):")
    assert "max_interval_ms in wait (poll.py line 3):" in out and "3:     max_interval_ms = 800.0" in out
    both = find_definition(tmp_path, "interval_ms")
    assert "assigned in 2 place(s)" in both and "5:         interval_ms = min(" in both
    assert find_definition(tmp_path, "nowhere_at_all").startswith("No definition named")


def test_a_class_outline_shows_its_whole_constructor_signature(tmp_path: Path) -> None:
    """A class's defaults are its constructor's parameters: a signature spread over more lines
    than an outline shows is shown whole; the body of the constructor is not."""
    params = "".join(f"        option_{i}: int = {1000 + i},\n" for i in range(45))
    (tmp_path / "big.py").write_text(
        "class Big:\n"
        "    def __init__(\n"
        "        self,\n"
        f"{params}"
        "        label: str = 'x)(:',  # brackets in a string\n"
        "    ) -> None:\n"
        "        print('a body line')\n"
        "        self.size = 3\n"
        + "".join(f"    def m{i}(self):\n        pass\n" for i in range(5))
    )
    out = find_definition(tmp_path, "Big")
    assert "option_44: int = 1044," in out and "label: str = 'x)(:'," in out and ") -> None:" in out
    assert "a body line" not in out  # the constructor's body stays out of the outline
    assert "self.size = 3" in out  # but the attributes it sets are members, as before
    assert "def m4(self):" in out  # the members after it are still listed


def test_a_module_path_may_start_with_the_root_package_and_name_a_package_or_a_private_module() -> None:
    """`dateutil.easter.easter`, `dateutil.tz.tzrange`, `dateutil.parser.parse`: the way a user
    names a definition is its import path, which starts with the package the root folder is,
    goes through a package that re-exports it, or skips the private module defining it."""
    files = [
        ("easter.py", "def easter(year, method=3):\n    return year\n"),
        ("tz/__init__.py", "from .tz import tzrange\n"),
        ("tz/tz.py", "class tzrange(object):\n    pass\n"),
        ("parser/__init__.py", "from ._parser import parse, parser\n"),
        ("parser/_parser.py", "class parser(object):\n    def parse(self, s):\n        return s\n\n\ndef parse(s):\n    return parser().parse(s)\n"),
    ]
    index = SymbolIndex([d for path, text in files for d in python_definitions(path, text)], package="dateutil")

    def first(name: str) -> tuple[str, str, int]:
        d = index.lookup(name)[0].definition
        return d.qualname, d.path, d.line

    assert first("dateutil.easter.easter") == ("easter", "easter.py", 1)
    assert first("easter.easter") == ("easter", "easter.py", 1)
    assert first("dateutil.tz.tzrange") == ("tzrange", "tz/tz.py", 1)
    assert first("tz.tzrange") == ("tzrange", "tz/tz.py", 1)
    assert first("dateutil.parser.parse") == ("parse", "parser/_parser.py", 6)  # the module's function
    assert first("parser.parse") == ("parser.parse", "parser/_parser.py", 2)  # the class's own method first
    # another package's name is not the root's: nothing is found through it
    assert index.lookup("othertool.easter.easter") == []
    assert SymbolIndex(index.definitions).lookup("dateutil.easter.easter") == []  # no package name given
