"""Migration 0016 recomputes the open node and application spans' digests: the first poll
after the upgrade still recognises every unchanged node and application (and the way
back restores the old digests)."""

from __future__ import annotations

import hashlib
import importlib
import json
from typing import Any

from django.db.migrations.executor import MigrationExecutor
from migration_support import T0, at_migration, migrate, store_rest_snapshot

from dashboard import models
from dashboard.services.snapshots.spans import APPLICATION_FIELDS, NODE_FIELDS, json_digest

BEFORE = [("dashboard", "0015_allocation_span_digests")]
AFTER = [("dashboard", "0016_json_span_digests")]
digests_0016 = importlib.import_module("dashboard.migrations.0016_json_span_digests")
KINDS = {"NodeSpan": NODE_FIELDS, "ApplicationSpan": APPLICATION_FIELDS}


def scenario() -> dict[str, Any]:
    return {
        "partition": {"quota_preemption_enabled": True, "miss": 0.0},
        "queues": {"name": "root", "children": [{"name": "a"}]},
        # text beyond ASCII, where the two writings differ, and plain text, where they agree
        "nodes": [
            {"id": "nœud-1", "capacity": {"vcore": 10**6, "memory": 2**40}},
            {"id": "node-2", "capacity": {"vcore": 4000}},
        ],
        "allocations": [],
        "now": T0.timestamp(),
    }


APPLICATIONS: list[dict[str, object]] = [
    # a float written with an exponent (1.5e-07 against 1.5e-7) and a user beyond ASCII
    {"id": "app-1", "queue": "root.a", "state": "Running", "user": "josé", "ratio": 1.5e-07},
    {"id": "app-2", "queue": "root.a", "state": "Running", "user": "bob", "groups": ["g"]},
]


def store(minutes: int) -> models.ClusterSnapshot:
    return store_rest_snapshot(scenario(), minutes, APPLICATIONS)


def open_spans(apps: Any) -> dict[tuple[str, str], tuple[str, tuple[object, ...]]]:
    """(model, key) -> (digest, content) of every open node and application span."""
    out = {}
    for name, fields in KINDS.items():
        Span = apps.get_model("dashboard", name)
        for s in Span.objects.filter(gone_in__isnull=True):
            content = tuple(getattr(s, f) for f in fields)
            out[name, str(content[0])] = (s.digest, content)
    return out


def before_0016(content: tuple[object, ...]) -> str:
    """The digest json_digest took before 0016."""
    text = json.dumps(content, sort_keys=True, separators=(",", ":"))
    return hashlib.blake2b(text.encode(), digest_size=8).hexdigest()


def test_the_first_poll_after_the_migration_writes_no_span(transactional_db: None) -> None:
    from django.apps import apps as current

    first = store(0)
    assert models.NodeSpan.objects.count() == 2
    assert models.ApplicationSpan.objects.count() == 2
    new = open_spans(current)
    for digest, content in new.values():
        assert digest == json_digest(content)  # what the next poll compares
    old = {k: before_0016(content) for k, (_, content) in new.items()}
    # the writings differ beyond ASCII and for exponents, agree for plain rows
    assert {k for k in new if new[k][0] != old[k]} == {
        ("NodeSpan", "nœud-1"),
        ("ApplicationSpan", "app-1"),
    }

    for ex in at_migration(BEFORE):
        was = open_spans(ex.loader.project_state(BEFORE).apps)
        assert {k: d for k, (d, _) in was.items()} == old
        after = migrate(MigrationExecutor(ex.connection), AFTER)
        assert {k: d for k, (d, _) in open_spans(after).items()} == {
            k: d for k, (d, _) in new.items()
        }
        migrate(MigrationExecutor(ex.connection), ex.loader.graph.leaf_nodes())
        # the next poll of the same nodes and applications extends every span
        second = store(1)
        assert second.pk > first.pk
        assert models.NodeSpan.objects.count() == 2
        assert models.ApplicationSpan.objects.count() == 2
        assert not models.NodeSpan.objects.filter(gone_in__isnull=False).exists()
        assert not models.ApplicationSpan.objects.filter(gone_in__isnull=False).exists()


def test_the_frozen_digest_is_the_services_one() -> None:
    """The migration's copy hashes as the code does (plain, beyond ASCII, exponents)."""
    rows: list[tuple[object, ...]] = [
        ("n", {"vcore": 1}, {}, True, {"vcore": 1}, {}, []),
        ("é", {"b": 1, "a": 1.5e-07}, {}, False, {}, {}, [{"key": "x"}]),
    ]
    for row in rows:
        assert digests_0016.new_digest(row) == json_digest(row)
        assert digests_0016.old_digest(row) == before_0016(row)
