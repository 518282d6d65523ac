"""Regenerate docs/cli.md (from the `chorus` parser) and docs/http-api.md (from the HTTP app's
OpenAPI document): `.venv/bin/python scripts/gen_reference.py [--check]`. The same as
`python -m actors.cli.reference`; tests/unit/test_cli_reference.py fails when a page is stale."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from actors.cli.reference import main

if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
