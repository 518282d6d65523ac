"""File cards (actors/index/cards.py): what a file's card says, and that it fits the embedder."""

from __future__ import annotations

from actors.index.cards import CARD_CHARS, file_card

SOURCE = '''"""Rotating log files.

Old files are compressed and removed after a while. More details follow
in this second paragraph, which the card leaves out.
"""

import os

LIMIT = 3


class Rotator:
    """Moves the current log aside when it grows too large."""

    def rotate(self):
        """Rename the log and open a new one."""

    def _helper(self):
        pass


def prune(folder):
    """Delete the oldest archives beyond LIMIT."""


async def watch():
    pass
'''


def test_a_card_holds_the_path_the_module_docstring_and_the_top_level_definitions():
    card = file_card("logs/rotate.py", SOURCE)
    lines = card.splitlines()
    assert lines[0] == "logs/rotate.py"
    assert lines[1] == "Rotating log files."  # the first paragraph only, on one line
    assert "second paragraph" not in card
    assert "class Rotator: Moves the current log aside when it grows too large." in lines
    assert "def prune: Delete the oldest archives beyond LIMIT." in lines
    assert "def watch" in lines  # no docstring: the name alone
    # documented methods come after every top-level definition; undocumented ones not at all
    assert lines.index("Rotator.rotate: Rename the log and open a new one.") > lines.index("def watch")
    assert "_helper" not in card
    assert "LIMIT = 3" not in card and "import os" not in card


def test_a_long_file_is_cut_at_a_line_end_within_the_limit():
    body = "\n".join(f'def f{i}():\n    """Does thing number {i} of many."""\n' for i in range(200))
    card = file_card("many.py", body)
    assert len(card) <= CARD_CHARS
    assert card.splitlines()[-1].startswith("def f")  # a whole entry, not half of one
    assert "def f0: Does thing number 0 of many." in card
    assert "def f199" not in card


def test_python_that_does_not_parse_and_other_files_get_their_path_and_first_lines():
    broken = file_card("bad.py", "def oops(:\n    return 1\n")
    assert broken == "bad.py\ndef oops(:\n    return 1"
    readme = file_card("docs/README.md", "# Rotation\n\nHow logs are rotated.\n" + "x" * 5000)
    assert readme.startswith("docs/README.md\n# Rotation\n\nHow logs are rotated.")
    assert len(readme) <= CARD_CHARS


def test_a_file_with_no_docstrings_still_names_its_definitions():
    card = file_card("plain.py", "class A:\n    def m(self):\n        return 1\n\ndef g():\n    return 2\n")
    assert card == "plain.py\nclass A\ndef g"
