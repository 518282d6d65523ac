"""A symbol index of a repository: where each class, function, method, constant and attribute
is defined, with its bases, so `find_definition(name)` can show a definition instead of a
search snippet's neighbourhood (pure: source texts in, definitions and rendered text out).

- Python is read with `ast`: classes (nested ones as `Outer.Inner`), their bases, methods,
  class attributes, `self.x = ...` assignments in methods, module functions, constants and
  variables.
- Other languages come from universal-ctags' JSON output (`ctags_definitions` reads it; the
  tool runs ctags), when ctags is installed.
- `SymbolIndex.lookup("Class.attr")` resolves an attribute a class does not set itself through
  its bases (a class attribute set on the parent), and says so.
"""

from __future__ import annotations

import ast
import difflib
import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

MAX_BODY_LINES = 40  # lines of a definition shown at most (then how to read on)
MAX_MATCHES = 3
MAX_SUBCLASSES = 8


@dataclass(frozen=True)
class Definition:
    name: str
    qualname: str  # Outer.Inner.method; a module-level name is its own qualname
    kind: str  # class | function | method | attribute | constant | variable (ctags: its kind)
    path: str
    line: int
    end_line: int
    bases: tuple[str, ...] = ()  # a class's bases as written
    parent: str = ""  # the enclosing class or function's qualname
    language: str = "python"

    @property
    def owner(self) -> str:
        """The class an attribute or method belongs to ('' at module level)."""
        return self.parent


@dataclass(frozen=True)
class Match:
    definition: Definition
    asked: str  # the name as asked
    via: tuple[str, ...] = ()  # for an inherited attribute: the class asked about, then each base up to the one that sets it


# -- Python ------------------------------------------------------------------------------------


