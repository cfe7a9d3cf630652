"""The OpenAPI document against the routes the application really has, both ways, against the
OpenAPI 3.1 specification itself, and against real answers of the running service."""

from __future__ import annotations

import re

import pytest
from starlette.routing import Mount, Route

from subextract.serve.apidocs import METHODS, document


def conforms(instance, schema_name: str) -> None:
    """Raise jsonschema's ValidationError unless ``instance`` is a ``schema_name`` of the document."""
    import jsonschema

    root = {**document(), "$ref": f"#/components/schemas/{schema_name}"}
    jsonschema.Draft202012Validator(root).validate(instance)


def _app_routes(tmp_path) -> set[tuple[str, str]]:
    from subextract.serve.app import create_app
    from subextract.serve.service import ServiceConfig

    app = create_app(ServiceConfig(data=tmp_path / "data"))
    found = set()
    for route in app.routes:
        if isinstance(route, Mount):
            continue  # /static: the page's files
        assert isinstance(route, Route)
        path = re.sub(r"\{(\w+):\w+\}", r"{\1}", route.path)
        found |= {(method.lower(), path) for method in route.methods if method.lower() in METHODS}
    return found


def test_the_document_is_valid_openapi():
    from openapi_spec_validator import validate

    validate(document())


def test_every_route_is_documented_and_every_documented_route_exists(tmp_path):
    documented = {(method, path) for path, item in document()["paths"].items() for method in METHODS if method in item}
    routes = _app_routes(tmp_path)
    assert routes - documented == set(), "routes missing from openapi.yaml"
    assert documented - routes == set(), "documented routes the application does not have"


def test_the_service_serves_the_document_and_its_page(tmp_path):
    from starlette.testclient import TestClient

    from subextract.serve.app import create_app
    from subextract.serve.service import ServiceConfig

    with TestClient(create_app(ServiceConfig(data=tmp_path / "data")), base_url="http://127.0.0.1") as client:
        assert client.get("/openapi.json").json() == document()
        page = client.get("/docs").text
        for path in document()["paths"]:
            assert f"{path}</code>" in page.replace("&#x27;", "'")
        assert client.get("/v1/jobs").json() == {"jobs": []}
    with pytest.raises(Exception, match="is a required property"):
        conforms({"id": 5, "status": "done"}, "Job")  # the schema check can fail
