"""The director cycle's cost as the world grows, against the seed's deep copy.

    .venv/bin/python -m tests.bench.bench_simulation                 # ~1-2 minutes
    .venv/bin/python -m tests.bench.bench_simulation --sizes 10,100,1000,10000 --rounds 7

The world: the lighthouse pack (3 synths, 5 places, 9 things) plus filler entities in
far-off places no synth can reach, up to 10, 100, 1,000 and 10,000 entities, so every
cycle changes the same few things whatever the size. Synth minds are scripted
(`actors.testing.simulation.scripted_mind` through the real gateway and cognition: JSON
parsed and validated), so the figures are the kernel's and the store's, not a model's.

Per size, turn about in each round (order alternating), one cycle each from the same
canonical state:
- `ours`: `director.run_cycle` (copy-on-write working copy: only what the cycle touches
  is copied; invariants checked on what it touched);
- `deep copy`: the seed's step 1 done as the seed does it, `copy.deepcopy` of the world
  and the synths' minds before the same cycle (baseline);
- `ours + commit`: `run_cycle` and its commit to a SQLite file through
  `DirectorShell.commit` (one `append_many` transaction), what a session pays per cycle
  with scripted minds.

Ratios: deep copy / ours (how many times cheaper ours is), and ours at each size / ours
at 100 entities (the goal: <= 2 at 10,000). Medians over rounds.
"""

from __future__ import annotations

import argparse
import copy
import statistics
import tempfile
import time
from pathlib import Path
from types import SimpleNamespace

from actors.runtime.llm.gateway import LlmGateway
from actors.simulation import cognition
from actors.simulation.director import CognitionTask, DirectorState, run_cycle
from actors.simulation.loader import load_pack
from actors.simulation.session import DirectorShell, record_session
from actors.testing.simulation import scripted_synths
from actors.simulation.world import EntityNode, LocationNode, World
from events.store import EventStore
from tests.bench.bench_store import machine, table

PACK = Path(__file__).resolve().parents[2] / "actors" / "simulation" / "packs" / "lighthouse.yaml"


def grown(world: World, size: int) -> World:
    """The world with filler entities up to `size`, 50 to a far-off place."""
    w = world.model_copy(deep=True)
    n, place = len(w.entities), None
    i = 0
    while n < size:
        if i % 50 == 0:
            place = LocationNode(id=f"far-{i // 50}", name=f"Far place {i // 50}")
            w.locations[place.id] = place
        entity = EntityNode(
            id=f"filler-{i}", name=f"Pebble {i}", location_id=place.id,
            components={"Portable": {"weight": 0.1}},
        )  # fmt: skip
        w.entities[entity.id] = entity
        place.contained_entity_ids.append(entity.id)
        n += 1
        i += 1
    return w


def cognize_scripted():
    gateway = LlmGateway(scripted_synths())

    def llm(request, call_index):
        return gateway.call(request, call_index).events

    def cognize(tasks: list[CognitionTask]):
        return [cognition.cognize(t.state, t.bundle, llm, model="scripted", params={}, seed=7) for t in tasks]

    return cognize


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", default="10,100,1000,10000")
    ap.add_argument("--rounds", type=int, default=7)
    args = ap.parse_args(argv)
    pack = load_pack(PACK)
    synths = {s.synth_id: s for s in pack.synths}
    cognize = cognize_scripted()
    sizes = [int(s) for s in args.sizes.split(",")]
    results: dict[int, dict[str, list[float]]] = {}
    tmp = tempfile.mkdtemp()
    for size in sizes:
        world = grown(pack.world, size)
        # a store holding this world, for the commit measurement
        store = EventStore(f"sqlite:///{tmp}/bench-{size}.db")
        sized = SimpleNamespace(name=pack.name, digest=pack.digest, warnings=[], world=world, synths=pack.synths)
        times: dict[str, list[float]] = {"ours": [], "deep copy": [], "ours + commit": []}
        run = 0

        def ours() -> None:
            run_cycle(world, DirectorState(), synths, cognize)

        def deep() -> None:
            w = copy.deepcopy(world)
            s = copy.deepcopy(synths)
            run_cycle(w, DirectorState(), s, cognize)

        ours()  # warm: imports, pydantic's first validations
        for r in range(args.rounds):
            order = [("ours", ours), ("deep copy", deep)]
            if r % 2:
                order.reverse()
            for name, fn in order:
                t = time.perf_counter()
                fn()
                times[name].append(time.perf_counter() - t)
            run += 1
            run_id = f"b{size}-{run}"
            record_session(store, run_id, sized)
            shell = DirectorShell(store, run_id, cognize, snapshot_every=0)
            t = time.perf_counter()
            shell.step(1)
            times["ours + commit"].append(time.perf_counter() - t)
        store.close()
        results[size] = times
        print(f"size {size}: ours {statistics.median(times['ours'])*1000:.2f} ms", flush=True)
    base = statistics.median(results[100]["ours"]) if 100 in results else None
    rows = []
    for size in sizes:
        t = results[size]
        ours_ms = statistics.median(t["ours"]) * 1000
        deep_ms = statistics.median(t["deep copy"]) * 1000
        ratios = [d / o for d, o in zip(t["deep copy"], t["ours"], strict=True)]
        growth = f"{statistics.median(t['ours']) / base:.2f}" if base else "-"
        rows.append([f"{size:,}", f"{ours_ms:.2f}", f"{deep_ms:.2f}", f"{statistics.median(ratios):.1f}x",
                     growth, f"{statistics.median(t['ours + commit']) * 1000:.2f}"])  # fmt: skip
    print()
    print(machine())
    print(
        table(
            "Director cycle, scripted minds (medians)",
            ["entities", "ours ms", "deep copy ms", "deep copy / ours", "ours / ours@100", "ours + SQLite commit ms"],
            rows,
        )
    )


if __name__ == "__main__":
    main()
