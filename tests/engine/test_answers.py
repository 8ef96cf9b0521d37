"""Answer dataclasses of ``preempt`` and ``round`` and their JSON objects."""

from __future__ import annotations

import pytest

from engine.answers import PreemptAnswer, RoundAnswer


def test_answer_from_dict_rejects_unknown_status() -> None:
    """from_dict validates the status word."""
    with pytest.raises(ValueError, match="status"):
        PreemptAnswer.from_dict({"status": "maybe", "fence": "root"})


def test_answers_round_trip_through_their_json_objects() -> None:
    """from_dict(to_dict()) gives back an equal answer, victims order and all."""
    pa = PreemptAnswer("preempted", "root.a", "n1", ("b2", "b1"), None, "ask-1")
    assert pa.to_dict() == {
        "ask": "ask-1",
        "status": "preempted",
        "node": "n1",
        "fence": "root.a",
        "victims": ["b2", "b1"],
        "reason": None,
    }
    assert PreemptAnswer.from_dict(pa.to_dict()) == pa
    ra = RoundAnswer((pa,), {"vcore": 3}, capped=True)
    assert ra.to_dict()["preempted_total"] == {"vcore": 3}
    assert RoundAnswer.from_dict(ra.to_dict()) == ra