def python_definitions(path: str, source: str) -> list[Definition]:
    """Every definition in one Python file; a file that does not parse gives none."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return []
    out: list[Definition] = []
    _walk_body(tree.body, path, "", "", out)
    return out


def _walk_body(body: Sequence[ast.stmt], path: str, scope: str, scope_kind: str, out: list[Definition]) -> None:
    for node in body:
        if isinstance(node, ast.ClassDef):
            qual = f"{scope}.{node.name}" if scope else node.name
            bases = tuple(ast.unparse(b) for b in node.bases)
            out.append(Definition(node.name, qual, "class", path, _first_line(node), _end(node), bases, scope))
            _walk_body(node.body, path, qual, "class", out)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            qual = f"{scope}.{node.name}" if scope else node.name
            kind = "method" if scope_kind == "class" else "function"
            out.append(Definition(node.name, qual, kind, path, _first_line(node), _end(node), (), scope))
            if scope_kind == "class":
                _self_attributes(node, path, scope, out)
            _walk_body(node.body, path, qual, "function", out)
        elif isinstance(node, (ast.Assign, ast.AnnAssign)) and scope_kind != "function":
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                for name in _names(target):
                    qual = f"{scope}.{name}" if scope else name
                    if scope_kind == "class":
                        kind = "attribute"
                    else:
                        kind = "constant" if name.isupper() or re.fullmatch(r"_?[A-Z][A-Z0-9_]*", name) else "variable"
                    out.append(Definition(name, qual, kind, path, node.lineno, _end(node), (), scope))
        elif isinstance(node, (ast.If, ast.Try, ast.With)) and scope_kind != "function":
            # definitions under `if TYPE_CHECKING:`, `try: import ...` and the like
            for block in _blocks(node):
                _walk_body(block, path, scope, scope_kind, out)


def _self_attributes(func: ast.FunctionDef | ast.AsyncFunctionDef, path: str, cls: str, out: list[Definition]) -> None:
    """`self.x = ...` in a method: an attribute of the class (the first assignment of each)."""
    if not func.args.args:
        return
    me = func.args.args[0].arg
    seen = {d.name for d in out if d.parent == cls and d.kind == "attribute"}
    for node in ast.walk(func):
        if isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for t in targets:
                if isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name) and t.value.id == me and t.attr not in seen:
                    seen.add(t.attr)
                    out.append(Definition(t.attr, f"{cls}.{t.attr}", "attribute", path, node.lineno, _end(node), (), cls))


def _names(target: ast.expr) -> list[str]:
    if isinstance(target, ast.Name):
        return [target.id]
    if isinstance(target, (ast.Tuple, ast.List)):
        return [n for elt in target.elts for n in _names(elt)]
    return []


def _blocks(node: ast.If | ast.Try | ast.With) -> list[list[ast.stmt]]:
    if isinstance(node, ast.If):
        return [node.body, node.orelse]
    if isinstance(node, ast.Try):
        return [node.body, node.orelse, node.finalbody, *[h.body for h in node.handlers]]
    return [node.body]


def _first_line(node: ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef) -> int:
    """The `def`/`class` line itself (decorators come before it)."""
    return node.lineno


def _end(node: ast.AST) -> int:
    return int(getattr(node, "end_lineno", None) or getattr(node, "lineno", 1))


# -- other languages, from universal-ctags ------------------------------------------------------

_CTAGS_KINDS = {
    "class": "class", "struct": "class", "interface": "class", "trait": "class", "enum": "class",
    "function": "function", "func": "function", "method": "method", "member": "attribute",
    "field": "attribute", "property": "attribute", "constant": "constant", "macro": "constant",
    "variable": "variable", "var": "variable", "const": "constant", "type": "class", "typedef": "class",
}


def ctags_definitions(lines: Iterable[str]) -> list[Definition]:
    """Definitions from `ctags --output-format=json --fields=+nKeZS` lines (others are skipped)."""
    out: list[Definition] = []
    for raw in lines:
        try:
            tag = json.loads(raw)
        except ValueError:
            continue
        if not isinstance(tag, dict) or tag.get("_type") != "tag" or "line" not in tag:
            continue
        kind = _CTAGS_KINDS.get(str(tag.get("kind", "")).lower())
        if kind is None:
            continue
        scope = str(tag.get("scope", ""))
        scope = scope.replace("::", ".")
        name = str(tag["name"])
        if kind == "function" and scope and str(tag.get("scopeKind", "")) in ("class", "struct", "interface", "trait"):
            kind = "method"
        bases = tuple(b.strip() for b in str(tag.get("inherits", "")).split(",") if b.strip())
        line = int(tag["line"])
        out.append(Definition(
            name, f"{scope}.{name}" if scope else name, kind, str(tag.get("path", "")), line,
            int(tag.get("end", line)), bases, scope, str(tag.get("language", "")).lower(),
        ))
    return out


# -- the index ---------------------------------------------------------------------------------


@dataclass
class SymbolIndex:
    definitions: list[Definition] = field(default_factory=list)
    package: str = ""  # the root folder's name, which a dotted name may start with (`dateutil.easter.easter`)

    def __post_init__(self) -> None:
        self._by_name: dict[str, list[Definition]] = {}
        self._subclasses: dict[str, list[Definition]] = {}
        for d in self.definitions:
            self._by_name.setdefault(d.name, []).append(d)
            if d.kind == "class":
                for base in d.bases:
                    self._subclasses.setdefault(_last(base), []).append(d)

    def lookup(self, asked: str) -> list[Match]:
        """Definitions a name refers to: `Class`, `Class.method`, `module.Class.attr`, `CONSTANT`,
        `path/to/file.py:Name`. An attribute a class does not set comes from its bases."""
        name = clean_name(asked)
        if not name:
            return []
        parts = name.split(".")
        found = self._qualified(parts)
        if not found and len(parts) >= 2:
            found = self._inherited(parts[:-1], parts[-1], asked)
            if found:
                return found[:MAX_MATCHES]
        if not found:  # a different case ("packer" for "Packer")
            lowered = [p.lower() for p in parts]
            found = [
                d for d in self.definitions
                if _suffix_matches([q.lower() for q in d.qualname.split(".")], d.path, lowered, self.package)
            ]
        # a definition whose own qualified name is all of the name asked first (parser.parse, the
        # method of class parser, before the function parse of module parser/_parser.py)
        found.sort(key=lambda d: (len(d.qualname.split(".")) != len(parts), *_rank(d)))
        return [Match(d, asked) for d in found[:MAX_MATCHES]]

    def _qualified(self, parts: list[str]) -> list[Definition]:
        return [d for d in self._by_name.get(parts[-1], []) if _suffix_matches(d.qualname.split("."), d.path, parts, self.package)]

    def _inherited(self, owner: list[str], attr: str, asked: str) -> list[Match]:
        out: list[Match] = []
        for cls in (d for d in self._qualified(owner) if d.kind == "class"):
            hit = self._through_bases(cls, attr, (cls.qualname,), set())
            if hit is not None:
                out.append(Match(hit[0], asked, hit[1]))
        return out

    def _through_bases(self, cls: Definition, attr: str, via: tuple[str, ...], seen: set[str]) -> tuple[Definition, tuple[str, ...]] | None:
        if cls.qualname in seen or len(via) > 12:
            return None
        seen.add(cls.qualname)
        for base in cls.bases:
            for parent in self.classes(_last(base)):
                own = [d for d in self._by_name.get(attr, []) if d.parent == parent.qualname and d.path == parent.path]
                if own:
                    return own[0], (*via, parent.qualname)
                deeper = self._through_bases(parent, attr, (*via, parent.qualname), seen)
                if deeper is not None:
                    return deeper
        return None

    def classes(self, name: str) -> list[Definition]:
        return [d for d in self._by_name.get(name, []) if d.kind == "class"]

    def subclasses(self, cls: Definition) -> list[Definition]:
        return sorted((d for d in self._subclasses.get(cls.name, []) if d is not cls), key=_rank)

    def members(self, cls: Definition) -> list[Definition]:
        return [d for d in self.definitions if d.parent == cls.qualname and d.path == cls.path]

    def overrides(self, method: Definition) -> list[Definition]:
        """Methods of the same name in subclasses of the method's class."""
        if method.kind != "method":
            return []
        out = []
        for owner in (d for d in self.classes(_last(method.parent)) if d.path == method.path):
            for sub in self._all_subclasses(owner, set()):
                out += [d for d in self._by_name.get(method.name, []) if d.parent == sub.qualname and d.path == sub.path]
        return out

    def _all_subclasses(self, cls: Definition, seen: set[str]) -> list[Definition]:
        out = []
        for sub in self.subclasses(cls):
            if sub.qualname + sub.path not in seen:
                seen.add(sub.qualname + sub.path)
                out += [sub, *self._all_subclasses(sub, seen)]
        return out

    def close_names(self, asked: str, n: int = 6) -> list[str]:
        names = sorted({d.qualname for d in self.definitions if d.kind in ("class", "function", "method", "constant")})
        last = clean_name(asked).split(".")[-1]
        simple = difflib.get_close_matches(last, sorted(self._by_name), n=n, cutoff=0.6)
        dotted = difflib.get_close_matches(clean_name(asked), names, n=n, cutoff=0.6)
        return list(dict.fromkeys(dotted + simple))[:n]


