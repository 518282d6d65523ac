"""What a `chorus run` costs around its model calls, with a Ray of its own per command against
the machine's shared Ray head (actors.runtime.ray_head).

    .venv/bin/python tests/bench/bench_cli_overhead.py [--runs 5]            # scripted model
    .venv/bin/python tests/bench/bench_cli_overhead.py --model [--runs 3]    # the local model

Scripted: an OpenAI-compatible endpoint on loopback answers at once, so a command's wall time
is all overhead. `--model`: `make demo`'s question on the embedded model, its server started
first and kept up; overhead = wall time - the run's LLM call time (its `LlmCompleted`
latencies). Each figure is the median of `--runs` commands; the shared head is started by a
first command that is not counted. Prints one table; no threshold.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from contextlib import nullcontext
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from tests.support.sim_endpoint import serving  # noqa: E402

DEMO = ("Which file defines the Registry class?", "actors")
SCRIPTED = ("What is the answer?", ".")
PORT = "6398"  # the benchmark's own shared head


def answer(request: object) -> str:
    return json.dumps({"thought": "I know it.", "action": "answer", "args": {"answer": "42"}})


def one(env: dict[str, str], goal: str, root: str) -> tuple[float, float]:
    """(wall s, LLM s) of one `chorus run`."""
    start = time.monotonic()
    done = subprocess.run([str(ROOT / ".venv/bin/chorus"), "run", goal, "--root", root], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=1800)  # fmt: skip
    wall = time.monotonic() - start
    if done.returncode not in (0, 1):
        raise SystemExit(f"chorus run failed: {done.stderr[-1000:]}")
    run_id = next(line.split()[1] for line in done.stdout.splitlines() if line.startswith("run "))
    log = subprocess.run([str(ROOT / ".venv/bin/chorus"), "log", run_id, "--json"], cwd=ROOT, env=env,
                         capture_output=True, text=True, timeout=120, check=True)  # fmt: skip
    llm = sum(e["data"].get("latency_s", 0.0) for e in map(json.loads, log.stdout.splitlines())
              if e.get("type") == "LlmCompleted")  # fmt: skip
    return wall, llm


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--model", action="store_true", help="the local model (its server kept up) instead of a scripted one")
    args = parser.parse_args()
    goal, root = DEMO if args.model else SCRIPTED
    with tempfile.TemporaryDirectory() as tmp, (nullcontext(None) if args.model else serving(answer)) as url:
        base = {k: v for k, v in os.environ.items() if not k.startswith(("CHORUS_", "RAY_ADDRESS"))}
        base.update(CHORUS_DATA_DIR=str(Path(tmp) / "data"), CHORUS_RAY_PORT=PORT, CHORUS_RAY_IDLE_S="120")
        if url:
            base.update(CHORUS_LLM_BASE_URL=url, CHORUS_LLM_MODEL="scripted")
        else:
            subprocess.run([str(ROOT / ".venv/bin/chorus"), "model", "serve"], env=base, check=True, capture_output=True)
        figures = {}
        for name, env in (("a Ray of its own (CHORUS_RAY_IDLE_S=0)", {**base, "CHORUS_RAY_IDLE_S": "0"}),
                          ("the shared Ray head", base)):  # fmt: skip
            if env is base:
                one(env, goal, root)  # starts the head: not counted
            runs = [one(env, goal, root) for _ in range(args.runs)]
            figures[name] = (statistics.median(w for w, _ in runs), statistics.median(w - llm for w, llm in runs))
        if not url:
            subprocess.run([str(ROOT / ".venv/bin/chorus"), "model", "stop"], env=base, check=False, capture_output=True)
    load = os.getloadavg()[0]
    print(f"chorus run, {'local model' if args.model else 'scripted model'}, median of {args.runs}, load {load:.1f}")
    print("| Ray | wall s | overhead s (wall - LLM calls) |\n|---|---|---|")
    for name, (wall, overhead) in figures.items():
        print(f"| {name} | {wall:.1f} | {overhead:.1f} |")
    own, shared = figures.values()
    print(f"overhead ratio shared ÷ own: {shared[1] / own[1]:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
