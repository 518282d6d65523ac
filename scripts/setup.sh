#!/usr/bin/env bash
# Set up Chorus on a fresh machine: a virtual environment with everything installed
# (llama.cpp built for these CPUs), and the local model assembled and verified.
# Idempotent: a second run checks and does nothing (a few seconds).
set -euo pipefail
cd "$(dirname "$0")/.."

PYTHON=${PYTHON:-python3}
VENV=.venv
PY="$VENV/bin/python"
# llama.cpp's default "native" build dies with "Illegal instruction" on these machines.
export CMAKE_ARGS="${CMAKE_ARGS:--DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON}"

say() { echo "setup: $*" >&2; }

if [ ! -x "$PY" ]; then
  say "creating $VENV with $($PYTHON --version 2>&1)"
  "$PYTHON" -m venv "$VENV"
  "$PY" -m pip install -q --upgrade pip
fi

installed() { "$PY" -c "import importlib.metadata as m, sys; sys.exit(0 if m.version('$1').startswith('$2') else 1)" 2>/dev/null; }

# Every install goes through constraints.txt, as a plain `pip install` does in docs/getting-started.md:
# it pins torch to its CPU build (an unpinned torch pulls gigabytes of CUDA wheels). torch first.
TORCH="$(sed -n 's/^torch==//p' constraints.txt)"
if ! installed torch "$TORCH"; then
  say "installing torch==$TORCH (CPU)"
  "$PY" -m pip install -c constraints.txt torch
fi

# Chorus itself, editable, with the local LLM server, the test tools and Ray Serve. Skipped when the
# dependency list has not changed since the last successful install.
STAMP="$VENV/.chorus-deps"
EXTRAS="local,test,serve,docs"
WANT="$(cat pyproject.toml constraints.txt - <<< "$EXTRAS" | sha256sum | cut -d' ' -f1)"  # the extras too: a new one reinstalls
if [ "$(cat "$STAMP" 2>/dev/null)" != "$WANT" ] || ! installed chorus "" || ! installed llama-cpp-python ""; then
  if ! installed llama-cpp-python ""; then
    say "installing Chorus; this builds llama.cpp from source (about 7 minutes on 2 cores)"
  else
    say "installing Chorus"
  fi
  "$PY" -m pip install -c constraints.txt -e ".[$EXTRAS]"  # serve: the tests check deploy/serve-api.yaml with Ray Serve's schema
  echo "$WANT" > "$STAMP"
fi

# The timeline page's browser test drives Debian's chromium (a browser a tool downloads itself
# does not run on these machines). Installed when we can (root with apt-get); otherwise said.
if ! command -v chromium >/dev/null 2>&1; then
  if [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then
    say "installing Debian's chromium for the page's browser test"
    (apt-get install -y -q chromium >/dev/null 2>&1 || { apt-get update -q >/dev/null 2>&1 && DEBIAN_FRONTEND=noninteractive apt-get install -y -q chromium >/dev/null; }) \
      || say "could not install chromium: the browser test will fail under CI=true"
  else
    say "no chromium: install Debian's chromium package for the page's browser test (apt-get install chromium)"
  fi
fi

# Code a model wrote (the relay's checks, task scripts) runs only inside bubblewrap
# (actors/tools/sandbox.py); without it those calls fail, saying so.
if ! command -v bwrap >/dev/null 2>&1; then
  if [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then
    say "installing Debian's bubblewrap, the sandbox for code a model wrote"
    (apt-get install -y -q bubblewrap >/dev/null 2>&1 || { apt-get update -q >/dev/null 2>&1 && DEBIAN_FRONTEND=noninteractive apt-get install -y -q bubblewrap >/dev/null; }) \
      || say "could not install bubblewrap: relay checks and task scripts will refuse to run"
  else
    say "no bubblewrap: install Debian's bubblewrap package (apt-get install bubblewrap); relay checks and task scripts need it"
  fi
fi

bash scripts/compile_modules.sh "$PY"

# The local model: assembled once into $CHORUS_DATA_DIR/models (default ~/.chorus/models),
# SHA-256 checked; later runs only compare a marker.
"$PY" -m actors.runtime.llm.local_model >/dev/null
say "ready"
