"""The API's OpenAPI 3 document (``openapi.yaml``, written by hand beside the routes and checked
against them by tests/test_serve_openapi.py) as ``/openapi.json``, and the same as a page at
``/docs``, rendered here: a page of plain HTML needs no script, so it works under the service's
content policy and offline, where Swagger UI would bring a megabyte of JavaScript."""

from __future__ import annotations

import functools
import html
import json
from importlib import resources
from typing import Any

METHODS = ("get", "post", "patch", "delete")


@functools.cache
def document() -> dict[str, Any]:
    import yaml

    return yaml.safe_load(resources.files("subextract.serve").joinpath("openapi.yaml").read_text(encoding="utf-8"))


@functools.cache
def document_json() -> bytes:
    return json.dumps(document(), ensure_ascii=False).encode()


def _resolved(node: Any) -> Any:
    spec = document()
    while isinstance(node, dict) and "$ref" in node:
        for part in node["$ref"].lstrip("#/").split("/"):
            spec = spec[part]
        node, spec = spec, document()
    return node


def _schema_text(schema: Any) -> str:
    if not isinstance(schema, dict):
        return ""
    if "$ref" in schema:
        return schema["$ref"].rsplit("/", 1)[-1]
    if "allOf" in schema:
        return " + ".join(filter(None, (_schema_text(part) for part in schema["allOf"])))
    if schema.get("type") == "object" and "properties" in schema:
        return "{" + ", ".join(schema["properties"]) + "}"
    if schema.get("type") == "array":
        return f"[{_schema_text(schema.get('items'))}]"
    return str(schema.get("type", ""))


def page() -> str:
    spec = document()
    e = html.escape
    out = [f"<!doctype html><html lang=en><head><meta charset=utf-8><meta name=viewport content='width=device-width'>"
           f"<title>{e(spec['info']['title'])} API</title><link rel=stylesheet href='/static/style.css'></head>"
           f"<body><header class=top><h1>{e(spec['info']['title'])} API</h1></header><main class=apidocs>"
           f"<section><p>{e(spec['info']['description'])}</p><p>The same as <a href='/openapi.json'>OpenAPI 3 "
           f"JSON</a>, for client generators and API tools.</p></section>"]
    for path, item in spec["paths"].items():
        shared = item.get("parameters", [])
        for method in METHODS:
            operation = item.get(method)
            if operation is None:
                continue
            out.append(f"<section id='{e(method)}-{e(path)}'><h2><code>{method.upper()} {e(path)}</code></h2>"
                       f"<p>{e(operation.get('summary', ''))}</p>")
            if operation.get("description"):
                out.append(f"<p>{e(operation['description'])}</p>")
            parameters = [_resolved(p) for p in [*shared, *operation.get("parameters", [])]]
            if parameters:
                out.append("<h3>Parameters</h3><ul>" + "".join(
                    f"<li><code>{e(p['name'])}</code> ({e(p['in'])}{', required' if p.get('required') else ''}) "
                    f"{e(p.get('description', ''))}</li>" for p in parameters) + "</ul>")
            body = _resolved(operation.get("requestBody"))
            if body:
                out.append("<h3>Body</h3><ul>" + "".join(
                    f"<li>{e(kind)}: <code>{e(_schema_text(content.get('schema')))}</code></li>"
                    for kind, content in body.get("content", {}).items()) + "</ul>")
            out.append("<h3>Responses</h3><ul>" + "".join(
                f"<li><code>{e(status)}</code> {e(_resolved(answer).get('description', ''))}</li>"
                for status, answer in operation["responses"].items()) + "</ul></section>")
    out.append("</main></body></html>")
    return "".join(out)
