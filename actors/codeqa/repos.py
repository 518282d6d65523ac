"""The repositories folder: which repositories it holds, their documentation and trees, and
the file a model's path means. Every path goes through `resolve_in_root`, so `../`, absolute
paths and symlinks that lead outside the folder are refused with a `ToolInputError`.

A repository is a folder directly inside the repositories folder (hidden folders, junk
folders and symlinks are not repositories). Paths are shown and accepted relative to the
repositories folder: `shop/src/billing.py`.
"""

from __future__ import annotations

import difflib
import os
from pathlib import Path

from actors.tools.files import PATH_LINE
from actors.tools.paths import (
    SKIP_DIRS,
    ToolInputError,
    clean_path,
    is_regular,
    rel_path,
    resolve_in_root,
    resolve_root,
    walk_files,
)

DOC_PRIORITY = ("llms.txt", "README.md")  # seed 003: llms.txt, then README.md, then the tree only
LISTED_BY = "search_keyword"  # the tool whose output shows paths the way the others take them


def _hidden(name: str) -> bool:
    return name.startswith(".") or name in SKIP_DIRS or name.endswith(".egg-info")


def list_repositories(root: str | os.PathLike[str]) -> list[str]:
    """Names of the repositories in the folder, sorted case-insensitively."""
    base = resolve_root(root)
    names = []
    for entry in base.iterdir():
        if _hidden(entry.name) or entry.is_symlink() or not entry.is_dir():
            continue
        names.append(entry.name)
    return sorted(names, key=str.lower)


def repository(root: str | os.PathLike[str], name: str) -> tuple[str, Path]:
    """(name, folder) of the repository `name` names; a path inside it names it too."""
    base = resolve_root(root)
    text = clean_path(name).rstrip("/")
    if not text:
        raise ToolInputError("Give a repository name, e.g. repo='" + _first_repo(base) + "'.")
    folder = resolve_in_root(base, text, listed_by="list_available_repositories")
    known = list_repositories(base)
    top = rel_path(folder, base).split("/", 1)[0] if folder != base else ""
    if top in known:
        return top, base / top
    hint = difflib.get_close_matches(text, known, n=1, cutoff=0.5)
    maybe = f" Did you mean '{hint[0]}'?" if hint else ""
    listed = ", ".join(known) if known else "none"
    raise ToolInputError(f"No repository '{text}'.{maybe} The repositories are: {listed}.")


def _first_repo(base: Path) -> str:
    repos = list_repositories(base)
    return repos[0] if repos else "name"


def resolve_file(root: str | os.PathLike[str], path: str) -> tuple[Path, int]:
    """The file `path` names and the line it points at (0 if none).

    Accepted as well: a path copied from a result with its line (`a/b.py:40`), and a path
    inside a repository given without the repository's name when exactly one repository has
    it. Refused (ToolInputError): anything outside the folder, folders, missing files.
    """
    base = resolve_root(root)
    text = clean_path(path)
    if not text:
        raise ToolInputError("read_code needs a path, e.g. read_code(path='repo/src/app.py', start_line=1)")
    readings = [(text, 0)]
    if m := PATH_LINE.match(text):
        readings.append((m["path"], int(m["line"])))
    target, line = None, 0
    for candidate, pointed in readings:
        target = _existing(base, candidate)
        if target is None:
            found = [p for repo in list_repositories(base) if (p := _existing(base, f"{repo}/{candidate}"))]
            target = found[0] if len(found) == 1 else None
        if target is not None:
            line = pointed
            break
    if target is None:
        raise ToolInputError(_not_found(base, readings[-1][0]))
    if target.is_dir():
        entries = sorted(e.name + ("/" if e.is_dir() else "") for e in target.iterdir() if not _hidden(e.name))
        shown = ", ".join(entries[:30]) or "nothing"
        raise ToolInputError(f"'{rel_path(target, base)}' is a folder, not a file; it holds: {shown}.")
    return target, line


def _existing(base: Path, text: str) -> Path | None:
    path = resolve_in_root(base, text, listed_by=LISTED_BY)
    return path if path.exists() else None


def _not_found(base: Path, text: str) -> str:
    files = [rel_path(p, base) for p in walk_files(base)]
    name = Path(text).name
    same = [f for f in files if Path(f).name == name][:5]
    close = difflib.get_close_matches(text, files, n=5, cutoff=0.6)
    suggestions = list(dict.fromkeys(same + close))[:5]
    msg = f"No file '{text}' in the repositories."
    if suggestions:
        msg += " Did you mean: " + ", ".join(suggestions) + "?"
    return msg + f" Use a path as {LISTED_BY} prints it, starting with the repository name."


# -- documentation and tree --------------------------------------------------------------------


def find_documentation(folder: Path) -> Path | None:
    """llms.txt, else README.md (either spelled in any case), else None."""
    by_name = {}
    for entry in folder.iterdir():
        if entry.is_file() and not entry.is_symlink():
            by_name.setdefault(entry.name.lower(), entry)
    for wanted in DOC_PRIORITY:
        if wanted.lower() in by_name:
            return by_name[wanted.lower()]
    return None


def directory_tree(folder: Path, max_entries: int) -> tuple[list[str], int]:
    """The folder's tree, two spaces per level, folders with a trailing '/', and how many
    entries were left out past `max_entries`. Junk folders, hidden entries, symlinks, FIFOs,
    sockets and devices are not shown."""
    lines = [folder.name + "/"]
    left_out = 0
    for dirpath, dirnames, filenames in os.walk(folder, followlinks=False):
        here = Path(dirpath)
        depth = len(here.relative_to(folder).parts)
        dirnames[:] = sorted((d for d in dirnames if not _hidden(d) and not (here / d).is_symlink()), key=str.lower)
        if here != folder:
            if len(lines) > max_entries:
                left_out += 1
            else:
                lines.append("  " * depth + here.name + "/")
        for name in sorted(filenames, key=str.lower):
            if _hidden(name) or not is_regular(here / name):  # no links, FIFOs, sockets, devices
                continue
            if len(lines) > max_entries:
                left_out += 1
            else:
                lines.append("  " * (depth + 1) + name)
    return lines, left_out
