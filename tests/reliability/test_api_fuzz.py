"""The served OpenAPI schema, run through schemathesis as a staff user and as a viewer.

Every operation of ``/api/schema/`` (as the signed-in user fetches it) gets a bounded
number of generated requests (``SCHEMATHESIS_EXAMPLES`` per operation and user, default
10; valid and invalid data), sent to the Django app through schemathesis's WSGI client
inside pytest-django's test database (PostgreSQL in CI), with a token of the user: the
staff user on every operation, the viewer on every write and on the reads kept for staff
(the alert routes and deliveries). The viewer's other reads take the staff user's path
through the permission check, so they would repeat the staff user's requests and
answers; ``test_security.py`` checks that the viewer's answer on every such route is
the staff user's.

Each operation's Hypothesis test (its coverage cases included) is built when the test
runs, by the xdist worker that runs it, not at collection by every worker. On PUT,
PATCH and DELETE of ``{id}`` routes most integer ids are pointed at a row that exists
(``ExistingIds``), so the bodies sent there are validated, not answered 404 unread.
Checks on every answer:

- ``not_a_server_error``: no 5xx;
- ``status_code_conformance``: the status is one the schema documents;
- ``content_type_conformance``: the content type is the documented one;
- ``response_schema_conformance``: the body has the documented shape;
- ``response_headers_conformance``: documented headers are present and well-formed.

Checks left out, each a false positive here (also listed in docs/reliability.md):

- ``negative_data_rejection`` / ``positive_data_acceptance``: schemathesis cannot know
  the rules the services apply beyond the schema (a queue must exist in the snapshot,
  a what-if needs an ask or a typed ask, a partition must be known), so a
  schema-valid body is rightly refused with a 400 and "accepted invalid data" is
  reported for query strings the filters ignore by design (unknown parameters);
- ``ignored_auth``: the test authenticates with a token on purpose; anonymous access
  is covered by ``test_security.py`` (every route, every method);
- ``use_after_free`` / ``ensure_resource_availability``: stateful link checks; the
  schema declares no links, and a deleted source answering 404 is correct;
- ``unsupported_method`` / ``missing_required_header``: the API answers 405 / 403
  as DRF does; ``test_security.py`` covers methods on every route;
- ``max_response_time``: time is never asserted (figures are printed).
"""

from __future__ import annotations

import functools
import importlib.util
import itertools
import json
import os
import re
import sys
from collections.abc import Callable, Iterator
from typing import Any

import pytest
import schemathesis
from django.core.handlers.wsgi import WSGIHandler
from django.core.signals import request_finished, request_started
from django.db import close_old_connections
from drf_spectacular.generators import SchemaGenerator
from drf_spectacular.renderers import OpenApiJsonRenderer
from hypothesis import HealthCheck, settings
from reliability_support import reads_open_to_viewers
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient
from schemathesis.checks import load_all_checks
from schemathesis.core.result import Ok
from schemathesis.generation.feedback import FeedbackSources
from schemathesis.pytest._test_builder import build_operation_test
from schemathesis.python._constants.orchestrator import make_constants_value_source

from dashboard import models, services
from dashboard.sources.models import ClusterSource

EXAMPLES = int(os.environ.get("SCHEMATHESIS_EXAMPLES", "10"))

CHECKS = [
    schemathesis.checks.not_a_server_error,
    schemathesis.checks.status_code_conformance,
    schemathesis.checks.content_type_conformance,
    schemathesis.checks.response_schema_conformance,
    schemathesis.checks.response_headers_conformance,
]
EXCLUDED = [
    schemathesis.checks.negative_data_rejection,
    schemathesis.checks.positive_data_acceptance,
    schemathesis.checks.ignored_auth,
    schemathesis.checks.use_after_free,
    schemathesis.checks.ensure_resource_availability,
    schemathesis.checks.unsupported_method,
    schemathesis.checks.missing_required_header,
    schemathesis.checks.max_response_time,
]

pytestmark = pytest.mark.timeout(600)


def _generated_schema() -> dict[str, Any]:
    """The schema ``/api/schema/`` serves, built by the same generator and hooks."""
    generator = SchemaGenerator()  # type: ignore[no-untyped-call]
    doc = generator.get_schema(request=None, public=True)  # type: ignore[no-untyped-call]
    plain: dict[str, Any] = json.loads(OpenApiJsonRenderer().render(doc))
    return plain


SCHEMA_DOC = _generated_schema()
schema = schemathesis.openapi.from_dict(SCHEMA_DOC)
UNSAFE = {"POST", "PUT", "PATCH", "DELETE"}


def _operations() -> dict[str, Any]:
    """Every operation of the schema by label (one schemathesis cannot read fails here)."""
    found = {}
    for result in schema.get_all_operations():
        assert isinstance(result, Ok), result
        found[result.ok().label] = result.ok()
    return found


OPERATIONS = _operations()
#: (user, operation label): the staff user on every operation, the viewer on the writes
#: and on the reads a viewer is refused
CASES = [
    (user, operation.label)
    for operation in OPERATIONS.values()
    for user in ("staff", "viewer")
    if user == "staff"
    or operation.method.upper() in UNSAFE
    or not reads_open_to_viewers(operation.path)
]


#: every how many of an ``{id}`` write's cases keeps its generated id (no such row: 404)
MISSING_EVERY = 10


