"""Bad input through the REST API and the pages' import form: a clear 4xx, nothing stored.

Every case sends one hostile request as a signed-in staff user and checks:

- the answer is the expected 4xx and its text names the problem (the words listed
  with the case, compared case-insensitively with the unescaped answer);
- the request stayed within a bounded amount of Python memory (tracemalloc peak,
  printed with the elapsed time; time is printed, never asserted — pytest-timeout
  only stops a hang);
- the database is unchanged: every model has the same number of rows, except that
  a refused import may add one ``import_failed`` alert (the alert feed records
  refusals), which must itself name the problem.

Request bodies are encoded before the measurement starts; the Django test client
copies the body once into its fake socket, which is inside the measured block, so
the bounds of the 50 MB cases are the body size plus the same margin as the others.
"""

from __future__ import annotations

import html
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client
from django.test.client import BOUNDARY, encode_multipart
from reliability_support import QUEUES_YAML, MiB, count_changes, db_counts, measured, scenario
from rest_framework.test import APIClient

from dashboard import models

pytestmark = [pytest.mark.django_db, pytest.mark.timeout(120)]

# Python memory one refused request may take beyond its own body (generous: a
# YAML alias bomb or a naive recursive parser would take gigabytes).
MEMORY_MARGIN = 48 * MiB
BIG = 50 * 1000 * 1000  # the "50 MB upload"


@dataclass(frozen=True)
class Case:
    """One hostile request: where it goes, what it carries, and what must come back."""

    id: str
    channel: str  # see SENDERS
    payload: object  # or a function making it (the 50 MB bodies: made when their test runs)
    status: int
    words: tuple[str, ...]
    params: dict[str, object] = field(default_factory=dict)

    def data(self) -> object:
        """The payload (made now where it is a function)."""
        return self.payload() if callable(self.payload) else self.payload


# --------------------------------------------------------------------------- inputs


def _yaml(replace: str, by: str) -> bytes:
    assert replace in QUEUES_YAML
    return QUEUES_YAML.replace(replace, by, 1).encode()


