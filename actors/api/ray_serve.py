"""The same app as a Ray Serve deployment (deploy/serve-api.yaml):

    serve run deploy/serve-api.yaml          # in the foreground, on the cluster `ray start` made
    serve deploy deploy/serve-api.yaml       # onto a running cluster

The app is built on each replica when it starts (`build`), from the environment the
config's `runtime_env` gives it: CHORUS_STORE_URL (PostgreSQL on a cluster),
CHORUS_LLM_BASE_URL, CHORUS_API_TOKENS or CHORUS_API_TOKENS_FILE.
"""

from __future__ import annotations

from ray import serve

from actors.api.app import build

ChorusApi = serve.deployment(serve.ingress(build)(), name="ChorusApi")
app = ChorusApi.bind()
