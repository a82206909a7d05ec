"""An API client that holds every answer to the OpenAPI schema (/api/schema/), as a tablet
written from the schema alone would read it.

For each request it finds the operation the schema documents for the path, then checks that
  - the answer's status code is one the operation documents (an undocumented one is a code
    the client was never told to handle);
  - the body conforms to the schema documented for that status (types, required fields,
    nullability, enums), through schemathesis's own response check;
  - an error's code is named by the operation (its description or its responses'), so a
    client written from the schema knows every code it may meet;
  - the headers a client must act on are documented on that response: `Idempotent-Replayed`
    on a replayed write, `Retry-After` on a 429 or 503;
  - the request it sent conforms to the documented request body (the test's own bodies are
    what a client written from the schema would send).
Every mismatch is collected in `problems`, so a played evening reports all of them at once."""

from __future__ import annotations

import json
import re
import uuid
from typing import Any

import requests
import schemathesis
from rest_framework.test import APIClient
from schemathesis.core.transport import Response as SchemathesisResponse

from floor.idempotency import HEADER as IDEMPOTENCY_HEADER
from floor.idempotency import REPLAYED_HEADER

# Headers of an answer that a client must read to act on it.
ACTIONABLE_HEADERS = ("Idempotent-Replayed", "Retry-After", "X-Checksum-SHA256", "Content-Disposition")


def load_schema(user) -> dict:
    """The schema as /api/schema/ serves it (JSON) to a logged-in user."""
    client = APIClient()
    client.force_authenticate(user)
    response = client.get("/api/schema/", {"format": "json"})
    assert response.status_code == 200
    return json.loads(response.content)


class SchemaChecked:
    def __init__(self, raw_schema: dict):
        self.raw = raw_schema
        self.schema = schemathesis.openapi.from_dict(raw_schema)
        self._templates = [
            (re.compile("^" + re.sub(r"\{[^/]+\}", "[^/]+", path) + "$"), path)
            for path in raw_schema["paths"]
        ]
        self.problems: list[str] = []
        self.seen: set[tuple[str, str, int]] = set()  # (method, path template, status)

    def template(self, path: str) -> str | None:
        path = path.split("?", 1)[0]
        for pattern, template in self._templates:
            if pattern.match(path):
                return template
        return None

    def key_required(self, method: str, path: str) -> bool:
        template = self.template(path)
        operation = self.raw["paths"].get(template, {}).get(method.lower(), {}) if template else {}
        return any(
            parameter["in"] == "header"
            and parameter["name"] == IDEMPOTENCY_HEADER
            and parameter.get("required")
            for parameter in operation.get("parameters", [])
        )

    def check(self, method: str, path: str, body: Any, response, *, sent_headers: dict[str, str]) -> None:
        method = method.lower()
        content = body_of(response)
        template = self.template(path)
        label = f"{method.upper()} {path} -> {response.status_code}"
        if template is None or method not in self.raw["paths"][template]:
            self.problems.append(f"{label}: not an operation of the schema")
            return
        operation_raw = self.raw["paths"][template][method]
        self.seen.add((method, template, response.status_code))
        responses = operation_raw.get("responses", {})
        status = str(response.status_code)
        declared = responses.get(status) or responses.get(f"{status[0]}XX") or responses.get("default")
        if declared is None:
            self.problems.append(
                f"{label}: status not documented (documented: {sorted(responses)}); body {content[:300]!r}"
            )
            return
        documented_types = set(declared.get("content", {}))
        content_type = response.headers.get("Content-Type", "").split(";", 1)[0].strip()
        if content and content_type not in documented_types:
            self.problems.append(
                f"{label}: answers {content_type}, the schema documents {sorted(documented_types)}"
            )
        if response.status_code >= 400 and content:
            try:
                code = json.loads(content)["error"]["code"]
            except (ValueError, KeyError, TypeError):
                code = None
            if code and f"`{code}`" not in json.dumps(operation_raw):
                self.problems.append(f"{label}: the error code `{code}` is not named by the operation")
        for name in ACTIONABLE_HEADERS:
            if response.headers.get(name) is not None and name.lower() not in {
                h.lower() for h in declared.get("headers", {})
            }:
                self.problems.append(
                    f"{label}: answers the header {name}, which the schema does not document"
                )
        if method in ("post", "put", "patch") and body is not None and response.status_code < 400:
            # A body the server took is one the schema must take; one it refused may break the
            # schema on purpose (a rounding no table has is refused as `unknown_rounding`).
            self._check_request(label, operation_raw, body)
        for parameter in operation_raw.get("parameters", []):
            required = parameter["in"] == "header" and parameter.get("required")
            if required and parameter["name"] not in sent_headers and response.status_code < 400:
                # Taken without it: the schema says a client must send what the server does not need.
                self.problems.append(
                    f"{label}: answered without the header {parameter['name']} the schema requires"
                )
        operation = self.schema.find_operation_by_path(method, template)
        prepared = requests.Request(
            method.upper(), f"http://testserver{path}", headers=sent_headers
        ).prepare()
        wrapped = SchemathesisResponse(
            status_code=response.status_code,
            headers={k.lower(): [v] for k, v in response.headers.items()},
            content=content,
            request=prepared,
            elapsed=0.0,
            verify=False,
        )
        try:
            self.schema.validate_response(operation, wrapped)
        except BaseException as exc:  # schemathesis raises a Failure or a FailureGroup
            self.problems.append(f"{label}: the body does not conform: {exc}")

    def _check_request(self, label: str, operation_raw: dict, body: Any) -> None:
        content = operation_raw.get("requestBody", {}).get("content", {}).get("application/json")
        if content is None:
            if body not in ({}, None):
                self.problems.append(f"{label}: the test sent a body, the schema documents none")
            return
        import jsonschema

        schema = _openapi_to_jsonschema(content["schema"], self.raw)
        errors = sorted(jsonschema.Draft4Validator(schema).iter_errors(body), key=str)
        for error in errors[:3]:
            self.problems.append(f"{label}: the request body breaks its schema: {error.message}")