def _alert_route(staff: Any, stored: models.ClusterSnapshot) -> int:
    return models.AlertRoute.objects.create(
        name="fuzzed-route",
        channel=models.AlertRoute.Channel.EMAIL,
        email_to="ops@example.org",
        owner=staff,
    ).pk


def _quota_change(staff: Any, stored: models.ClusterSnapshot) -> int:
    change = services.schedule_quota_change(
        stored.partition, "root.a", new_max={"vcore": 4000}, user=staff, snapshot=stored
    )
    return change.pk


_SOURCE_NUMBERS = itertools.count()


def _source(staff: Any, stored: models.ClusterSnapshot) -> int:
    return ClusterSource.objects.create(
        name=f"fuzzed-{next(_SOURCE_NUMBERS)}", base_url="http://127.0.0.1:9", partition="default"
    ).pk


#: the model and maker of a row for the PUT, PATCH and DELETE operations on ``{id}``
Maker = Callable[[Any, models.ClusterSnapshot], int]
ROWS: dict[str, tuple[type[Any], Maker]] = {
    "/api/alert-routes/{id}/": (models.AlertRoute, _alert_route),
    "/api/quota-changes/{id}/": (models.QuotaChange, _quota_change),
    "/api/sources/{id}/": (ClusterSource, _source),
}
ROW_METHODS = {"PUT", "PATCH", "DELETE"}


class ExistingIds:
    """Points the ``id`` of an operation's cases at a row that exists, so that their
    bodies are read and validated rather than answered 404 before (the coverage phase's
    ids are ``"0"`` and other ids no row has). A deleted row is made again; every
    ``MISSING_EVERY``-th integer id and every id that is not an integer (``"null"``,
    ``"0.5"``, ``True``...) are left as generated, so the 404 of a missing row and of a
    malformed path stay covered."""

    def __init__(self, operation: Any, staff: Any, stored: models.ClusterSnapshot) -> None:
        known = ROWS.get(operation.path) if operation.method.upper() in ROW_METHODS else None
        self.model: type[Any] | None = known[0] if known else None
        self.make: Maker | None = known[1] if known else None
        self.staff, self.stored = staff, stored
        self.row: int | None = None
        self.seen = 0

    def apply(self, case: Any) -> None:
        generated = (case.path_parameters or {}).get("id")
        # the coverage phase sends its valid id as the string "0"
        if self.model is None or self.make is None or not re.fullmatch(r"-?[0-9]+", str(generated)):
            return
        self.seen += 1
        if self.seen % MISSING_EVERY == 0:
            return
        if self.row is None or not self.model.objects.filter(pk=self.row).exists():
            self.row = self.make(self.staff, self.stored)
        case.path_parameters["id"] = self.row


@pytest.fixture
def app(monkeypatch: pytest.MonkeyPatch) -> Iterator[WSGIHandler]:
    """The Django app as gunicorn runs it, sharing the test's database connection."""
    # schemathesis's WSGI transport tries ``from flask import Flask`` on every request (to
    # catch a Flask app's exceptions); with Flask not installed each failed import searched
    # sys.path again, 1.5 % of this module's time. A None in sys.modules fails it at once,
    # as Python's import documents; with Flask installed nothing is changed.
    if importlib.util.find_spec("flask") is None:
        monkeypatch.setitem(sys.modules, "flask", None)
    # a fresh handler: middleware reads its settings (no SSL redirect in tests) when built;
    # and, as Django's test client does, requests must not close the test's connection
    handler = WSGIHandler()
    request_started.disconnect(close_old_connections)
    request_finished.disconnect(close_old_connections)
    try:
        yield handler
    finally:
        request_started.connect(close_old_connections)
        request_finished.connect(close_old_connections)


def test_the_fuzzed_schema_is_the_served_one(viewer: Any) -> None:
    client = APIClient()
    client.force_authenticate(viewer)
    served = client.get("/api/schema/", {"format": "json"})
    assert served.status_code == 200
    assert json.loads(served.content) == SCHEMA_DOC


@functools.cache
def _feedback() -> FeedbackSources:
    """What schemathesis's pytest plugin gives every operation of a schema it collects."""
    return FeedbackSources(constants_value_source=make_constants_value_source(schema))


@pytest.mark.parametrize(("user", "label"), CASES, ids=[f"{u}-{label}" for u, label in CASES])
def test_api_answers_within_its_schema(
    user: str,
    label: str,
    stored: models.ClusterSnapshot,
    staff: Any,
    viewer: Any,
    app: WSGIHandler,
) -> None:
    """*stored* gives the operations rows to find."""
    token = str(Token.objects.create(user=staff if user == "staff" else viewer).key)
    ids = ExistingIds(OPERATIONS[label], staff, stored)

    @settings(
        max_examples=EXAMPLES,
        deadline=None,
        suppress_health_check=list(HealthCheck),
        derandomize=True,
        database=None,
    )
    def check(case: Any) -> None:
        ids.apply(case)
        case.call_and_validate(
            app=app,
            headers={"Authorization": f"Token {token}"},
            checks=CHECKS,
            excluded_checks=EXCLUDED,
        )

    # as schemathesis's pytest plugin builds it (schema.parametrize), at run time
    load_all_checks()
    build_operation_test(
        config=schema.config,
        operation=OPERATIONS[label],
        test_func=check,
        given_kwargs={},
        feedback=_feedback(),
    )()
