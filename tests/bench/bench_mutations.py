"""What replay catches on its own: every fixture mutation of tests/support/mutations.py,
resealed as a forger would (so the digest chain cannot tell), then loaded and replayed.

    .venv/bin/python -m tests.bench.bench_mutations

Prints, per mutation kind, how many were refused by the loader (a stream's versions no longer
follow), by replay (a divergence), or survived (replayed as identical), and the survivors."""

from __future__ import annotations

import json
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

from actors.runtime.replay import FixtureError, load_fixture, replay_run
from actors.runtime.replay.fixtures import sealed_text
from tests.support.mutations import mutations, read_rows

FIXTURES = sorted((Path(__file__).parents[1] / "fixtures" / "runs").glob("*.jsonl"))


def outcome(path: Path) -> str:
    try:
        store, run_id = load_fixture(path)
    except FixtureError:
        return "loader"
    with store:
        try:
            report = replay_run(store, run_id)
        except Exception:  # noqa: BLE001 - a crash of replay is a catch too, but say so
            return "crash"
    return "survived" if report.ok else "replay"


def main() -> int:
    tally: dict[str, Counter[str]] = {}
    survivors: list[str] = []
    started = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "forged.jsonl"
        for fixture in FIXTURES:
            rows, _ = read_rows(fixture.read_text())
            for name, mutated in mutations(rows):
                path.write_text(sealed_text([{k: v for k, v in r.items() if k != "digest"} for r in mutated]))
                result = outcome(path)
                tally.setdefault(name.split()[0], Counter())[result] += 1
                if result == "survived":
                    survivors.append(f"{fixture.stem}: {name}")
    total = sum(sum(c.values()) for c in tally.values())
    print(f"{'mutation':<12} {'loader':>7} {'replay':>7} {'crash':>6} {'survived':>9}")
    for kind, c in sorted(tally.items()):
        print(f"{kind:<12} {c['loader']:>7} {c['replay']:>7} {c['crash']:>6} {c['survived']:>9}")
    print("survivors:", json.dumps(survivors, indent=1))
    caught = total - len(survivors)
    print(f"replay alone (resealed forgeries): {caught}/{total} refused ({100 * caught / total:.1f}%), "
          f"{time.perf_counter() - started:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
