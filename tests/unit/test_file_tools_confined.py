"""Issue #17 ("Bounded and confined") for the file tools: reads stream with a byte cap, FIFOs,
sockets and devices are never opened, a folder swapped for a symlink mid-read cannot lead
outside the root, and symlink loops and NUL bytes are input errors. No Ray, no model."""

from __future__ import annotations

import json
import os
import socket
import stat
import subprocess
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from actors.codeqa.occurrences import load_texts
from actors.codeqa.tools import GetRepoDocumentation, ReadCode, SearchKeyword
from actors.index.repository import scan
from actors.tasks.memory import index_workspace
from actors.tasks.tools import ReadFiles
from actors.tools import paths as paths_module
from actors.tools.files import ReadFile, SearchFiles, read
from actors.tools.paths import ToolInputError, read_lines, walk_files

# -- helpers ----------------------------------------------------------------------------------


def no_hang(fn: Callable[[], Any], release: list[Path]) -> Any:
    """Run `fn` in a thread; if it is still blocked (on opening a FIFO) after a generous
    while, open the FIFOs for writing to release it, then fail. Not a timing assertion: a
    correct tool never opens a FIFO at all, so it never waits here."""
    box: dict[str, Any] = {}

    def run() -> None:
        try:
            box["value"] = fn()
        except BaseException as e:  # noqa: BLE001 -- handed back to the test below
            box["error"] = e

    worker = threading.Thread(target=run, daemon=True)
    worker.start()
    worker.join(30)
    if worker.is_alive():
        for fifo in release:
            try:
                os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
            except OSError:
                pass
        worker.join(5)
        pytest.fail(f"{fn} blocked on a FIFO")
    if "error" in box:
        raise box["error"]
    return box.get("value")


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    root = tmp_path / "root"
    (root / "repo" / "pkg").mkdir(parents=True)
    (root / "repo" / "README.md").write_text("# repo\nA small repository for the file tools.\n")
    (root / "repo" / "pkg" / "mod.py").write_text("def snapshot():\n    return 'snapshot'\n")
    return root


def specials(folder: Path) -> list[Path]:
    """A FIFO and a socket (and a device, where mknod is allowed) in `folder`; the FIFOs."""
    fifo = folder / "pipe.txt"
    os.mkfifo(fifo)
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        sock.bind(str(folder / "sock.py"))
    except OSError:
        pass
    finally:
        sock.close()
    try:
        os.mknod(folder / "dev.md", stat.S_IFCHR | 0o600, os.makedev(1, 5))  # like /dev/zero
    except (PermissionError, OSError):
        pass
    return [fifo]


# -- streaming with a byte cap ------------------------------------------------------------------