def _openapi_to_jsonschema(schema: Any, raw: dict, depth: int = 0) -> Any:
    """Inline the $refs and turn OpenAPI 3.0's `nullable` into a JSON Schema type."""
    if depth > 30:
        return {}
    if isinstance(schema, list):
        return [_openapi_to_jsonschema(item, raw, depth + 1) for item in schema]
    if not isinstance(schema, dict):
        return schema
    if "$ref" in schema:
        name = schema["$ref"].rsplit("/", 1)[-1]
        return _openapi_to_jsonschema(raw["components"]["schemas"][name], raw, depth + 1)
    out = {k: _openapi_to_jsonschema(v, raw, depth + 1) for k, v in schema.items() if k not in ("nullable",)}
    if schema.get("nullable"):
        out = {"anyOf": [out, {"type": "null"}]}
    return out


class SchemaClient:
    """An APIClient (token or forced login) whose every answer goes through `checked`."""

    def __init__(self, checked: SchemaChecked, user=None, *, token: str | None = None):
        self.checked = checked
        self.client = APIClient()
        if token:
            self.client.credentials(HTTP_AUTHORIZATION=f"Token {token}")
        elif user is not None:
            self.client.force_authenticate(user)

    def get(self, path: str, params: dict | None = None):
        response = self.client.get(path, params or {})
        full = path + ("?" + "&".join(f"{k}={v}" for k, v in params.items()) if params else "")
        self.checked.check("get", full, None, response, sent_headers={})
        return response

    def write(
        self,
        method: str,
        path: str,
        body: Any = None,
        *,
        key: str | None = None,
        idempotent: bool | None = None,
    ):
        """`idempotent` None: an Idempotency-Key exactly when the schema says it is required (an
        optional one is left out, as a client may), or when `key` is given."""
        headers: dict[str, str] = {}
        extra = {}
        if idempotent is None:
            idempotent = key is not None or self.checked.key_required(method, path)
        if idempotent:
            headers[IDEMPOTENCY_HEADER] = key or uuid.uuid4().hex
            extra["HTTP_IDEMPOTENCY_KEY"] = headers[IDEMPOTENCY_HEADER]
        call = getattr(self.client, method)
        response = call(path, body if body is not None else {}, format="json", **extra)
        self.checked.check(method, path, body if body is not None else {}, response, sent_headers=headers)
        return response

    def raw_post(self, path: str, data: bytes | str, content_type: str, *, key: str | None = None):
        """A body as bytes in any media type (not checked against the request schema)."""
        key = key or uuid.uuid4().hex
        response = self.client.post(path, data, content_type=content_type, HTTP_IDEMPOTENCY_KEY=key)
        self.checked.check("post", path, None, response, sent_headers={IDEMPOTENCY_HEADER: key})
        return response

    def post(self, path: str, body: Any = None, **kwargs):
        return self.write("post", path, body, **kwargs)

    def patch(self, path: str, body: Any = None, **kwargs):
        return self.write("patch", path, body, **kwargs)


def replayed(response) -> bool:
    return response.headers.get(REPLAYED_HEADER) == "true"


def body_of(response) -> bytes:
    """The answer's bytes, a file's (a streamed answer) included; read once and kept."""
    if getattr(response, "streaming", False):
        if not hasattr(response, "_schema_content"):
            response._schema_content = b"".join(response.streaming_content)
        return response._schema_content
    return response.content
