"""The lighthouse on the local 1.5B model: valid actions and a relit lamp, over seeds.

    .venv/bin/python -m tests.bench.bench_simulation_local                 # 5 seeds x 10 cycles (hours here)
    .venv/bin/python -m tests.bench.bench_simulation_local --seeds 1,2 --cycles 10 --out /tmp/sim.json

Each seed is a session of `actors/simulation/packs/lighthouse.yaml` with its
`random_seed` set to the seed (sent as the request seed) and synth temperature 0.7, so
seeds differ; one microcycle per cycle (one call per synth per cycle). A session stops
early once the Beacon Lamp is lit. Directors and synths run in this process (synth calls
on threads) against the embedded llama.cpp server; each seed has its own SQLite file.

Reported per seed, counted from the log:
- valid actions: SynthCognized events whose intents came from a valid reply (first try
  or after the one retry) / all SynthCognized; and valid on the first try;
- whether, and at which cycle, the lamp was lit again (within `--cycles`);
- LLM time per cycle (wall time of the cycle's step) against the kernel and store time of
  a cycle of the same world with scripted minds (`bench_simulation`): the share the
  simulation itself costs next to the model.
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from pathlib import Path

from actors.runtime.client import Client
from actors.runtime.settings import Settings
from actors.simulation.client import simulate
from actors.simulation.session import Canonical
from actors.simulation.events import SynthCognized

PACK = Path(__file__).resolve().parents[2] / "actors" / "simulation" / "packs" / "lighthouse.yaml"


def lamp_lit(canonical: Canonical) -> bool:
    lamps = [e for e in canonical.world.entities.values() if "Repairable" in e.components and "LightSource" in e.components]
    return bool(lamps) and all(e.components["LightSource"].get("lit") for e in lamps)


def run_seed(seed: int, cycles: int, temperature: float) -> dict:
    tmp = Path(tempfile.mkdtemp(prefix=f"sim-seed{seed}-"))
    pack = tmp / "lighthouse.yaml"
    pack.write_text(PACK.read_text().replace("random_seed: 42", f"random_seed: {seed}", 1))
    model = Settings.from_env().model_path  # the model assembled once, in the usual data directory
    settings = Settings.from_env(data_dir=tmp, store_url=f"sqlite:///{tmp / 'chorus.db'}", gguf_path=model)
    with Client(settings=settings, start_ray=False) as client:
        session = simulate(
            client, pack, run_id=f"seed{seed}", ray=False, max_microcycles=1,
            llm_params={"temperature": temperature, "max_tokens": 400},
        )  # fmt: skip
        times, lit_at = [], None
        for _ in range(cycles):
            t = time.perf_counter()
            (result,) = session.step(1)
            times.append(time.perf_counter() - t)
            print(f"seed {seed} cycle {result['cycle']}: {[(o['action_id'].split('_')[0], o['status']) for o in result['outcomes']]}"
                  f" {times[-1]:.0f}s", flush=True)  # fmt: skip
            if lamp_lit(Canonical.load(client.store, f"seed{seed}")):
                lit_at = result["cycle"]
                break
        cognized = [r.event for r in client.store.read_all(run_id=f"seed{seed}") if isinstance(r.event, SynthCognized)]
    valid = sum(1 for e in cognized if e.response is not None)
    first = sum(1 for e in cognized if e.response is not None and e.attempts == 1)
    return {
        "seed": seed, "cycles": len(times), "lit_at": lit_at, "cognitions": len(cognized),
        "valid": valid, "valid_first_try": first, "cycle_s": times,
    }  # fmt: skip


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seeds", default="1,2,3,4,5")
    ap.add_argument("--cycles", type=int, default=10)
    ap.add_argument("--temperature", type=float, default=0.7)
    ap.add_argument("--out", help="write the per-seed results as JSON here too")
    args = ap.parse_args(argv)
    rows = []
    for seed in [int(s) for s in args.seeds.split(",")]:
        rows.append(run_seed(seed, args.cycles, args.temperature))
        if args.out:
            Path(args.out).write_text(json.dumps(rows, indent=2))
    print("\n| seed | cycles run | lamp lit at cycle | valid actions | valid on first try | median s/cycle |")
    print("|---|---|---|---|---|---|")
    for r in rows:
        share = r["valid"] / r["cognitions"] if r["cognitions"] else 0
        first = r["valid_first_try"] / r["cognitions"] if r["cognitions"] else 0
        print(f"| {r['seed']} | {r['cycles']} | {r['lit_at'] or 'not lit'} | {r['valid']}/{r['cognitions']} ({share:.0%}) "
              f"| {first:.0%} | {statistics.median(r['cycle_s']):.0f} |")  # fmt: skip
    total = sum(r["cognitions"] for r in rows)
    print(f"\nvalid actions overall: {sum(r['valid'] for r in rows)}/{total}; "
          f"lamp lit within {args.cycles} cycles in {sum(1 for r in rows if r['lit_at'])} of {len(rows)} seeds")  # fmt: skip


if __name__ == "__main__":
    main()
