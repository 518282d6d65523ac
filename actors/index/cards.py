"""A file card: one short text that says what a whole file is about (issue 15).

A question put in a user's words ("where are old log files rotated away") often matches
what a file's docstrings say of it better than any 40-line chunk of its body, whose words are
the code's. The card is the file's path, its module docstring's first paragraph, and its
top-level classes and functions each with the first line of its docstring (then, while there
is room, a class's documented methods), cut to what the embedder reads (all-MiniLM-L6-v2
truncates at 256 tokens, about 1,000 characters). Non-Python files, and Python that does not
parse, get the path and their first lines. Pure: no I/O, no model.

Measured, not used: as a third vote fused with hybrid's two sides it gained a little on the
held-out packages it was first tried on and lost on a fresh one (sqlparse 0.88 -> 0.77), so no
search uses it (`tests/bench/bench_cards.py`; BENCHMARKS.md, "File cards as a third vote").
"""

from __future__ import annotations

import ast

CARD_CHARS = 1000  # about the embedder's 256-token window
_DOC_CHARS = 300  # of the module docstring
_LINE_CHARS = 100  # of a definition's docstring line


def file_card(path: str, text: str, *, limit: int = CARD_CHARS) -> str:
    """The card of `path`, whose content is `text`."""
    try:
        tree = ast.parse(text) if path.endswith((".py", ".pyi")) else None
    except (SyntaxError, ValueError, RecursionError):
        tree = None
    if tree is None:
        return _cut(f"{path}\n{text.strip()}", limit)
    lines = [path]
    doc = ast.get_docstring(tree, clean=True)
    if doc:
        lines.append(_first_paragraph(doc)[:_DOC_CHARS])
    tops = [n for n in tree.body if isinstance(n, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))]
    lines += [_entry(n) for n in tops]
    # then the documented methods, while there is room: a file is first about its top level
    lines += [
        f"{c.name}.{_entry(m).split(' ', 1)[1]}"
        for c in tops
        if isinstance(c, ast.ClassDef)
        for m in c.body
        if isinstance(m, (ast.FunctionDef, ast.AsyncFunctionDef)) and ast.get_docstring(m)
    ]
    return _cut("\n".join(lines), limit)


def _entry(node: ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef) -> str:
    kind = "class" if isinstance(node, ast.ClassDef) else "def"
    doc = ast.get_docstring(node, clean=True)
    line = doc.strip().splitlines()[0][:_LINE_CHARS] if doc and doc.strip() else ""
    return f"{kind} {node.name}: {line}" if line else f"{kind} {node.name}"


def _first_paragraph(doc: str) -> str:
    return " ".join(doc.strip().split("\n\n", 1)[0].split())


def _cut(text: str, limit: int) -> str:
    """At most `limit` characters, ending at a line's end where one is near."""
    if len(text) <= limit:
        return text
    head = text[:limit]
    end = head.rfind("\n")
    return head[:end] if end > limit // 2 else head
