"""OpenAPI schema post-processing: the error answers every operation can give.

drf-spectacular documents the success answers it can infer.  The errors are the
project's own rules, the same for every operation, so they are added here once:

- 400 everywhere: a query parameter or body field that is junk (including a NUL
  byte in any query string, ``dashboard.nulbytes``) is refused naming it;
- 401 and 403 everywhere: reads need a signed-in user, writes a staff user;
- 404 where the path names a row, and on paged lists (a page past the last);
- 413 on writes: a body or upload above the limit names it;
- 409 on the runs' writes: an idempotency key reused with another body;
- 429 on ``/api/auth/token/``: too many failed sign-ins (django-axes).
"""

from __future__ import annotations

from typing import Any

ERROR_SCHEMA: dict[str, Any] = {
    "type": "object",
    "description": 'An error: {"detail": message, "code": code}, or {field: [messages]} '
    "naming the offending parameter or field.",
    "properties": {"detail": {"type": "string"}, "code": {"type": "string"}},
    "additionalProperties": True,
}

_DESCRIPTIONS = {
    "400": "Bad input: the body names the offending parameter or field.",
    "401": "Not signed in.",
    "403": "Not signed in, or the write needs a staff user.",
    "404": "No such row (or a page past the last one).",
    "409": "The idempotency key was used before with a different request.",
    "413": "The body or upload is larger than the limit it names.",
    "429": "Too many failed sign-ins from this address for this user: try again later.",
}

_IDEMPOTENT_WRITES = ("/api/whatif/preempt/", "/api/whatif/quota/", "/api/rounds/")


def _codes(path: str, method: str, operation: dict[str, Any]) -> list[str]:
    codes = ["400", "401", "403"]
    params = operation.get("parameters", [])
    paged = any(p.get("name") == "page" and p.get("in") == "query" for p in params)
    if "{" in path or paged:
        codes.append("404")
    if method in ("post", "put", "patch"):
        codes.append("413")
    if method == "post" and path in _IDEMPOTENT_WRITES:
        codes.append("409")
    if path == "/api/auth/token/":
        codes.append("429")
    return codes


def document_errors(
    result: dict[str, Any], generator: Any, request: Any, public: bool
) -> dict[str, Any]:
    """Add the error answers (``Error`` schema) to every operation of the schema."""
    result.setdefault("components", {}).setdefault("schemas", {})["Error"] = ERROR_SCHEMA
    ref = {"$ref": "#/components/schemas/Error"}
    for path, operations in result.get("paths", {}).items():
        for method, operation in operations.items():
            if not isinstance(operation, dict) or "responses" not in operation:
                continue
            for code in _codes(path, method, operation):
                operation["responses"].setdefault(
                    code,
                    {
                        "description": _DESCRIPTIONS[code],
                        "content": {"application/json": {"schema": ref}},
                    },
                )
    return result