def clean_name(asked: str) -> str:
    """`Packer()`, `` `msgpack.Packer` ``, `fallback.py:Packer`, `a/b.py::C.m` → a dotted name."""
    text = str(asked).strip().strip("`'\" ")
    text = re.sub(r"\(.*\)$", "", text).strip()
    text = re.sub(r"^.*\.(?:py|pyi)(?:::|:)", "", text)  # a path before the name
    text = text.replace("::", ".").replace("#", ".").replace("/", ".")
    text = re.sub(r"^(?:class|def|function|method|constant|attribute)\s+", "", text)
    return ".".join(p for p in text.split(".") if p and re.fullmatch(r"[A-Za-z_$][\w$]*", p))


def _last(dotted: str) -> str:
    return re.sub(r"\[.*$", "", dotted).split(".")[-1].strip()


def _suffix_matches(qual: list[str], path: str, parts: list[str], package: str = "") -> bool:
    """Whether `parts` names the definition: its qualname's tail, with any leading parts the
    module path (`pkg.module.Class` for pkg/module.py's Class). The module path may also be
    named from its package (`tz.tzrange` for tz/tz.py's class, as the package re-exports it),
    skip a private module (`parser.parse` for parser/_parser.py's function), and start with the
    root package's own name, `package`, which paths under the root do not carry."""
    n = min(len(qual), len(parts))
    if qual[-n:] != parts[-n:]:
        return False
    rest = parts[: len(parts) - n]
    if not rest:
        return True
    if len(qual) > len(parts):
        return False
    module = [p for p in re.sub(r"\.\w+$", "", path).replace("\\", "/").split("/") if p]
    if module and module[-1] == "__init__":
        module = module[:-1]
    module_l = [m.lower() for m in module]
    public = [m for m in module_l if not m.startswith("_")]
    rest_l = [r.lower() for r in rest]
    wants = [rest_l]
    if package and rest_l[0] == package.lower():
        wants.append(rest_l[1:])
    for want in wants:
        if not want:  # `pkg.Name`: anywhere in the package
            return True
        if module_l[-len(want):] == want or public[-len(want):] == want or module_l[: len(want)] == want:
            return True
    return False


