#!/usr/bin/env bash
# Compile the project's Python modules to bytecode (__pycache__), as `pip install` of a wheel
# does for an installed package. An editable install (make setup) leaves them as source, and
# where PYTHONDONTWRITEBYTECODE is set no process writes the cache itself: then every process
# (the `chorus` command, each Ray worker) compiles ~220 modules again, 0.3-0.8 s apiece
# (tests/bench/bench_cli_overhead.py). A module edited since is compiled afresh as usual: a
# stale cache is never used. Usage: scripts/compile_modules.sh [PYTHON]
set -euo pipefail
cd "$(dirname "$0")/.."
"${1:-.venv/bin/python}" -m compileall -q -j 0 actors events projections evals tests examples >/dev/null \
  || echo "compile_modules: some modules did not compile (importing them will say why)" >&2
