"""The agent's file tools: ranking, line numbers, windows, refusals, and root confinement."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from actors.runtime.registry import Registry, Tool
from actors.tools import search as search_module
from actors.tools.files import ReadFile, SearchFiles, ToolInputError, read, search
from actors.tools.search import query_terms

STORE = """\
import sqlite3


class SQLiteApplicationRecorder(Recorder):
    \"\"\"Stores events in a SQLite table.\"\"\"

    def insert(self, events):
        return self.recorder_insert(events)
"""

OTHER = """\
# uses a recorder, not sqlite
def make_recorder():
    return None
"""


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    root = tmp_path / "root"
    (root / "pkg").mkdir(parents=True)
    (root / "pkg" / "store.py").write_text(STORE)
    (root / "pkg" / "other.py").write_text(OTHER)
    (root / "README.md").write_text("# Demo\nThis project records events.\n")
    (root / "long.txt").write_text("".join(f"line {n}\n" for n in range(1, 301)))
    (root / "blob.dat").write_bytes(b"sqlite recorder\0\1\2binary")
    (root / ".git").mkdir()
    (root / ".git" / "config").write_text("sqlite recorder in git\n")
    (root / "__pycache__").mkdir()
    (root / "__pycache__" / "cache.txt").write_text("sqlite recorder cached\n")
    (root / "docs").mkdir()
    (root / "docs" / "store.py").write_text("# a second store.py\n")
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.py").write_text("SECRET sqlite recorder\n")
    os.symlink(outside / "secret.py", root / "link_out.py")
    os.symlink(outside, root / "dir_out")
    os.symlink(root / "pkg" / "store.py", root / "link_in.py")
    return root


# -- query terms -------------------------------------------------------------------------------------


def test_query_terms_drop_stop_words_and_add_identifier_forms() -> None:
    texts = {t.text: t for t in query_terms("Which file defines the SQLite recorder classes?")}
    assert {"sqlite", "recorder"} <= set(texts)
    assert not {"which", "the", "file", "defines", "classes", "class"} & set(texts)
    assert texts["sqlite_recorder"].kind == "joined" and "sqliterecorder" in texts


def test_query_terms_split_compound_identifiers() -> None:
    texts = {t.text: t for t in query_terms("take_snapshot ProjectionRunner")}
    assert texts["take_snapshot"].weight == 1.0 and texts["projectionrunner"].weight == 1.0
    assert texts["snapshot"].kind == "piece" and texts["runner"].kind == "piece"
    assert "lite" not in {t.text for t in query_terms("SQLite")}  # a mixed-case word, not a compound


def test_query_terms_join_weak_identifier_words() -> None:
    texts = {t.text for t in query_terms("environment variable for the persistence module")}
    assert "persistence_module" in texts and "module" not in texts


def test_query_of_only_generic_words_still_searches() -> None:
    assert [t.text for t in query_terms("class")] == ["class"]


# -- search ---------------------------------------------------------------------------------------


def test_search_ranks_by_distinct_terms_and_shows_numbered_lines(tree: Path) -> None:
    (tree / "pkg" / "many.py").write_text("recorder = 1\n" * 20)  # many hits, one term
    out = search(tree, "SQLite recorder classes")
    lines = out.splitlines()
    assert lines[0] == "3 files match 'SQLite', 'recorder':"
    assert lines[1].startswith("pkg/store.py (SQLite, recorder")
    assert "  pkg/store.py:4: class SQLiteApplicationRecorder(Recorder):" in lines
    # other.py matches both words too (in a comment), but store.py defines them; many.py has
    # the most hits, of one word only
    assert re.findall(r"^(\S+) \(", out, re.MULTILINE) == ["pkg/store.py", "pkg/other.py", "pkg/many.py"]
    assert "pkg/many.py (recorder: 20 matches)" in out


def test_search_skips_git_cache_binary_huge_and_links_out(tree: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tree / "huge.txt").write_text("sqlite recorder " * 100)
    monkeypatch.setattr(search_module, "MAX_FILE_BYTES", 1000)
    out = search(tree, "sqlite recorder")
    for skipped in (".git/", "__pycache__", "blob.dat", "huge.txt", "link_out.py", "dir_out", "SECRET"):
        assert skipped not in out
    assert "link_in.py" not in out  # a link inside the root: its target is found where it is


def test_search_file_name_counts_as_a_match(tree: Path) -> None:
    out = search(tree, "readme")
    assert out.startswith("1 file match 'readme'")
    assert "README.md (readme: 0 matches)" in out


def test_search_prefers_a_file_named_for_the_term(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text("x = snapshot(snapshot(snapshot))\n")
    (tmp_path / "snapshot.py").write_text("x = snapshot\n")
    assert re.findall(r"^(\S+) \(", search(tmp_path, "snapshot"), re.MULTILINE) == ["snapshot.py", "a.py"]


def test_search_prefers_the_file_defining_the_term(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text("from b import Store\nStore()\nStore()\n")
    (tmp_path / "b.py").write_text("class Store:\n    pass\n")
    assert re.findall(r"^(\S+) \(", search(tmp_path, "Store"), re.MULTILINE) == ["b.py", "a.py"]


def test_search_caps_files_and_lines(tmp_path: Path) -> None:
    for i in range(12):
        (tmp_path / f"f{i:02}.py").write_text("".join(f"x = 'needle {n}'\n" for n in range(10)))
    out = search(tmp_path, "needle")
    assert out.startswith("12 files match 'needle'; the best 8:")
    assert len(re.findall(r"^\S+ \(needle: 10 matches\)$", out, re.MULTILINE)) == 8
    hits = re.findall(r"^  f\d\d\.py:(\d+): ", out, re.MULTILINE)
    assert 8 <= len(hits) <= 24
    assert len(re.findall(r"^  f00\.py:", out, re.MULTILINE)) == 4


def test_search_trims_long_lines(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text("    needle = '" + "x" * 500 + "'\n")
    line = [ln for ln in search(tmp_path, "needle").splitlines() if ln.startswith("  a.py:1:")][0]
    assert line.startswith("  a.py:1: needle = 'xxx") and line.endswith("…") and len(line) < 140


def test_search_without_match_says_what_to_try(tree: Path) -> None:
    out = search(tree, "frobnicate widgets")
    assert out.startswith("No file under the root contains 'frobnicate', 'widgets'")
    assert "Try fewer or shorter words (e.g. query='widgets')" in out
    assert "frobnicate_widgets" in out
    assert "Top of the root: docs/, pkg/, blob.dat, long.txt, README.md." in out  # no links


def test_search_names_words_no_file_contains(tree: Path) -> None:
    assert "No file contains 'zebra'." in search(tree, "recorder zebra")


def test_search_needs_a_word(tree: Path) -> None:
    with pytest.raises(ToolInputError, match="needs a query"):
        search(tree, " ?! ")


def test_short_terms_match_only_at_word_starts(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text("valid = 1\n")
    (tmp_path / "b.py").write_text("user_id = 1\n")
    out = search(tmp_path, "id")
    assert "b.py" in out and "a.py" not in out


def test_search_on_the_eventsourcing_corpus() -> None:
    es = pytest.importorskip("eventsourcing")
    root = Path(es.__file__).parent
    out = search(root, "SQLite recorder classes")
    ranked = re.findall(r"^(\S+) \(", out, re.MULTILINE)
    assert "sqlite.py" in ranked[:3]
    assert re.search(r"^  sqlite\.py:\d+: class SQLite\w*Recorder\(", out, re.MULTILINE)
    ranked = re.findall(r"^(\S+) \(", search(root, "snapshot aggregate Application"), re.MULTILINE)
    assert "application.py" in ranked[:3]


# -- read -------------------------------------------------------------------------------------------


def test_read_numbers_lines_exactly(tree: Path) -> None:
    out = read(tree, "pkg/store.py", 4, 5)
    assert out.splitlines() == [
        "pkg/store.py, lines 4-5 of 8:",
        "4: class SQLiteApplicationRecorder(Recorder):",
        '5:     """Stores events in a SQLite table."""',
        "(showing lines 4-5 of 8; to continue read start_line=6)",
    ]


def test_read_default_window_and_continuation_note(tree: Path) -> None:
    lines = read(tree, "long.txt").splitlines()
    assert lines[0] == "long.txt, lines 1-50 of 300:"
    assert lines[1] == " 1: line 1" and lines[50] == "50: line 50"
    assert lines[-1] == "(showing lines 1-50 of 300; to continue read start_line=51)"


def test_read_is_capped(tree: Path) -> None:
    lines = read(tree, "long.txt", 10, 1000).splitlines()
    assert lines[0] == "long.txt, lines 10-129 of 300:"
    assert len(lines) == 122
    assert lines[-1] == "(showing lines 10-129 of 300; to continue read start_line=130; at most 120 lines per read)"


def test_read_to_the_end(tree: Path) -> None:
    lines = read(tree, "long.txt", 290).splitlines()
    assert lines[0] == "long.txt, lines 290-300 of 300:" and lines[-1] == "(end of file: 300 lines)"


def test_read_past_the_end_says_how_long_the_file_is(tree: Path) -> None:
    with pytest.raises(ToolInputError, match=r"'long.txt' has 300 lines; start_line=301 is past the end"):
        read(tree, "long.txt", 301)


def test_read_tolerates_sloppy_line_arguments(tree: Path) -> None:
    assert read(tree, "long.txt", "5", "6").splitlines()[0] == "long.txt, lines 5-6 of 300:"
    assert read(tree, "long.txt", 0, 3).splitlines()[0] == "long.txt, lines 1-3 of 300:"
    assert read(tree, "long.txt", 50, 10).splitlines()[0] == "long.txt, lines 50-99 of 300:"
    with pytest.raises(ToolInputError, match="start_line must be a whole number"):
        read(tree, "long.txt", "top")


def test_read_a_path_copied_from_a_search_hit(tree: Path) -> None:
    assert read(tree, "long.txt:120: line 120").splitlines()[0] == "long.txt, lines 115-164 of 300:"
    assert read(tree, "root/pkg/store.py").startswith("pkg/store.py, lines 1-8 of 8:")  # root's own name


def test_read_refuses_binary(tree: Path) -> None:
    with pytest.raises(ToolInputError, match="'blob.dat' is a binary file"):
        read(tree, "blob.dat")


def test_read_missing_file_suggests_close_matches(tree: Path) -> None:
    with pytest.raises(ToolInputError) as e:
        read(tree, "store.py")
    message = str(e.value)
    assert message.startswith("No file 'store.py' under the root. Did you mean: docs/store.py, pkg/store.py")
    assert "\n" not in message
    with pytest.raises(ToolInputError, match=r"Files in 'pkg': other.py, store.py"):
        read(tree, "pkg/missing.py")


def test_read_folder_lists_it(tree: Path) -> None:
    assert read(tree, "pkg") == "'pkg' is a folder, not a file. It contains: other.py, store.py. Call read_file on one of its files."


def test_read_empty_file(tree: Path) -> None:
    (tree / "empty.txt").write_text("")
    assert read(tree, "empty.txt") == "'empty.txt' is empty (0 lines)."


# -- confinement ------------------------------------------------------------------------------------


@pytest.mark.parametrize("path", ["../outside/secret.py", "pkg/../../outside/secret.py", "..", "../root/../outside"])
def test_read_refuses_parent_traversal(tree: Path, path: str) -> None:
    with pytest.raises(ToolInputError, match="outside the root folder"):
        read(tree, path)


def test_read_refuses_absolute_path_outside(tree: Path) -> None:
    with pytest.raises(ToolInputError, match="'/etc/passwd' is outside the root folder"):
        read(tree, "/etc/passwd")
    with pytest.raises(ToolInputError, match="outside the root folder"):
        read(tree, str(tree.parent / "outside" / "secret.py"))


def test_read_absolute_path_inside_is_fine_and_root_slash_gets_a_hint(tree: Path) -> None:
    assert read(tree, str(tree / "README.md")).startswith("README.md, lines 1-2 of 2:")
    with pytest.raises(ToolInputError, match="Did you mean path='README.md'"):
        read(tree, "/README.md")


@pytest.mark.parametrize("path", ["link_out.py", "dir_out/secret.py", "dir_out"])
def test_read_refuses_symlinks_out(tree: Path, path: str) -> None:
    with pytest.raises(ToolInputError, match="points outside the root folder"):
        read(tree, path)


def test_read_follows_symlink_inside(tree: Path) -> None:
    assert read(tree, "link_in.py").startswith("pkg/store.py, lines 1-8 of 8:")


_SEGMENTS = st.sampled_from(["..", ".", "pkg", "store.py", "link_out.py", "dir_out", "secret.py", "outside", "root", ""])


@settings(max_examples=150, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(parts=st.lists(_SEGMENTS, min_size=1, max_size=5), absolute=st.booleans())
def test_read_never_leaves_the_root(tree: Path, parts: list[str], absolute: bool) -> None:
    path = ("/" if absolute else "") + "/".join(parts)
    try:
        out = read(tree, path)
    except ToolInputError:
        return
    assert "SECRET" not in out


@settings(max_examples=100, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(start=st.integers(-5, 300), end=st.integers(-5, 600))
def test_read_windows_are_consecutive_and_bounded(tree: Path, start: int, end: int) -> None:
    lines = read(tree, "long.txt", start, end).splitlines()
    numbers = [int(m.group(1)) for ln in lines if (m := re.match(r"^\s*(\d+): line (\d+)$", ln))]
    assert numbers == list(range(numbers[0], numbers[0] + len(numbers)))
    assert numbers[0] == max(1, start) and 1 <= len(numbers) <= 120 and numbers[-1] <= 300
    assert all(re.match(r"^\s*(\d+): line \1$", ln) for ln in lines[1:-1])


# -- the registered tools ----------------------------------------------------------------------------


def test_tools_are_registered_with_clean_signatures() -> None:
    assert Registry.tool_class("search_files") is SearchFiles
    assert Registry.tool_class("read_file") is ReadFile
    assert issubclass(SearchFiles, Tool) and issubclass(ReadFile, Tool)
    assert SearchFiles.signature() == "search_files(query: str)"
    assert ReadFile.signature() == "read_file(path: str, start_line: int = 1, end_line: int = 0)"
    assert issubclass(ToolInputError, ValueError)


def test_tools_accept_the_names_small_models_use(tree: Path) -> None:
    search_tool, read_tool = SearchFiles(root=str(tree)), ReadFile(root=str(tree))
    assert search_tool.config == {"root": str(tree)}
    assert search_tool.execute(keyword="recorder") == search(tree, "recorder")
    assert search_tool.execute(query=["sqlite", "recorder"]) == search(tree, "sqlite recorder")
    assert read_tool.execute(file="long.txt", start=3, end=4) == read(tree, "long.txt", 3, 4)
    assert read_tool.execute(path="long.txt", line=7).startswith("long.txt, lines 7-56 of 300:")
    with pytest.raises(ToolInputError, match="needs a path"):
        read_tool.execute(start_line=3)
    with pytest.raises(ToolInputError, match="needs a query"):
        search_tool.execute()


def test_tool_root_must_be_a_folder(tmp_path: Path) -> None:
    with pytest.raises(NotADirectoryError):
        ReadFile(root=str(tmp_path / "nope"))


# -- search_files with a path (one file or folder) ------------------------------------------------


def test_search_in_one_long_file_shows_its_lines_with_the_words_wherever_they_are(tmp_path: Path) -> None:
    lines = [f"filler {n}" for n in range(1, 201)]
    lines[9], lines[149] = "Replay re-executes a run from its log.", "chorus replay RUN_ID: identical or the first difference."
    (tmp_path / "README.md").write_text("\n".join(lines) + "\n")
    (tmp_path / "replay.py").write_text("def replay(): ...\n")  # elsewhere: not shown
    out = SearchFiles(root=str(tmp_path)).execute(query="replay", path="README.md")
    assert out.splitlines()[0] == "1 file match 'replay':"
    assert "  README.md:10: Replay re-executes a run from its log." in out
    assert "  README.md:150: chorus replay RUN_ID: identical or the first difference." in out
    assert "replay.py" not in out.replace("README.md", "")


def test_search_in_a_short_file_shows_it_whole_and_one_without_the_words_from_its_start(tree: Path) -> None:
    whole = SearchFiles(root=str(tree)).execute(query="events", path="README.md")
    assert whole.splitlines()[:2] == ["README.md says it on line 2; the whole file:", "README.md, lines 1-2 of 2:"]
    assert "2: This project records events." in whole
    missing = SearchFiles(root=str(tree)).execute(query="zebra", path="long.txt")
    assert missing.splitlines()[:3] == ["No line of long.txt contains 'zebra'. Its first lines:", "long.txt, lines 1-50 of 300:", " 1: line 1"]


def test_search_in_a_folder_searches_only_under_it(tree: Path) -> None:
    out = SearchFiles(root=str(tree)).execute(query="store", path="docs")
    assert out.splitlines()[0] == "1 file match 'store':" and "docs/store.py" in out and "pkg/" not in out
    assert SearchFiles(root=str(tree)).execute(query="store", path="") == search(tree, "store")  # no path: every file


@pytest.mark.parametrize("path", ["../outside/secret.py", "/etc/passwd", "link_out.py", "dir_out", "pkg/../../outside"])
def test_search_with_a_path_outside_the_root_is_refused_and_reads_nothing(tree: Path, path: str) -> None:
    with pytest.raises(ToolInputError) as e:
        SearchFiles(root=str(tree)).execute(query="SECRET", path=path)
    assert "SECRET" not in str(e.value)


def test_search_with_a_path_that_is_not_there_suggests_files(tree: Path) -> None:
    with pytest.raises(ToolInputError, match="No file 'READM.md' under the root"):
        SearchFiles(root=str(tree)).execute(query="events", path="READM.md")