_KIND_ORDER = {"class": 0, "function": 1, "method": 2, "constant": 3, "attribute": 4, "variable": 5}


def _rank(d: Definition) -> tuple[int, int, str, int]:
    tests = 1 if re.search(r"(^|/)(tests?|testing)(/|$)|(^|/)test_[^/]*$", d.path) else 0
    return (tests, _KIND_ORDER.get(d.kind, 6), d.path, d.line)


# -- rendering (what the tool prints) ----------------------------------------------------------


def render(index: SymbolIndex, matches: Sequence[Match], sources: Mapping[str, Sequence[str]], asked: str) -> str:
    """The definitions as the tool shows them: for each, a line saying what and where, then its
    lines numbered as read_file numbers them (`path, lines A-B of N:` and `  n: text`)."""
    if not matches:
        local = local_assignments(index, sources, asked)
        if local:
            return local
        close = index.close_names(asked)
        hint = f" Close names: {', '.join(close)}." if close else ""
        return (
            f"No definition named '{asked}' in the index ({len(index.definitions)} definitions).{hint} "
            "Try search_files with a word from the question."
        )
    out: list[str] = []
    for m in matches:
        out += _render_one(index, m, sources.get(m.definition.path, ()))
        out += _overrides_shown(index, m.definition, sources)
        out.append("")
    return "\n".join(out).rstrip()


def _render_one(index: SymbolIndex, m: Match, lines: Sequence[str]) -> list[str]:
    d = m.definition
    what = f"{d.kind} {d.qualname}"
    if d.kind == "class" and d.bases:
        what += f"({', '.join(d.bases)})"
    head = [f"{what} is defined in {d.path} line {d.line}" + (f" (in {d.parent})" if d.parent else "") + "."]
    if m.via:
        chain = " -> ".join(m.via)
        head = [
            f"{m.via[0]} does not set {d.name} itself; it inherits it: {chain}. "
            f"{d.qualname} is defined in {d.path} line {d.line}."
        ]
    if d.kind == "class":
        subs = index.subclasses(d)
        if subs:
            shown = ", ".join(f"{s.qualname} ({s.path}:{s.line})" for s in subs[:MAX_SUBCLASSES])
            more = f" and {len(subs) - MAX_SUBCLASSES} more" if len(subs) > MAX_SUBCLASSES else ""
            head.append(f"Subclasses: {shown}{more}.")
    overrides = index.overrides(d)
    if overrides:
        head.append("Overridden in: " + ", ".join(f"{o.qualname} ({o.path}:{o.line})" for o in overrides[:MAX_SUBCLASSES]) + ".")
    if not lines:
        return head
    if d.kind == "class":
        return head + _outline(index, d, lines)
    start = d.line
    end = min(d.end_line, len(lines), start + MAX_BODY_LINES - 1)
    body = [f"{d.path}, lines {start}-{end} of {len(lines)}:"]
    body += _numbered(lines, range(start, end + 1))
    if end < d.end_line:
        body.append(f"(the definition goes on to line {d.end_line}; read_file(path='{d.path}', start_line={end + 1}) for more)")
    return head + body


MAX_SIGNATURE_LINES = 60  # of a constructor's signature, shown whole in its class's outline


def _signature_end(lines: Sequence[str], start: int, end: int) -> int:
    """The last line of the `def` signature that starts at `start` (its line ending in ':'
    outside brackets), at most `end`."""
    depth = 0
    for n in range(start, min(end, len(lines)) + 1):
        text = lines[n - 1].split("#", 1)[0]
        depth += sum(text.count(c) for c in "([{") - sum(text.count(c) for c in ")]}")
        if depth <= 0 and text.rstrip().endswith(":"):
            return n
    return start


