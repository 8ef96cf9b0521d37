"""The package's library API (engine/__init__.py): evaluate and the lazy re-exports."""

from __future__ import annotations

import pytest

from engine import evaluate, parse_scenario


def doc(request: dict[str, object]) -> dict[str, object]:
    return {
        "now": 1000,
        "partition": {"quota_preemption_enabled": True},
        "queues": {
            "name": "root",
            "children": [{"name": "a", "guaranteed": {"vcore": 2}}, {"name": "b"}],
        },
        "nodes": [{"id": "n1", "capacity": {"vcore": 4}}],
        "allocations": [
            {"key": "b1", "queue": "root.b", "node": "n1", "resources": {"vcore": 2}},
            {"key": "b2", "queue": "root.b", "node": "n1", "resources": {"vcore": 2}},
        ],
        "request": request,
    }


ASK = {"key": "k", "queue": "root.a", "resources": {"vcore": 2}}


@pytest.mark.parametrize(
    ("request_doc", "keys"),
    [
        ({"type": "preempt", "ask": ASK}, {"status", "node", "fence", "victims", "reason"}),
        ({"type": "round", "asks": [ASK]}, {"results", "preempted_total", "capped"}),
        ({"type": "resources", "queue": "root.b"}, {"preemptable", "remaining_guaranteed"}),
        (
            {"type": "quota_change", "queue": "root.b", "new_max": {"vcore": 2}},
            {"status", "queue", "preemptable", "claimed", "leaves", "victims", "alerts"},
        ),
    ],
)
def test_evaluate_answers_every_request_type(
    request_doc: dict[str, object], keys: set[str]
) -> None:
    """evaluate dispatches each request type; every answer has the contract keys."""
    answer = evaluate(parse_scenario(doc(request_doc))).to_dict()
    assert keys <= set(answer)


def test_evaluate_preempt_answer() -> None:
    """A concrete preempt through evaluate: b's youngest-by-key victim frees n1."""
    answer = evaluate(parse_scenario(doc({"type": "preempt", "ask": ASK}))).to_dict()
    assert answer["status"] == "preempted"
    assert answer["node"] == "n1"
    assert len(answer["victims"]) == 1  # type: ignore[arg-type]


def test_lazy_reexports() -> None:
    """plan_quota_change and timer_step come from the quota and timer modules."""
    import engine.quota
    import engine.timers

    assert engine.plan_quota_change is engine.quota.plan_quota_change
    assert engine.timer_step is engine.timers.timer_step
    with pytest.raises(AttributeError):
        _ = engine.no_such_thing
