"""The Builder's reply as file edits: labelled blocks and diffs read from realistic replies,
diffs applied by their context, and the workspace kept safe (nothing outside it, nothing
half-written)."""

from __future__ import annotations

import os
import random
from pathlib import Path

import pytest

from actors.relay.edits import FileEdit, parse_edits, snapshot_diff, target_file
from actors.relay.workspace_files import apply_edits, workspace_snapshot
from actors.relay.patch import apply_unified_diff

REPLY = '''\
I added the add function and a test for it. The subtract helper now returns the right sign.

File: src/calc.py
```python
def add(a: int, b: int) -> int:
    return a + b
```

### tests/test_calc.py
```python
from src.calc import add


def test_add():
    assert add(2, 3) == 5
```

```python:src/__init__.py
```

Here is the fix to `src/ops.py`:

```diff
--- a/src/ops.py
+++ b/src/ops.py
@@ -10,3 +10,3 @@
 def subtract(a, b):
-    return b - a
+    return a - b

```

And a usage example (not a file):

```python
print(add(1, 2))
```

Verification hints:
- run pytest tests/test_calc.py
- ruff check src
'''


def test_realistic_reply_with_prose_around_blocks() -> None:
    edits = parse_edits(REPLY)
    assert [(e.path, e.kind) for e in edits] == [
        ("src/calc.py", "write"),
        ("tests/test_calc.py", "write"),
        ("src/__init__.py", "write"),
        ("src/ops.py", "diff"),
    ]
    assert edits[0].content == "def add(a: int, b: int) -> int:\n    return a + b\n"
    assert edits[1].content.startswith("from src.calc import add\n\n\ndef test_add():")
    assert edits[2].content == ""
    assert "-    return b - a\n+    return a - b" in edits[3].content
    assert not edits[3].content.endswith(" \n")  # the blank line before the fence is not context


def test_other_label_styles() -> None:
    reply = (
        "**File:** `app/main.py`\n```python\nA = 1\n```\n"
        "Create `app/util.py`:\n```python\nB = 2\n```\n"
        "```python app/extra.py\nC = 3\n```\n"
        "```python\n# app/first_line.py\nD = 4\n```\n"
        "```\nno label here\n```\n"
    )
    edits = parse_edits(reply)
    assert [(e.path, e.content) for e in edits] == [
        ("app/main.py", "A = 1\n"),
        ("app/util.py", "B = 2\n"),
        ("app/extra.py", "C = 3\n"),
        ("app/first_line.py", "# app/first_line.py\nD = 4\n"),
    ]


def test_bare_diff_in_prose_ends_at_its_counts() -> None:
    reply = (
        "Change the constant:\n\n"
        "--- a/config.py\n+++ b/config.py\n@@ -1,2 +1,2 @@\n NAME = 'x'\n-LIMIT = 1\n+LIMIT = 10\n"
        "- this bullet is prose, not a removed line\n"
    )
    (edit,) = parse_edits(reply)
    assert edit.path == "config.py" and edit.kind == "diff"
    assert "prose" not in edit.content
    assert apply_unified_diff("NAME = 'x'\nLIMIT = 1\n", edit.content) == "NAME = 'x'\nLIMIT = 10\n"


def test_diff_to_and_from_dev_null_and_delete_lines() -> None:
    reply = (
        "```diff\n--- /dev/null\n+++ b/new.py\n@@ -0,0 +1,2 @@\n+x = 1\n+y = 2\n"
        "--- a/old.py\n+++ /dev/null\n@@ -1 +0,0 @@\n-gone = True\n```\n"
        "Delete file: `legacy.py`\n"
    )
    edits = parse_edits(reply)
    assert edits == [
        FileEdit(path="new.py", kind="write", content="x = 1\ny = 2\n"),
        FileEdit(path="old.py", kind="delete"),
        FileEdit(path="legacy.py", kind="delete"),
    ]


def test_unlabelled_code_goes_to_default_path_only_when_asked() -> None:
    reply = "Here it is:\n```python\ndef f():\n    return 1\n```\nUsage:\n```python\nf()\n```\n"
    assert parse_edits(reply) == []
    (edit,) = parse_edits(reply, default_path="solution.py")
    assert edit == FileEdit(path="solution.py", kind="write", content="def f():\n    return 1\n")


def test_a_reply_cut_off_inside_a_block_still_yields_its_edit() -> None:
    (edit,) = parse_edits("File: a.py\n```python\nx = 1\ny = 2")
    assert edit.content == "x = 1\ny = 2\n"


ORIGINAL = "".join(f"line {n}\n" for n in range(1, 31))


