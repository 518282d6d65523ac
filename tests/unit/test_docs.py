"""The documentation: the site builds with `mkdocs build --strict` (no warnings), the README
stays a front page and BENCHMARKS.md one current page, and every relative link in the README
points at a file of the repository."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
README_MAX = 12_000
BENCHMARKS_MAX = 20_000


def _mkdocs() -> list[str] | None:
    """The venv's mkdocs (next to this interpreter), else one on PATH."""
    beside = Path(sys.executable).with_name("mkdocs")
    if beside.exists():
        return [str(beside)]
    found = shutil.which("mkdocs")
    return [found] if found else None


def test_site_builds_strict(tmp_path: Path) -> None:
    mkdocs = _mkdocs()
    if mkdocs is None:
        message = "mkdocs is not installed (the `docs` extra: pip install -e '.[docs]')"
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    done = subprocess.run(
        [*mkdocs, "build", "--strict", "--config-file", str(ROOT / "mkdocs.yml"), "--site-dir", str(tmp_path / "site")],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=600,
    )
    assert done.returncode == 0, f"mkdocs build --strict failed:\n{done.stdout}\n{done.stderr}"
    warnings = [line for line in done.stderr.splitlines() if line.startswith("WARNING")]
    assert not warnings, "\n".join(warnings)
    assert (tmp_path / "site" / "index.html").exists()
    assert (tmp_path / "site" / "reference" / "index.html").exists()


def test_readme_is_a_front_page() -> None:
    size = (ROOT / "README.md").stat().st_size
    assert size <= README_MAX, f"README.md is {size} bytes (at most {README_MAX}); the manual goes in docs/"


def test_benchmarks_is_one_current_page() -> None:
    size = (ROOT / "BENCHMARKS.md").stat().st_size
    assert size <= BENCHMARKS_MAX, (
        f"BENCHMARKS.md is {size} bytes (at most {BENCHMARKS_MAX}); history goes to CHANGELOG.md and docs/decisions/"
    )


LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")


def _relative_links(text: str) -> list[str]:
    text = re.sub(r"```.*?```", "", text, flags=re.S)  # code blocks hold no links
    links = []
    for target in LINK.findall(text):
        if re.match(r"^[a-z][a-z0-9+.-]*:", target) or target.startswith("#"):
            continue  # a URL, or an anchor of the README itself
        links.append(target.split("#", 1)[0])
    return links


def test_readme_relative_links_resolve() -> None:
    links = _relative_links((ROOT / "README.md").read_text(encoding="utf-8"))
    assert links, "the README links into docs/"
    missing = [t for t in links if not (ROOT / t).resolve().is_file()]
    assert not missing, f"README.md links to files that do not exist: {missing}"
    outside = [t for t in links if not (ROOT / t).resolve().is_relative_to(ROOT)]
    assert not outside, f"README.md links outside the repository: {outside}"


def test_readme_anchors_exist() -> None:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    headings = {
        re.sub(r"[^\w\- ]", "", h.strip().lower()).replace(" ", "-")
        for h in re.findall(r"^#{1,6} (.+)$", re.sub(r"```.*?```", "", text, flags=re.S), flags=re.M)
    }
    anchors = [t[1:] for t in LINK.findall(text) if t.startswith("#")]
    assert anchors, "the README opens with a table of contents"
    assert not [a for a in anchors if a not in headings], f"README anchors without a heading: {anchors}"
