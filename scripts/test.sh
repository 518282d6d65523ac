#!/usr/bin/env bash
# The whole test suite (`make test`, and CI through .ci/run): the pure unit tests in one pytest
# process, then the integration and end-to-end tests (real Ray, SQLite, PostgreSQL, the local
# model) in another, so that neither inherits the other's threads and native state (a Ray
# driver, torch's pools, Qdrant clients); then the cluster tests (a head and two worker nodes
# started with `ray start`, PostgreSQL, Redis) in a third.
#
# A pytest process killed by a signal (a crash such as SIGSEGV, not a failing test) is run once
# more, saying so loudly; a failing test is never retried. pytest's exit code 5 (no tests
# collected) is a failure here, not a pass.
set -uo pipefail
cd "$(dirname "$0")/.."
PY=${PY:-.venv/bin/python}

# The project's modules compiled once, before anything imports them: with PYTHONDONTWRITEBYTECODE
# set (as on this machine) every process would compile them again from source: each Ray worker,
# each `chorus` subprocess, 0.3-0.8 s apiece (scripts/compile_modules.sh).
bash scripts/compile_modules.sh "$PY"

# --durations: the slowest tests are named at the end of each run, so that a suite that grows
# slow says where (the integration and end-to-end run took 27-45 minutes on 2 cores in Nov 2026).
run() {
  "$PY" -X faulthandler -m pytest -q --durations=15 "$@"
  local rc=$?
  if [ "$rc" -gt 128 ]; then
    echo "test.sh: pytest $* was killed by signal $((rc - 128)) (exit $rc), not by a failing test; running it once more" >&2
    "$PY" -X faulthandler -m pytest -q --durations=15 "$@"
    rc=$?
  fi
  if [ "$rc" -eq 5 ]; then
    echo "test.sh: pytest $* collected no tests" >&2
    rc=1
  fi
  return "$rc"
}

# The unit tests are pure and independent: pytest-xdist spreads them over the cores (on 2 cores
# 95 s -> 70 s). The integration tests stay in one process: they share one local Ray, start
# subprocesses and a model server, and two of them side by side on 2 cores gained nothing.
run -n auto tests/unit; unit=$?
run tests/integration tests/e2e; rest=$?
# The node-loss test once failed 4 of its 20 runs now and then: until Ray noticed the lost node,
# each call to an agent on it spent a task retry, and the 3 allowed ran out (Client.spawn now
# retries a run's `serve` until its actor answers or is dead for good).
run tests/cluster; cluster=$?
echo "test.sh: unit tests exit $unit, integration and end-to-end tests exit $rest, cluster tests exit $cluster" >&2
[ "$unit" -eq 0 ] && [ "$rest" -eq 0 ] && [ "$cluster" -eq 0 ]