def _bomb() -> bytes:
    lines = ['a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    for prev, name in zip("abcdefgh", "bcdefghi", strict=True):
        lines.append(f"{name}: &{name} [" + ",".join([f"*{prev}"] * 9) + "]")
    lines.append("partitions: *i")
    return ("\n".join(lines) + "\n").encode()


def _deep_yaml(levels: int) -> bytes:
    return ("partitions: " + "[" * levels + "]" * levels + "\n").encode()


def _deep_json(levels: int) -> bytes:
    return ('{"queues": ' + "[" * levels + "]" * levels + "}").encode()


def _big_yaml() -> bytes:
    pad = "# " + "x" * 98 + "\n"
    return QUEUES_YAML.encode() + pad.encode() * (BIG // len(pad) + 1)


def _big_json() -> bytes:
    doc = scenario()
    doc["padding"] = "x" * BIG
    return json.dumps(doc).encode()


def _scenario_bytes(**overrides: Any) -> bytes:
    return json.dumps(scenario(**overrides)).encode()


def _with_allocation(**changes: Any) -> bytes:
    doc = scenario()
    doc["allocations"][0].update(changes)
    return json.dumps(doc).encode()


def _with_queue_a(**changes: Any) -> bytes:
    doc = scenario()
    doc["queues"]["children"][0].update(changes)
    return json.dumps(doc).encode()


NON_UTF8_YAML = QUEUES_YAML.encode().replace(b"- name: x", b"- name: x\xff\xfe", 1)
NON_UTF8_JSON = _scenario_bytes().replace(b'"root.a.x"', b'"root.a.\xff\xfe"', 1)
HTML_NAME = "<script>alert(1)</script>"

CONFIG_CASES = [
    ("malformed", _yaml("queues:\n", "queues: [a, {b\n"), ("invalid yaml", "line")),
    ("truncated", QUEUES_YAML[: QUEUES_YAML.index("{vcore: 8}") + 5].encode(), ("line",)),
    ("alias-bomb", _bomb(), ("anchor",)),
    ("nesting-10000", _deep_yaml(10_000), ("nesting",)),
    ("non-utf8", NON_UTF8_YAML, ("utf-8",)),
    ("duplicate-queue", _yaml("- name: y", "- name: x"), ("duplicate", "x")),
    ("negative-quantity", _yaml("max: {vcore: 8}", "max: {vcore: -8}"), ("-8", "negative")),
    (
        "absurd-quantity",
        _yaml("max: {vcore: 8}", "max: {vcore: 8, memory: 99999999999999999999999Ei}"),
        ("memory",),
    ),
    ("dotted-queue-name", _yaml("- name: y", "- name: team.y"), ("team.y",)),
    ("html-queue-name", _yaml("- name: y", f"- name: '{HTML_NAME}'"), (HTML_NAME,)),
]

SNAPSHOT_CASES = [
    ("malformed", b'{"queues": {"name": "root",, }}', ("json",)),
    ("truncated", _scenario_bytes()[:300], ("json",)),
    ("nesting-10000", _deep_json(10_000), ("nest",)),
    ("non-utf8", NON_UTF8_JSON, ("utf-8",)),
    (
        "negative-quantity",
        _with_allocation(resources={"vcore": -1000}),
        ("resources.vcore", "between 0"),
    ),
    ("absurd-quantity", _with_allocation(resources={"vcore": 2**70}), ("vcore",)),
    ("allocation-on-unknown-node", _with_allocation(node="n-missing"), ("n-missing",)),
    (
        "duplicate-queue",
        _with_queue_a(children=[{"name": "x"}, {"name": "x"}]),
        ("duplicate", "x"),
    ),
    ("empty-resource-type", _with_allocation(resources={"": 1000}), ("resource",)),
    (
        "dotted-queue-name",
        _with_queue_a(children=[{"name": "x"}, {"name": "y"}, {"name": "x.z"}]),
        ("x.z", "dot"),
    ),
]


def _cases() -> list[Case]:
    out: list[Case] = []
    for name, data, words in CONFIG_CASES:
        out.append(Case(f"api-config-{name}", "api_config", data, 400, words))
        out.append(Case(f"form-config-{name}", "form_config", data, 400, words))
    for name, data, words in SNAPSHOT_CASES:
        out.append(Case(f"api-snapshot-file-{name}", "api_snapshot_file", data, 400, words))
        out.append(Case(f"form-snapshot-{name}", "form_snapshot", data, 400, words))
    # a scenario posted as the JSON body (not a file upload)
    for name in ("malformed", "truncated", "nesting-10000", "non-utf8"):
        data = dict((n, d) for n, d, _ in SNAPSHOT_CASES)[name]
        out.append(Case(f"api-snapshot-body-{name}", "api_snapshot_body", data, 400, ("json",)))
    for name in ("negative-quantity", "allocation-on-unknown-node", "dotted-queue-name"):
        data, words = {n: (d, w) for n, d, w in SNAPSHOT_CASES}[name]
        out.append(Case(f"api-snapshot-body-{name}", "api_snapshot_body", data, 400, words))
    limit = ("larger than the limit",)
    out += [
        Case("api-config-50MB", "api_config", _big_yaml, 413, limit),
        Case("form-config-50MB", "form_config", _big_yaml, 413, limit),
        Case("api-snapshot-file-50MB", "api_snapshot_file", _big_json, 413, limit),
        Case("form-snapshot-50MB", "form_snapshot", _big_json, 413, limit),
        Case("api-snapshot-body-50MB", "api_snapshot_body", _big_json, 413, ("limit",)),
    ]
    # quota changes and what-ifs name the unknown queue or the bad quantity
    change = {"partition": "default", "queue_path": "root.a", "new_max": {"vcore": 4000}}
    out += [
        Case(
            "api-change-unknown-queue",
            "api_change",
            {**change, "queue_path": "root.nope"},
            400,
            ("root.nope",),
        ),
        Case(
            "api-change-unknown-partition",
            "api_change",
            {**change, "partition": "nope"},
            400,
            ("partition", "nope"),
        ),
        Case(
            "api-change-negative-max",
            "api_change",
            {**change, "new_max": {"vcore": -1}},
            400,
            ("new_max.vcore", "negative"),
        ),
        Case(
            "api-change-absurd-max",
            "api_change",
            {**change, "new_max": {"vcore": 2**64}},
            400,
            ("new_max.vcore", "2**63-1"),
        ),
        Case(
            "api-change-empty-resource-type",
            "api_change",
            {**change, "new_max": {"": 4000}},
            400,
            ("new_max", "resource type"),
        ),
        Case(
            "api-change-malformed-resource-type",
            "api_change",
            {**change, "new_max": {"v core<b>": 4000}},
            400,
            ("new_max", "v core<b>"),
        ),
        Case(
            "api-change-max-below-guaranteed-with-delay",
            "api_change",
            {**change, "new_max": {"vcore": 1000}, "new_delay": "5m"},
            400,
            ("new_max", "guaranteed"),
        ),
        Case(
            "api-change-nesting-10000",
            "api_raw",
            b'{"partition": "default", "queue_path": "root.a", "new_max": '
            + b"[" * 10_000
            + b"]" * 10_000
            + b"}",
            400,
            ("json",),
            {"path": "/api/quota-changes/"},
        ),
        Case(
            "api-change-negative-delay",
            "api_change",
            {**change, "new_delay": -5},
            400,
            ("new_delay", "negative"),
        ),
        Case(
            "api-change-html-queue",
            "api_change",
            {**change, "queue_path": f"root.{HTML_NAME}"},
            400,
            (HTML_NAME,),
        ),
        Case(
            "api-whatif-quota-unknown-queue",
            "api_whatif_quota",
            {"queue": "root.nope", "new_max": {"vcore": 1000}},
            400,
            ("root.nope",),
        ),
        Case(
            "api-whatif-quota-negative-max",
            "api_whatif_quota",
            {"queue": "root.a", "new_max": {"vcore": -1000}},
            400,
            ("new_max.vcore", "negative"),
        ),
        Case(
            "api-whatif-preempt-unknown-queue",
            "api_whatif_preempt",
            {"ask": {"key": "t", "queue": "root.nope", "resources": {"vcore": 1000}}},
            400,
            ("root.nope",),
        ),
        Case(
            "api-whatif-preempt-unknown-ask",
            "api_whatif_preempt",
            {"ask_key": "no-such-ask"},
            400,
            ("no-such-ask",),
        ),
        Case(
            "api-round-unknown-ask",
            "api_round",
            {"ask_keys": ["ask-1", "ghost"]},
            400,
            ("ghost",),
        ),
    ]
    return out


CASES = _cases()

# --------------------------------------------------------------------------- senders

Prepared = tuple[str, bytes, str]  # path, body, content type


def _multipart(fields: dict[str, object]) -> tuple[bytes, str]:
    # a new string: the test client encodes again when given MULTIPART_CONTENT itself
    return encode_multipart(BOUNDARY, fields), f"multipart/form-data; boundary={BOUNDARY}"


def _upload(name: str, data: object) -> SimpleUploadedFile:
    assert isinstance(data, bytes)
    return SimpleUploadedFile(name, data)


def _api_config(case: Case, snapshot: models.ClusterSnapshot) -> Prepared:
    body, ctype = _multipart({"file": _upload("queues.yaml", case.data())})
    return "/api/configs/", body, ctype


def _api_snapshot_file(case: Case, snapshot: models.ClusterSnapshot) -> Prepared:
    body, ctype = _multipart({"files": _upload("scenario.json", case.data())})
    return "/api/snapshots/", body, ctype


def _api_snapshot_body(case: Case, snapshot: models.ClusterSnapshot) -> Prepared:
    payload = case.data()
    assert isinstance(payload, bytes)
    return "/api/snapshots/", payload, "application/json"


def _api_raw(case: Case, snapshot: models.ClusterSnapshot) -> Prepared:
    payload = case.data()
    assert isinstance(payload, bytes)
    return str(case.params["path"]), payload, "application/json"


def _form(kind: str, name: str) -> Callable[[Case, models.ClusterSnapshot], Prepared]:
    def prepare(case: Case, snapshot: models.ClusterSnapshot) -> Prepared:
        body, ctype = _multipart({"kind": kind, "upload": _upload(name, case.data())})
        return "/import/", body, ctype

    return prepare


def _json_to(path: str, with_snapshot: bool) -> Callable[[Case, models.ClusterSnapshot], Prepared]:
    def prepare(case: Case, snapshot: models.ClusterSnapshot) -> Prepared:
        payload = case.data()
        assert isinstance(payload, dict)
        doc = dict(payload)
        if with_snapshot:
            doc.update({"snapshot": snapshot.pk, "wait": True})
        return path, json.dumps(doc).encode(), "application/json"

    return prepare


SENDERS: dict[str, Callable[[Case, models.ClusterSnapshot], Prepared]] = {
    "api_config": _api_config,
    "api_snapshot_file": _api_snapshot_file,
    "api_snapshot_body": _api_snapshot_body,
    "api_raw": _api_raw,
    "form_config": _form("config", "queues.yaml"),
    "form_snapshot": _form("snapshot", "scenario.json"),
    "api_change": _json_to("/api/quota-changes/", with_snapshot=False),
    "api_whatif_quota": _json_to("/api/whatif/quota/", with_snapshot=True),
    "api_whatif_preempt": _json_to("/api/whatif/preempt/", with_snapshot=True),
    "api_round": _json_to("/api/rounds/", with_snapshot=True),
}


def _error_text(case: Case, content: bytes) -> str:
    """The answer as text: the API's JSON body, or the import page's HTML, unescaped."""
    text = content.decode("utf-8", errors="replace")
    if case.channel.startswith("form_"):
        return html.unescape(text)
    try:
        return json.dumps(json.loads(text), ensure_ascii=False)
    except ValueError:  # not the API's JSON error body (a crash page): shown as it is
        return text


# --------------------------------------------------------------------------- the test


def test_there_are_at_least_twenty_cases_on_both_channels() -> None:
    """The suite covers the API and the upload form, well over twenty cases."""
    form = [c for c in CASES if c.channel.startswith("form_")]
    api = [c for c in CASES if c.channel.startswith("api_")]
    print(f"[figures] bad-input cases: {len(CASES)} ({len(api)} API, {len(form)} upload form)")
    assert len(CASES) >= 20
    assert len(form) >= 10
    assert len(api) >= 20


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_bad_input_is_refused_cleanly(
    case: Case, stored: models.ClusterSnapshot, staff: Any
) -> None:
    """A 4xx that names the problem, bounded memory, and nothing stored but the refusal alert."""
    # a crash must show as the 500 a user would get, not as the test client's exception
    client: Client = (
        Client(raise_request_exception=False)
        if case.channel.startswith("form_")
        else APIClient(raise_request_exception=False)
    )
    client.force_login(staff)
    path, body, ctype = SENDERS[case.channel](case, stored)
    before = db_counts()
    alerts_before = set(models.Alert.objects.values_list("pk", flat=True))

    with measured(f"{case.id} ({len(body)} bytes)") as figures:
        response = client.post(path, data=body, content_type=ctype)

    text = _error_text(case, response.content)
    shown = text[:300] if case.channel.startswith("api") else ""
    print(f"[answer] {case.id}: {response.status_code} {shown}")
    assert response.status_code == case.status, text[:2000]
    missing = [w for w in case.words if w.lower() not in text.lower()]
    assert missing == [], f"the answer does not name the problem: {text[:2000]}"
    assert figures.peak_bytes < len(body) + MEMORY_MARGIN

    changed = count_changes(before, db_counts())
    new_alerts = list(models.Alert.objects.exclude(pk__in=alerts_before))
    assert changed in ({}, {"dashboard.Alert": 1}), changed
    for alert in new_alerts:
        assert alert.kind == models.Alert.Kind.IMPORT_FAILED
        assert [w for w in case.words if w.lower() not in alert.message.lower()] == []
