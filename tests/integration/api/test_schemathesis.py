"""schemathesis against the app's own OpenAPI document (/v1/openapi.json): for generated
requests to every operation, with a read, an operate and an admin token, no 5xx, and every
response matches its documented status, content type and schema. Valid submissions really
run (local Ray, scripted model); a simulation session is there for the sessions' routes.

The SSE route is left out here (a stream does not end); test_sse.py covers it. A small
example count keeps this near a minute."""

from __future__ import annotations

import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from schemathesis.checks import (
    content_type_conformance,
    not_a_server_error,
    response_schema_conformance,
    status_code_conformance,
)

from actors.api.app import create_app
from actors.runtime.client import new_run_id
from actors.simulation.client import create_session
from actors.simulation.kind import PACKS

from .conftest import make_env

pytestmark = pytest.mark.ray

TOKENS = {"r-token": "read", "o-token": "operate", "a-token": "admin"}
AS = {scope: {"Authorization": f"Bearer {tok}"} for tok, scope in TOKENS.items()}
CHECKS = [not_a_server_error, status_code_conformance, content_type_conformance, response_schema_conformance]


@pytest.fixture(scope="module")
def app(tmp_path_factory, ray_module):
    e = make_env(tmp_path_factory.mktemp("schema"))
    app = create_app(client=e.client, tokens=TOKENS, config=e.config)
    run = e.client.submit("What is the marker?", root=e.root)  # something real to find
    run.wait(timeout=120)
    app.state.known_run = run.run_id
    app.state.known_session = create_session(e.client, PACKS / "lighthouse.yaml", run_id=new_run_id())
    yield app
    e.client.close()


@pytest.fixture(scope="module")
def api_schema(app):
    loaded = schemathesis.openapi.from_asgi("/v1/openapi.json", app)
    return loaded.exclude(path_regex=r"/events/stream$")


def aim(case, run_id: str, session_id: str) -> None:
    """Point a generated request at the real run and session (random ids would only ever
    meet 404s)."""
    if case.path_parameters and "run_id" in case.path_parameters:
        case.path_parameters["run_id"] = run_id
    if case.path_parameters and "session_id" in case.path_parameters:
        case.path_parameters["session_id"] = session_id
    if case.query:
        for name in ("a", "b"):
            if name in case.query:
                case.query[name] = run_id
        if "stream" in case.query:
            case.query["stream"] = f"agent:{run_id}"


@pytest.mark.parametrize("scope", ["read", "operate", "admin"])
def test_api_conforms_to_its_openapi_document(app, api_schema, scope):
    failures, tested, calls = [], [], []
    examples = 12 if scope == "admin" else 6
    for result in api_schema.get_all_operations():
        operation = result.ok()
        tested.append(operation.label)

        @given(case=operation.as_strategy(), real=st.booleans())
        @settings(max_examples=examples, deadline=None, suppress_health_check=list(HealthCheck), derandomize=True, database=None)
        def check(case, real: bool) -> None:
            if real:
                aim(case, app.state.known_run, app.state.known_session)
            case.headers = {**(case.headers or {}), **AS[scope]}
            calls.append((operation.label, case.call_and_validate(checks=CHECKS, headers=AS[scope]).status_code))

        try:
            check()
        except Exception as e:  # noqa: BLE001 - report every operation, not just the first
            failures.append(f"{operation.label}: {str(e)[:1500]}")
            if len(failures) > 3:
                break
    assert len(tested) >= 11, tested
    assert {status for _, status in calls} & {200, 202}, "no request got past validation"
    if scope == "read":
        assert 403 in {status for _, status in calls}, "a read token was never refused a change"
    assert not failures, "\n\n".join(failures)
