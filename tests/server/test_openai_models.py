"""``GET /v1/models`` (issue 32): OpenAI clients that list the models first find the one this server serves, in
the OpenAI shape, with the openai SDK unchanged; a model it does not serve is a 404."""

from __future__ import annotations

import pytest

from .conftest import ACME, ADMIN, auth


def test_models_lists_the_served_model(served):
    r = served.get("/v1/models", headers=auth(ACME))
    assert r.status_code == 200
    body = r.json()
    assert body["object"] == "list" and len(body["data"]) == 1
    model = body["data"][0]
    assert model["id"] == "ragclinic" and model["object"] == "model" and model["owned_by"] == "ragclinic"
    assert isinstance(model["created"], int)
    one = served.get("/v1/models/ragclinic", headers=auth(ACME))
    assert one.status_code == 200 and one.json() == model
    missing = served.get("/v1/models/gpt-4o", headers=auth(ACME))
    assert missing.status_code == 404 and missing.json()["error"]["code"] == "not_found"
    assert served.get("/v1/models").status_code == 401  # the key is checked as on every route


def test_the_openai_sdk_lists_and_retrieves_it(live):
    from openai import NotFoundError, OpenAI

    client = OpenAI(base_url=f"{live}/v1", api_key=ADMIN, max_retries=0, timeout=30)
    ids = [m.id for m in client.models.list()]
    assert ids == ["ragclinic"]
    assert client.models.retrieve("ragclinic").owned_by == "ragclinic"
    with pytest.raises(NotFoundError):
        client.models.retrieve("no-such-model")
    r = client.chat.completions.create(model=ids[0], messages=[{"role": "user", "content": "What is the refund window?"}])
    assert r.choices[0].message.content