def test_diff_with_wrong_line_numbers_applies_by_context() -> None:
    diff = "@@ -20,3 +20,3 @@\n line 5\n-line 6\n+LINE SIX\n line 7\n@@ -1,1 +1,2 @@\n line 9\n+line 9.5\n"
    result = apply_unified_diff(ORIGINAL, diff, "x.txt").splitlines()
    assert result[4:10] == ["line 5", "LINE SIX", "line 7", "line 8", "line 9", "line 9.5"]
    assert len(result) == 31


def test_hunk_goes_to_the_occurrence_nearest_its_line_number() -> None:
    text = "a\nx\nb\n" * 3
    diff = "@@ -7,1 +7,1 @@\n-x\n+y\n"  # the third x is at line 8; nearest to 7 is it
    assert apply_unified_diff(text, diff) == "a\nx\nb\na\nx\nb\na\ny\nb\n"


def test_a_hunk_that_does_not_apply_names_file_and_hunk() -> None:
    diff = "@@ -1,2 +1,2 @@\n line 1\n-line 2\n+two\n@@ -5,2 +5,2 @@\n line 5\n-line six\n+six\n"
    with pytest.raises(ValueError, match=r"^src/x\.py: hunk 2 \(@@ -5,2 \+5,2 @@\) does not apply"):
        apply_unified_diff(ORIGINAL, diff, "src/x.py")


def test_no_newline_at_end_of_file_markers() -> None:
    diff = "@@ -1,2 +1,2 @@\n a\n-b\n+c\n\\ No newline at end of file\n"
    assert apply_unified_diff("a\nb\n", diff) == "a\nc"
    diff = "@@ -1,2 +1,2 @@\n a\n-b\n\\ No newline at end of file\n+c\n"
    assert apply_unified_diff("a\nb", diff) == "a\nc\n"


def test_snapshot_diff_round_trips_through_the_applier() -> None:
    rnd = random.Random(7)
    for _ in range(150):
        before = [f"v{rnd.randint(0, 4)}" for _ in range(rnd.randint(1, 14))]
        after = list(before)
        for _ in range(rnd.randint(1, 4)):
            spot = rnd.randint(0, max(len(after) - 1, 0))
            action = rnd.choice("ide")
            if action == "i":
                after.insert(spot, f"new{rnd.randint(0, 9)}")
            elif action == "d" and len(after) > 1:
                del after[spot]
            elif after:
                after[spot] = "edited"
        a = "\n".join(before) + ("\n" if rnd.random() < 0.8 else "")
        b = "\n".join(after) + ("\n" if rnd.random() < 0.8 else "")
        diff = snapshot_diff({"f.txt": a}, {"f.txt": b})
        assert apply_unified_diff(a, diff, "f.txt") == b


