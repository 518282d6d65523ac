"""Seed 003's repository tools on small repositories built in each test (no Ray, no model)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from actors.codeqa.config import CodeQaConfig
from actors.codeqa.tools import (
    GetRepoDocumentation,
    ListAvailableRepositories,
    ReadCode,
    SearchKeyword,
)
from actors.tools.paths import ToolInputError


def write(root: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root


@pytest.fixture
def repos(tmp_path: Path) -> Path:
    root = tmp_path / "repos"
    return write(
        root,
        {
            "signify/README.md": "# signify\nSigns and verifies tokens.\n",
            "signify/signify/auth.py": "def authenticate(user):\n    token = make_token(user)\n    return verify(token)\n",
            "signify/signify/tokens.py": "def make_token(user):\n    return 'token:' + user  # token\n",
            "signify/docs/notes.txt": "Token rotation is weekly.\n",
            "shop/llms.txt": "shop: a web shop for LLMs to read.\n",
            "shop/README.md": "# shop (the README, not llms.txt)\n",
            "shop/cart.py": "def checkout(cart):\n    return sum(cart)\n",
        },
    )


def tool(cls, root: Path, **config):
    return cls(root=str(root), **config)


# -- list_available_repositories --------------------------------------------------------------


def test_lists_repository_folders_sorted_and_nothing_else(repos: Path) -> None:
    (repos / "loose_file.txt").write_text("not a repository")
    (repos / ".hidden").mkdir()
    (repos / "__pycache__").mkdir()
    out = tool(ListAvailableRepositories, repos).execute()
    assert out.splitlines()[0] == "2 repositories: shop, signify"


def test_an_empty_repositories_folder_is_a_clear_observation(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    out = tool(ListAvailableRepositories, tmp_path / "empty").execute()
    assert out.startswith("No repositories: the repositories folder holds no sub-folders")


def test_a_missing_repositories_folder_is_an_error_observation_not_a_crash(tmp_path: Path) -> None:
    lister = tool(ListAvailableRepositories, tmp_path / "gone")  # creating it does not fail
    with pytest.raises(ToolInputError, match=r"The repositories folder .*gone does not exist\."):
        lister.execute()
    with pytest.raises(ToolInputError, match="does not exist"):
        tool(SearchKeyword, tmp_path / "gone").execute(keyword="x")


def test_a_symlinked_repository_pointing_outside_is_not_listed(repos: Path, tmp_path: Path) -> None:
    outside = write(tmp_path / "outside", {"secret.py": "KEY = 1\n"})
    os.symlink(outside, repos / "linked")
    assert "linked" not in tool(ListAvailableRepositories, repos).execute()
    with pytest.raises(ToolInputError, match="link that points outside"):
        tool(GetRepoDocumentation, repos).execute(repo="linked")


# -- get_repo_documentation ---------------------------------------------------------------------


def test_documentation_prefers_llms_txt_over_readme(repos: Path) -> None:
    out = tool(GetRepoDocumentation, repos).execute(repo="shop")
    lines = out.splitlines()
    assert lines[0] == "Documentation of shop (shop/llms.txt):"
    assert lines[1] == "shop: a web shop for LLMs to read."
    assert "the README, not llms.txt" not in out
    assert lines[lines.index("Directory tree of shop:") + 1 :] == ["shop/", "  cart.py", "  llms.txt", "  README.md"]


def test_documentation_falls_back_to_readme_then_to_the_tree_only(repos: Path) -> None:
    out = tool(GetRepoDocumentation, repos).execute(repo="signify")
    assert out.splitlines()[:3] == ["Documentation of signify (signify/README.md):", "# signify", "Signs and verifies tokens."]
    assert out.splitlines()[-8:] == [
        "Directory tree of signify:",
        "signify/",
        "  README.md",
        "  docs/",
        "    notes.txt",
        "  signify/",
        "    auth.py",
        "    tokens.py",
    ]
    (repos / "signify" / "README.md").unlink()
    bare = tool(GetRepoDocumentation, repos).execute(repo="signify")
    assert bare.splitlines()[0] == "signify has no llms.txt or README.md (missing); its directory tree only:"
    assert bare.splitlines()[1:] == ["signify/", "  docs/", "    notes.txt", "  signify/", "    auth.py", "    tokens.py"]


def test_documentation_and_tree_are_capped_with_a_note(repos: Path) -> None:
    write(repos, {"big/README.md": "".join(f"line {i}\n" for i in range(1, 31))})
    write(repos, {f"big/src/m{i:02}.py": "x = 1\n" for i in range(12)})
    config = CodeQaConfig.load({"documentation": {"max_doc_lines": 10, "max_tree_entries": 5}})
    out = tool(GetRepoDocumentation, repos, codeqa=config).execute(repo="big")
    lines = out.splitlines()
    assert lines[1:11] == [f"line {i}" for i in range(1, 11)] and "line 11" not in out
    assert lines[11] == "[documentation cut at 10 of 30 lines; read_code(path='big/README.md', start_line=11) for the rest]"
    assert lines[-1] == "[9 more entries not shown]"  # 1 folder + 12 files + README = 14 entries, 5 shown


def test_unknown_repository_names_the_ones_there_are(repos: Path) -> None:
    with pytest.raises(ToolInputError) as e:
        tool(GetRepoDocumentation, repos).execute(repo="signifyy")
    assert str(e.value) == "No repository 'signifyy'. Did you mean 'signify'? The repositories are: shop, signify."


@pytest.mark.parametrize("name", ["../other", "../../etc", "/etc", "signify/../../x"])
def test_documentation_refuses_paths_outside_the_folder(repos: Path, name: str) -> None:
    with pytest.raises(ToolInputError, match="^Refused: .* is outside the root folder"):
        tool(GetRepoDocumentation, repos).execute(repo=name)


# -- search_keyword -----------------------------------------------------------------------------


def test_search_counts_occurrences_per_file_case_insensitively_and_sorts(repos: Path) -> None:
    out = tool(SearchKeyword, repos).execute(keyword="TOKEN")
    assert out.splitlines() == [
        "4 files contain 'token' (case-insensitive), most occurrences first:",
        "signify/signify/auth.py: 3 (line 2: token = make_token(user))",
        "signify/signify/tokens.py: 3 (line 1: def make_token(user):)",
        "signify/README.md: 1 (line 2: Signs and verifies tokens.)",
        "signify/docs/notes.txt: 1 (line 1: Token rotation is weekly.)",
        "Next: read_code(path, start_line) around a line shown, or answer if a line shows the answer.",
    ]


def test_search_counts_several_words_together_and_per_word(repos: Path) -> None:
    out = tool(SearchKeyword, repos).execute(keyword="checkout, verify")
    assert out.splitlines()[1:3] == [
        "shop/cart.py: 1 (checkout 1; line 1: def checkout(cart):)",
        "signify/signify/auth.py: 1 (verify 1; line 3: return verify(token))",
    ]


def test_search_points_at_the_definition_when_there_is_one(tmp_path: Path) -> None:
    text = "import limits\n# the LIMIT of tries\n\nMAX_LIMIT = 12\n\n\ndef check_limit(n):\n    return n < MAX_LIMIT\n"
    root = write(tmp_path / "repos", {"r/a.py": text, "r/b.txt": "no definition, a limit\n"})
    lines = tool(SearchKeyword, root).execute(keyword="limit").splitlines()
    assert lines[1:3] == ["r/a.py: 5 (line 4: MAX_LIMIT = 12)", "r/b.txt: 1 (line 1: no definition, a limit)"]


def test_search_keeps_the_top_50_files_and_says_how_many_matched(tmp_path: Path) -> None:
    files = {f"big/f{i:03}.py": "hit\n" * (i % 7 + 1) for i in range(60)}
    root = write(tmp_path / "repos", files)
    lines = tool(SearchKeyword, root).execute(keyword="hit").splitlines()
    assert lines[0] == "60 files contain 'hit' (case-insensitive), most occurrences first; the top 50:"
    hits = lines[1:-1]
    assert len(hits) == 50
    counts = [int(line.split(": ")[1].split(" ")[0]) for line in hits]
    assert counts == sorted(counts, reverse=True) and counts[0] == 7
    sevens = [line.split(":")[0] for line in hits if line.split(": ")[1].startswith("7 ")]
    assert sevens == sorted(sevens)  # ties by path
    assert hits[14].endswith("(line 1: hit)") and hits[15].endswith("(line 1)")  # text for the best 15


def test_short_keywords_count_only_where_a_word_starts(tmp_path: Path) -> None:
    root = write(tmp_path / "repos", {"r/a.py": "valid = user_id + id(x)  # getId\n", "r/b.py": "invalid\n"})
    out = tool(SearchKeyword, root).execute(keyword="id")
    assert out.splitlines()[1] == "r/a.py: 3 (line 1: valid = user_id + id(x)  # getId)"
    assert out.startswith("1 file contains 'id' (case-insensitive)")


def test_search_in_one_repository_and_with_no_hits(repos: Path) -> None:
    out = tool(SearchKeyword, repos).execute(keyword="token", repo="shop")
    assert out.startswith("No file contains 'token' (case-insensitive).")
    assert "signify/signify/auth.py" in tool(SearchKeyword, repos).execute(query="verify")  # an alias
    with pytest.raises(ToolInputError, match="search_keyword needs a keyword"):
        tool(SearchKeyword, repos).execute(keyword="  ")
    with pytest.raises(ToolInputError, match="No repository 'nope'"):
        tool(SearchKeyword, repos).execute(keyword="x", repo="nope")


def test_search_skips_binary_files_and_links_out(repos: Path, tmp_path: Path) -> None:
    (repos / "shop" / "blob.dat").write_bytes(b"token\0token token")
    outside = write(tmp_path / "outside", {"leak.py": "token token token token token token\n"})
    os.symlink(outside / "leak.py", repos / "shop" / "leak.py")
    out = tool(SearchKeyword, repos).execute(keyword="token")
    assert "blob.dat" not in out and "leak.py" not in out


# -- read_code ----------------------------------------------------------------------------------


@pytest.fixture
def long_repo(tmp_path: Path) -> Path:
    return write(tmp_path / "repos", {"lib/long.py": "".join(f"line_{i} = {i}\n" for i in range(1, 451))})


def test_read_shows_exactly_the_range_asked_with_line_numbers(long_repo: Path) -> None:
    out = tool(ReadCode, long_repo).execute(path="lib/long.py", start_line=98, end_line=102)
    assert out.splitlines() == [
        "lib/long.py, lines 98-102 of 450:",
        " 98: line_98 = 98",
        " 99: line_99 = 99",
        "100: line_100 = 100",
        "101: line_101 = 101",
        "102: line_102 = 102",
        "(showing lines 98-102 of 450; to continue read start_line=103)",
    ]


def test_read_truncates_at_200_lines_and_says_so(long_repo: Path) -> None:
    lines = tool(ReadCode, long_repo).execute(path="lib/long.py").splitlines()
    assert lines[0] == "lib/long.py, lines 1-200 of 450:"
    assert len(lines) == 202 and lines[200] == "200: line_200 = 200"
    assert lines[-1] == (
        "(truncated at 200 lines: showing lines 1-200 of 450; to continue call read_code with start_line=201)"
    )
    tail = tool(ReadCode, long_repo).execute(path="lib/long.py", start_line=401, end_line=900).splitlines()
    assert tail[0] == "lib/long.py, lines 401-450 of 450:" and tail[-1] == "(end of file: 450 lines)"
    shorter = tool(ReadCode, long_repo, codeqa={"code_reading": {"max_lines": 3}}).execute(path="lib/long.py")
    assert shorter.splitlines()[-1].startswith("(truncated at 3 lines: showing lines 1-3 of 450")


def test_read_refuses_a_range_past_the_end_or_backwards(long_repo: Path) -> None:
    with pytest.raises(ToolInputError) as e:
        tool(ReadCode, long_repo).execute(path="lib/long.py", start_line=451)
    assert str(e.value) == "'lib/long.py' has 450 lines; start_line=451 is past the end. Use start_line between 1 and 450."
    with pytest.raises(ToolInputError, match="end_line=5 is before start_line=9"):
        tool(ReadCode, long_repo).execute(path="lib/long.py", start_line=9, end_line=5)
    with pytest.raises(ToolInputError, match="start_line must be a whole number"):
        tool(ReadCode, long_repo).execute(path="lib/long.py", start_line="ten")


def test_read_refuses_a_binary_file(repos: Path) -> None:
    (repos / "shop" / "logo.dat").write_bytes(bytes(range(256)))
    with pytest.raises(ToolInputError) as e:
        tool(ReadCode, repos).execute(path="shop/logo.dat")
    assert str(e.value) == "'shop/logo.dat' is a binary file (256 bytes); read_code shows text files only."


def test_read_accepts_a_path_with_its_line_or_without_the_repository(repos: Path) -> None:
    around = tool(ReadCode, repos).execute(path="signify/signify/auth.py:3")
    assert around.splitlines()[0] == "signify/signify/auth.py, lines 1-3 of 3:"  # from 3 - 5, at least 1
    inner = tool(ReadCode, repos).execute(path="cart.py")  # only shop has it
    assert inner.splitlines()[0] == "shop/cart.py, lines 1-2 of 2:"
    aliased = tool(ReadCode, repos).execute(file_path="shop/cart.py", start=2)
    assert aliased.splitlines()[:2] == ["shop/cart.py, lines 2-2 of 2:", "2:     return sum(cart)"]


def test_read_of_a_missing_file_or_a_folder_says_what_there_is(repos: Path) -> None:
    with pytest.raises(ToolInputError) as e:
        tool(ReadCode, repos).execute(path="signify/login.py")
    assert str(e.value).startswith("No file 'signify/login.py' in the repositories.")
    assert str(e.value).endswith("Use a path as search_keyword prints it, starting with the repository name.")
    with pytest.raises(ToolInputError, match=r"'signify/signify' is a folder, not a file; it holds: auth.py, tokens.py\."):
        tool(ReadCode, repos).execute(path="signify/signify")


@pytest.mark.parametrize("path", ["../outside/secret.py", "signify/../../outside/secret.py", "/etc/passwd"])
def test_read_refuses_paths_outside_the_folder(repos: Path, tmp_path: Path, path: str) -> None:
    write(tmp_path / "outside", {"secret.py": "KEY = 1\n"})
    with pytest.raises(ToolInputError, match="^Refused: .* is outside the root folder"):
        tool(ReadCode, repos).execute(path=path)


def test_read_refuses_an_absolute_path_inside_with_a_hint(repos: Path) -> None:
    with pytest.raises(ToolInputError, match=r"Did you mean path='shop/cart.py'\?"):
        tool(ReadCode, repos).execute(path="/shop/cart.py")


def test_read_refuses_a_symlink_that_points_outside(repos: Path, tmp_path: Path) -> None:
    outside = write(tmp_path / "outside", {"secret.py": "KEY = 1\n"})
    os.symlink(outside / "secret.py", repos / "shop" / "secret.py")
    os.symlink(outside, repos / "shop" / "vendor")
    for path in ("shop/secret.py", "shop/vendor/secret.py"):
        with pytest.raises(ToolInputError, match="link that points outside the root folder"):
            tool(ReadCode, repos).execute(path=path)
