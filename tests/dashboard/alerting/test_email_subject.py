"""Issue 37, item 11: a long alert's e-mail subject is cut at a word, before any
parenthesis the cut would leave open, with an ellipsis; short ones are whole."""

from __future__ import annotations

from dashboard.alerting.payload import SUBJECT_MAX_CHARS, AlertBody, email_subject, shorten


def body(message: str) -> AlertBody:
    return AlertBody(
        id=1,
        kind="quota",
        kind_label="Quota timer fired (predicted)",
        level="info",
        message=message,
        cluster="prod",
        partition="default",
        queue="root.a",
        run=None,
        change=None,
        count=1,
        created_at="2026-11-28T00:00:00Z",
        last_seen_at="2026-11-28T00:00:00Z",
    )


def test_a_long_subject_is_not_cut_inside_a_parenthesis() -> None:
    victims = ", ".join(f"alloc-{i:04d}" for i in range(40))
    message = (
        "root.a: quota change 7 timer fired in the dashboard (predicted, nothing was "
        f"preempted in the cluster): target claimed, 40 predicted victims ({victims})"
    )
    subject = email_subject(body(message), test=False)
    assert len(subject) <= SUBJECT_MAX_CHARS
    assert subject.endswith(" …")
    assert subject.count("(") == subject.count(")")
    assert subject.startswith("INFO [prod] Quota timer fired (predicted): root.a: quota change 7")
    assert "40 predicted victims" in subject


def test_a_short_subject_is_whole() -> None:
    assert email_subject(body("root.a: fired"), test=True) == (
        "[test] INFO [prod] Quota timer fired (predicted): root.a: fired"
    )


def test_shorten_without_spaces_or_brackets() -> None:
    assert len(shorten("x" * 500, 200)) <= 200
    inside = shorten("(" + "y" * 300, 50)
    assert inside.startswith("(yyy")
    assert len(inside) <= 50