def _workspace(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    (root / "src").mkdir(parents=True)
    header = "".join(f"# {n}\n" for n in range(9))
    (root / "src" / "ops.py").write_text(header + "def subtract(a, b):\n    return b - a\n")
    (root / ".git").mkdir()
    (root / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
    return root


def test_apply_reply_to_workspace(tmp_path: Path) -> None:
    root = _workspace(tmp_path)
    changed = apply_edits(root, parse_edits(REPLY))
    assert changed == ["src/calc.py", "tests/test_calc.py", "src/__init__.py", "src/ops.py"]
    assert (root / "src" / "ops.py").read_text().endswith("def subtract(a, b):\n    return a - b\n")
    snap = workspace_snapshot(root)
    assert sorted(snap) == ["src/__init__.py", "src/calc.py", "src/ops.py", "tests/test_calc.py"]  # no .git
    assert snap["src/calc.py"] == "def add(a: int, b: int) -> int:\n    return a + b\n"
    # the same edits again change nothing
    assert apply_edits(root, [FileEdit(path="src/calc.py", kind="write", content=snap["src/calc.py"])]) == []


def test_edits_to_one_file_apply_in_order_and_delete_works(tmp_path: Path) -> None:
    root = _workspace(tmp_path)
    edits = [
        FileEdit(path="a.py", kind="write", content="x = 1\n"),
        FileEdit(path="a.py", kind="diff", content="@@ @@\n-x = 1\n+x = 2\n"),
        FileEdit(path="src/ops.py", kind="delete"),
    ]
    assert apply_edits(root, edits) == ["a.py", "src/ops.py"]
    assert (root / "a.py").read_text() == "x = 2\n"
    assert not (root / "src" / "ops.py").exists()


@pytest.mark.parametrize(
    "bad",
    [
        "../escape.py",
        "src/../../escape.py",
        "/tmp/abs.py",
        "C:/win.py",
        "~/home.py",
        ".git/hooks/pre-commit",
        "link/x.py",
    ],
)
def test_paths_outside_the_workspace_are_refused_and_nothing_is_written(tmp_path: Path, bad: str) -> None:
    root = _workspace(tmp_path)
    outside = tmp_path / "outside"
    outside.mkdir()
    os.symlink(outside, root / "link")
    before = workspace_snapshot(root)
    edits = [FileEdit(path="fine.py", kind="write", content="ok\n"), FileEdit(path=bad, kind="write", content="bad\n")]
    with pytest.raises(ValueError, match="refused edit path"):
        apply_edits(root, edits)
    assert workspace_snapshot(root) == before
    assert not (root / "fine.py").exists()
    assert list(outside.iterdir()) == []
    assert not (tmp_path / "escape.py").exists()


def test_a_failing_hunk_leaves_the_workspace_untouched(tmp_path: Path) -> None:
    root = _workspace(tmp_path)
    before = workspace_snapshot(root)
    edits = [
        FileEdit(path="new.py", kind="write", content="x\n"),
        FileEdit(path="src/ops.py", kind="diff", content="@@ -1 +1 @@\n-not in the file\n+y\n"),
    ]
    with pytest.raises(ValueError, match=r"src/ops\.py: hunk 1"):
        apply_edits(root, edits)
    assert workspace_snapshot(root) == before


def test_a_diff_that_removes_lines_of_a_missing_file_and_its_delete_are_refused(tmp_path: Path) -> None:
    root = _workspace(tmp_path)
    before = workspace_snapshot(root)
    with pytest.raises(ValueError, match="does not exist"):
        apply_edits(root, [FileEdit(path="nope.py", kind="diff", content="@@ @@\n-a\n+b\n")])
    with pytest.raises(ValueError, match="no such file"):
        apply_edits(root, [FileEdit(path="nope.py", kind="delete")])
    assert workspace_snapshot(root) == before


def test_a_diff_for_a_file_that_does_not_exist_yet_creates_it_with_its_new_side(tmp_path: Path) -> None:
    """A small model writes a new file as a diff against nothing: its context and added
    lines are the file."""
    root = _workspace(tmp_path)
    diff = "--- a/new.py\n+++ b/new.py\n@@ -1,2 +1,3 @@\n def f():\n+    x = 1\n     return x\n"
    assert apply_edits(root, [FileEdit(path="new.py", kind="diff", content=diff)]) == ["new.py"]
    assert (root / "new.py").read_text() == "def f():\n    x = 1\n    return x\n"


@pytest.mark.parametrize(
    ("texts", "files", "want"),
    [
        (["Complete f in solution.py", "keep test_solution.py passing"], {}, "solution.py"),
        (["Write add in `src/calc.py`, version 1.2"], {"a.py": ""}, "src/calc.py"),
        (["Write add in calc.py and mul in ops.py"], {}, None),  # two files: no guess
        (["Make the tests pass"], {"app.py": "", "test_app.py": "", "README.md": ""}, "app.py"),
        (["Make the tests pass"], {"a.py": "", "b.py": ""}, None),
        (["Add tests in tests/test_x.py"], {"x.py": ""}, "x.py"),
    ],
)
def test_the_one_file_an_item_is_about(texts, files, want) -> None:
    assert target_file(texts, files) == want


def test_snapshot_skips_binary_caches_and_links(tmp_path: Path) -> None:
    root = _workspace(tmp_path)
    (root / "blob.bin").write_bytes(b"\x00\x01\x02")
    (root / "latin.txt").write_bytes(b"caf\xe9")
    (root / "__pycache__").mkdir()
    (root / "__pycache__" / "x.txt").write_text("cached")
    os.symlink(root / "src" / "ops.py", root / "alias.py")
    assert sorted(workspace_snapshot(root)) == ["src/ops.py"]


def test_a_small_models_numbered_steps_and_plural_label_still_read() -> None:
    """Seen on the local 1.5B model: the fence after a step number, and `Files:`."""
    numbered = "1. I wrote f.\n2. ```python\ndef f():\n    return 1\n```\nVerification hints: run it\n"
    assert parse_edits(numbered, default_path="solution.py") == [
        FileEdit(path="solution.py", kind="write", content="def f():\n    return 1\n")
    ]
    labelled = "I wrote f.\nFiles: solution.py\n```python\ndef f():\n    return 2\n```\n"
    assert parse_edits(labelled) == [FileEdit(path="solution.py", kind="write", content="def f():\n    return 2\n")]


def test_unlabelled_code_in_the_files_language_wins_over_longer_text() -> None:
    reply = "```python\nx = 1\n```\n\n```\nsome longer prose the model fenced for no reason at all\n```\n"
    assert parse_edits(reply, default_path="a.py")[0].content == "x = 1\n"
