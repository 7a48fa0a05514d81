"""Schemathesis against the server's OpenAPI schema (through ASGI, nothing on the network): for every operation,
whatever it generates, no 5xx, and every error is a JSON body {"error": {"code", "message"}}."""

from __future__ import annotations

import schemathesis
from hypothesis import HealthCheck, given, settings

from .conftest import ADMIN

EXAMPLES = 30


def test_no_server_error_and_json_errors(served):
    schema = schemathesis.openapi.from_asgi("/openapi.json", served.app, headers={"Authorization": f"Bearer {ADMIN}"})
    operations = [r.ok() for r in schema.get_all_operations()]
    tried = []
    for op in operations:
        if op.path == "/v1/ingest":
            continue  # multipart uploads: test_api.py and test_ui.py
        tried.append(f"{op.method.upper()} {op.path}")

        @settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck), database=None)
        @given(case=op.as_strategy())
        def check(case):
            response = case.call(headers={"Authorization": f"Bearer {ADMIN}"})
            assert response.status_code < 500, (case.method, case.path, case.body, response.text[:300])
            if response.status_code >= 400:
                body = response.json()
                assert set(body) == {"error"} and {"code", "message"} <= set(body["error"]), response.text[:300]

        check()
    assert {"POST /v1/ask", "POST /v1/chat/completions", "POST /v1/retrieval", "GET /v1/traces/{trace_id}",
            "POST /v1/feedback", "POST /v1/diagnose", "GET /healthz"} <= set(tried), tried