def _outline(index: SymbolIndex, d: Definition, lines: Sequence[str]) -> list[str]:
    """A class as its header line(s) and the first line of each member: attributes (the whole
    assignment, up to 3 lines), methods and nested classes, in line order; no docstring.
    The constructor's signature is shown whole: its parameters' defaults are what a class's
    defaults are (a class with many parameters spreads them over dozens of lines)."""
    members = sorted(index.members(d), key=lambda m: m.line)
    header_end = d.line
    while header_end < min(d.end_line, len(lines)) and not lines[header_end - 1].rstrip().endswith(":"):
        header_end += 1
    numbers: list[int] = list(range(d.line, header_end + 1))
    signature: list[int] = []
    for m in members:
        if m.kind == "attribute":
            last = min(m.end_line, m.line + 2)
        elif m.name == "__init__" and m.kind in ("method", "function"):
            last = _signature_end(lines, m.line, min(m.end_line, m.line + MAX_SIGNATURE_LINES - 1))
            signature = list(range(m.line, last + 1))
        else:
            last = m.line
        numbers += [n for n in range(m.line, last + 1) if n not in numbers]
    numbers = sorted(n for n in set(numbers) if 1 <= n <= len(lines))
    # The cap counts the constructor's signature as one line: it is shown whole.
    shown = numbers[: MAX_BODY_LINES + max(0, len(signature) - 1)]
    body = [f"{d.path}, outline of class {d.qualname}, lines {d.line}-{d.end_line} of {len(lines)} (members' first lines):"]
    body += _numbered(lines, shown)
    if len(numbers) > len(shown):
        body.append(f"({len(numbers) - len(shown)} more member lines; find_definition('{d.qualname}.NAME') or read_file for them)")
    return body


MAX_OVERRIDES_SHOWN = 3  # a method's overrides whose first lines are shown under it
OVERRIDE_LINES = 8


def _overrides_shown(index: SymbolIndex, d: Definition, sources: Mapping[str, Sequence[str]]) -> list[str]:
    """The first lines of a method's overrides (at most `MAX_OVERRIDES_SHOWN`), each under a
    header `path, lines A-B of N (override Class.method):`, so a question about which subclass
    overrides it, and how, can be answered from one lookup."""
    out: list[str] = []
    for o in index.overrides(d)[:MAX_OVERRIDES_SHOWN]:
        lines = sources.get(o.path, ())
        if not lines or o.line > len(lines):
            continue
        end = min(o.end_line, len(lines), o.line + OVERRIDE_LINES - 1)
        out.append(f"{o.path}, lines {o.line}-{end} of {len(lines)} (override {o.qualname}):")
        out += _numbered(lines, range(o.line, end + 1))
    if out:
        out.append("")
    return out


def _numbered(lines: Sequence[str], numbers: Iterable[int]) -> list[str]:
    numbers = list(numbers)
    width = len(str(max(numbers))) if numbers else 1
    return [f"{n:>{width}}: {lines[n - 1].rstrip()[:200]}" for n in numbers]


MAX_LOCAL = 5


def local_assignments(index: SymbolIndex, sources: Mapping[str, Sequence[str]], asked: str) -> str:
    """A name the index does not hold (a variable local to a function): where it is assigned,
    each line with its neighbours and the function it is in; '' when it is assigned nowhere."""
    name = clean_name(asked).split(".")[-1]
    if not name:
        return ""
    pattern = re.compile(rf"^\s*(?:self\.)?{re.escape(name)}\s*(?::[^=]+)?(?:[-+*/|&]?=)(?!=)")
    hits = [(path, n) for path in sorted(sources) for n, line in enumerate(sources[path], 1) if pattern.match(line)]
    if not hits:
        return ""
    hits.sort(key=lambda h: _rank(Definition(name, name, "variable", h[0], h[1], h[1])))
    out = [f"{name} is not a class, function, method or module-level name; it is assigned in {len(hits)} place(s):"]
    for path, n in hits[:MAX_LOCAL]:
        lines = sources[path]
        scope = _enclosing(index, path, n)
        out.append(f"{name} in {scope or 'module level'} ({path} line {n}):")
        first, last = max(1, n - 2), min(len(lines), n + 2)
        out.append(f"{path}, lines {first}-{last} of {len(lines)}:")
        out += _numbered(lines, range(first, last + 1))
    if len(hits) > MAX_LOCAL:
        out.append(f"({len(hits) - MAX_LOCAL} more places not shown)")
    return "\n".join(out)


def _enclosing(index: SymbolIndex, path: str, line: int) -> str:
    inside = [d for d in index.definitions if d.path == path and d.kind in ("function", "method") and d.line <= line <= d.end_line]
    return max(inside, key=lambda d: d.line).qualname if inside else ""
