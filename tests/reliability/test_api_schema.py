"""The served OpenAPI schema says what the API answers: nullable fields, the diff's list,
the error answers; and it is served to signed-in users only, like the rest of the API."""

from __future__ import annotations

from typing import Any

import yaml
from django.test import Client
from rest_framework.test import APIClient


def _schema(user: Any) -> dict[str, Any]:
    client = APIClient()
    client.force_authenticate(user)
    response = client.get("/api/schema/")
    assert response.status_code == 200
    doc: dict[str, Any] = yaml.safe_load(response.content)
    return doc


def test_nullable_fields_are_declared_nullable(viewer: Any) -> None:
    schemas = _schema(viewer)["components"]["schemas"]
    alert = schemas["Alert"]["properties"]
    assert alert["partition"].get("nullable") is True
    assert alert["acknowledged_by"].get("nullable") is True
    for name, field in (
        ("ConfigVersion", "imported_by"),
        ("Snapshot", "imported_by"),
        ("Run", "created_by"),
        ("QuotaChange", "created_by"),
    ):
        assert schemas[name]["properties"][field].get("nullable") is True, (name, field)


def test_config_diff_is_declared_as_the_list_it_returns(viewer: Any) -> None:
    doc = _schema(viewer)
    ok = doc["paths"]["/api/configs/{id}/diff/"]["get"]["responses"]["200"]
    body = ok["content"]["application/json"]["schema"]
    assert body["type"] == "array"
    assert body["items"] == {"$ref": "#/components/schemas/ConfigChange"}
    fields = doc["components"]["schemas"]["ConfigChange"]["properties"]
    assert {"partition", "queue", "field", "kind", "old", "new", "text"} <= set(fields)


def test_error_answers_are_documented(viewer: Any) -> None:
    paths = _schema(viewer)["paths"]
    for path, operations in paths.items():
        for method, operation in operations.items():
            codes = set(operation["responses"])
            assert {"400", "401", "403"} <= codes, (method, path, codes)
            if "{" in path:
                assert "404" in codes, (method, path)
            if method in ("post", "put", "patch"):
                assert "413" in codes, (method, path)
    assert "429" in paths["/api/auth/token/"]["post"]["responses"]
    assert "404" in paths["/api/runs/"]["get"]["responses"]  # a page past the last


def test_schema_and_docs_need_a_signed_in_user(viewer: Any) -> None:
    anonymous = Client()
    for page in ("/api/schema/", "/api/docs/"):
        assert anonymous.get(page).status_code in (401, 403), page
    signed_in = Client()
    signed_in.force_login(viewer)
    for page in ("/api/schema/", "/api/docs/"):
        assert signed_in.get(page).status_code == 200, page
    # ReDoc is dropped (its bundle loads a logo from a CDN): the old address leads to Swagger UI
    moved = signed_in.get("/api/redoc/")
    assert (moved.status_code, moved["Location"]) == (301, "/api/docs/")
