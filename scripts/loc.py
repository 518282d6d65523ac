"""Lines of Python per folder of the product, at the working tree or at a commit, so the size
figures of a change can be rerun by anyone:

    python3 scripts/loc.py                 # the working tree
    python3 scripts/loc.py --vs 5070dbc    # a commit against the working tree, side by side

A line counts when it is neither blank nor a comment alone (docstrings count: they are the
code's documentation). Folders: each package under actors/ on its own, then events/,
projections/ and evals/; tests are not product code and are left out. Standard library only.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TOP = ("actors", "events", "projections", "evals")


def folder_of(path: str) -> str | None:
    parts = path.split("/")
    if parts[0] not in TOP or not path.endswith(".py"):
        return None
    if parts[0] == "actors" and len(parts) > 2:
        return f"actors/{parts[1]}"
    return parts[0] if parts[0] != "actors" else "actors (top)"


def count(text: str) -> int:
    return sum(1 for line in text.splitlines() if line.strip() and not line.lstrip().startswith("#"))


def at_tree() -> Counter[str]:
    counts: Counter[str] = Counter()
    for top in TOP:
        for path in (ROOT / top).rglob("*.py"):
            rel = path.relative_to(ROOT).as_posix()
            name = folder_of(rel)
            if name:
                counts[name] += count(path.read_text(encoding="utf-8", errors="replace"))
    return counts


def at_commit(commit: str) -> Counter[str]:
    listed = subprocess.run(["git", "ls-tree", "-r", "--name-only", commit, "--", *TOP], cwd=ROOT,
                            capture_output=True, text=True, check=True).stdout.split()  # fmt: skip
    counts: Counter[str] = Counter()
    for rel in listed:
        name = folder_of(rel)
        if name:
            text = subprocess.run(["git", "show", f"{commit}:{rel}"], cwd=ROOT, capture_output=True, text=True, check=True).stdout
            counts[name] += count(text)
    return counts


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="scripts/loc.py", description=__doc__.splitlines()[0])
    parser.add_argument("--vs", metavar="COMMIT", help="a commit to set beside the working tree")
    args = parser.parse_args(argv)
    now = at_tree()
    if not args.vs:
        print("| folder | lines |\n|---|---|")
        for name in sorted(now):
            print(f"| {name} | {now[name]} |")
        print(f"| total | {sum(now.values())} |")
        return 0
    try:
        before = at_commit(args.vs)
    except subprocess.CalledProcessError:
        print(f"loc: {args.vs} is not a commit of this repository", file=sys.stderr)
        return 2
    print(f"| folder | {args.vs} | now | change |\n|---|---|---|---|")
    for name in sorted(set(now) | set(before)):
        print(f"| {name} | {before[name]} | {now[name]} | {now[name] - before[name]:+d} |")
    total_b, total_n = sum(before.values()), sum(now.values())
    print(f"| total | {total_b} | {total_n} | {total_n - total_b:+d} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