def test_reading_three_lines_of_a_big_file_reads_a_bounded_part(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    big = tmp_path / "big.log"
    line = "x" * 99 + "\n"
    big.write_text(line * 50_000)  # 5 MB
    monkeypatch.setattr(paths_module, "READ_SCAN_BYTES", 100_000)
    read_bytes = 0
    real_read = os.read

    def counting_read(fd: int, n: int) -> bytes:
        nonlocal read_bytes
        data = real_read(fd, n)
        read_bytes += len(data)
        return data

    monkeypatch.setattr(os, "read", counting_read)
    out = read(tmp_path, "big.log", 1, 3)
    monkeypatch.setattr(os, "read", real_read)
    assert read_bytes <= 100_000 + 8192 + 1
    lines = out.splitlines()
    assert lines[0] == "big.log, lines 1-3 of at least 1000:"
    assert lines[1] == f"1: {'x' * 99}"
    assert "reading stopped at 100000 bytes" in lines[-1] and "5000000 bytes" in lines[-1]
    with pytest.raises(ToolInputError, match="too big to read that far"):
        read(tmp_path, "big.log", 2000, 2001)


def test_read_code_streams_with_the_cap_and_says_so(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "r").mkdir()
    (tmp_path / "r" / "big.py").write_text("pass\n" * 100_000)
    monkeypatch.setattr(paths_module, "READ_SCAN_BYTES", 50_000)
    out = ReadCode(root=str(tmp_path)).execute(path="r/big.py", start_line=1, end_line=3)
    assert out.splitlines()[0] == "r/big.py, lines 1-3 of at least 10000:"
    assert "reading stopped at 50000 bytes" in out
    with pytest.raises(ToolInputError, match="too big to read that far"):
        ReadCode(root=str(tmp_path)).execute(path="r/big.py", start_line=20_000)


def test_files_under_the_cap_read_exactly_as_before(tmp_path: Path) -> None:
    text = "a\r\nb\rc\n\nd\x85e\u2028f" + "é" * 10 + "\n"
    (tmp_path / "t.txt").write_text(text, encoding="utf-8", newline="")
    out = read(tmp_path, "t.txt", 1, 10)
    lines = text.splitlines()
    assert out.splitlines()[0] == f"t.txt, lines 1-{len(lines)} of {len(lines)}:"
    assert out.endswith(f"(end of file: {len(lines)} lines)")


@settings(max_examples=200, deadline=None)
@given(
    data=st.binary(max_size=300).map(lambda b: b.replace(b"\0", b"")) | st.text(alphabet="ab\r\n\x85é€\u2028", max_size=80).map(str.encode),
    chunk=st.integers(1, 7),
    first=st.integers(1, 12),
    span=st.integers(0, 12),
)
def test_streamed_lines_are_those_of_splitlines(tmp_path_factory: pytest.TempPathFactory, data: bytes, chunk: int, first: int, span: int) -> None:
    path = tmp_path_factory.mktemp("s") / "f"
    path.write_bytes(data)
    expected = data.decode("utf-8", errors="replace").splitlines()
    fd = os.open(path, os.O_RDONLY)
    try:
        window = read_lines(fd, first, first + span, chunk=chunk)
    finally:
        os.close(fd)
    assert len(window) == len(expected) and not window.cut
    assert window.kept == expected[first - 1 : first + span]


# -- FIFOs, sockets and devices are never opened --------------------------------------------------


def test_no_file_tool_opens_a_fifo_socket_or_device(workspace: Path) -> None:
    fifos = specials(workspace / "repo")
    root = str(workspace)
    for name in ("pipe.txt", "sock.py", "dev.md"):
        if not os.path.lexists(workspace / "repo" / name):
            continue
        with pytest.raises(ToolInputError, match="not a regular file"):
            no_hang(lambda n=name: ReadFile(root=root).execute(path=f"repo/{n}"), fifos)
        with pytest.raises(ToolInputError, match="not a regular file"):
            no_hang(lambda n=name: ReadCode(root=root).execute(path=f"repo/{n}"), fifos)
        out = json.loads(no_hang(lambda n=name: ReadFiles(root=root).execute(paths=[f"repo/{n}"]), fifos))
        assert out["files"] == {} and "not a regular file" in out["errors"][f"repo/{name}"]
    assert "repo/pkg/mod.py" in no_hang(lambda: SearchFiles(root=root).execute(query="snapshot"), fifos)
    assert "repo/pkg/mod.py" in no_hang(lambda: SearchKeyword(root=root).execute(keyword="snapshot"), fifos)
    assert sorted(no_hang(lambda: load_texts(workspace), fifos)) == ["repo/README.md", "repo/pkg/mod.py"]
    assert sorted(no_hang(lambda: index_workspace(workspace), fifos)) == ["repo/README.md", "repo/pkg/mod.py"]
    assert sorted(no_hang(lambda: scan(workspace / "repo"), fifos).texts) == ["README.md", "pkg/mod.py"]
    assert [p.name for p in walk_files(workspace)] == ["README.md", "mod.py"]
    listing = no_hang(lambda: ReadFile(root=root).execute(path="repo"), fifos)
    tree = no_hang(lambda: GetRepoDocumentation(root=root).execute(repo="repo"), fifos)
    for name in ("pipe.txt", "sock.py", "dev.md"):
        assert name not in listing and name not in tree


def test_a_fifo_named_like_the_documentation_is_not_opened(workspace: Path) -> None:
    (workspace / "repo" / "README.md").unlink()
    fifos = [workspace / "repo" / "llms.txt"]
    os.mkfifo(fifos[0])
    out = no_hang(lambda: GetRepoDocumentation(root=str(workspace)).execute(repo="repo"), fifos)
    assert out.startswith("repo has no llms.txt or README.md (missing)")


# -- the path race ------------------------------------------------------------------------------

ATTEMPTS = 10_000


SWAPPER = """
import ctypes, os, sys
d, real, link = sys.argv[1:4]
libc = ctypes.CDLL(None, use_errno=True)
renameat2 = getattr(libc, "renameat2", None)
AT_FDCWD, RENAME_EXCHANGE = -100, 2


def exchange():  # d <-> link in one step: d is always there, a folder or a link to outside
    if renameat2(AT_FDCWD, d.encode(), AT_FDCWD, link.encode(), RENAME_EXCHANGE) != 0:
        raise OSError(ctypes.get_errno(), "renameat2")


def four_renames():  # where renameat2 is missing: d is briefly absent
    os.rename(d, real)
    os.rename(link, d)
    os.rename(d, link)
    os.rename(real, d)


try:
    exchange()
    exchange()
    swap = exchange
except (OSError, TypeError):
    swap = four_renames
print("ready", flush=True)
while True:
    swap()
"""


@pytest.fixture
def racing(tmp_path: Path):
    """root/r/d/f.txt says INSIDE; outside/f.txt says OUTSIDE; another process keeps swapping
    root/r/d between the real folder and a symlink to outside while the test reads
    root/r/d/f.txt (a process, not a thread: it races on the other core, not for the GIL)."""
    root, outside = tmp_path / "root", tmp_path / "outside"
    (root / "r" / "d").mkdir(parents=True)
    outside.mkdir()
    (root / "r" / "d" / "f.txt").write_text("INSIDE\n")
    (outside / "f.txt").write_text("OUTSIDE\n")
    (root / "r" / "link").symlink_to(outside, target_is_directory=True)
    args = [str(root / "r" / n) for n in ("d", "real", "link")]
    swapper = subprocess.Popen([sys.executable, "-c", SWAPPER, *args], stdout=subprocess.PIPE, text=True)
    try:
        assert swapper.stdout is not None and swapper.stdout.readline() == "ready\n"
        yield root
    finally:
        swapper.kill()
        swapper.wait()


def _race(call: Callable[[], str]) -> tuple[int, int]:
    escapes = inside = 0
    for _ in range(ATTEMPTS):
        try:
            out = call()
        except ToolInputError:
            continue
        escapes += "OUTSIDE" in out
        inside += "INSIDE" in out
    return escapes, inside


def test_read_file_never_reads_outside_while_a_folder_is_swapped_for_a_link(racing: Path) -> None:
    tool = ReadFile(root=str(racing))
    escapes, inside = _race(lambda: tool.execute(path="r/d/f.txt"))
    assert escapes == 0 and inside > 0


def test_read_code_never_reads_outside_while_a_folder_is_swapped_for_a_link(racing: Path) -> None:
    tool = ReadCode(root=str(racing))
    escapes, inside = _race(lambda: tool.execute(path="r/d/f.txt"))
    assert escapes == 0 and inside > 0


def test_read_files_never_reads_outside_while_a_folder_is_swapped_for_a_link(racing: Path) -> None:
    tool = ReadFiles(root=str(racing))
    escapes, inside = _race(lambda: tool.execute(paths=["r/d/f.txt"]))
    assert escapes == 0 and inside > 0


# -- symlink loops and NUL bytes are input errors ---------------------------------------------------


@pytest.fixture
def looped(workspace: Path) -> Path:
    (workspace / "repo" / "a").symlink_to("b")
    (workspace / "repo" / "b").symlink_to("a")
    return workspace


@pytest.mark.parametrize("path", ["repo/a", "repo/a/x.py", "repo/b/c/d"])
def test_a_symlink_loop_is_an_input_error(looped: Path, path: str) -> None:
    root = str(looped)
    with pytest.raises(ToolInputError, match="symlink loop"):
        ReadFile(root=root).execute(path=path)
    with pytest.raises(ToolInputError, match="symlink loop"):
        ReadCode(root=root).execute(path=path)
    out = json.loads(ReadFiles(root=root).execute(paths=[path]))
    assert "symlink loop" in out["errors"][path]
    with pytest.raises(ToolInputError, match="symlink loop"):
        SearchKeyword(root=root).execute(keyword="snapshot", repo=path)


@pytest.mark.parametrize("path", ["repo/\0README.md", "\0", "repo/pkg/mod.py\0:3"])
def test_a_nul_byte_in_a_path_is_an_input_error(workspace: Path, path: str) -> None:
    root = str(workspace)
    with pytest.raises(ToolInputError, match="NUL byte"):
        ReadFile(root=root).execute(path=path)
    with pytest.raises(ToolInputError, match="NUL byte"):
        ReadCode(root=root).execute(path=path)
    out = json.loads(ReadFiles(root=root).execute(paths=[path]))
    assert "NUL byte" in out["errors"][path]
    with pytest.raises(ToolInputError, match="NUL byte"):
        GetRepoDocumentation(root=root).execute(repo=path)
