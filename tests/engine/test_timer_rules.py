"""Both timer rule sets, case by case (engine.md 5 for ``seed``, 5.1 for ``scheduler``).

Each ``scheduler`` case derives its deadline from yunikorn-core
``pkg/scheduler/objects/queue.go`` at be3bb487 (``setPreemptionTime``,
``IncAllocatedResource``, ``tryAcquirePreemption``, ``setQuotaPreemptionState``),
quoting the Go condition that decides it; each ``seed`` case from engine.md 5.
Times are seconds; the delay is 60 unless a case says otherwise.
"""

from __future__ import annotations

from collections.abc import Mapping

import pytest

from engine.errors import ScenarioError
from engine.timers import (
    Completed,
    ConfigChanged,
    DeadlineReason,
    QueueFacts,
    RuleSet,
    Tick,
    TimerDecision,
    TimerEvent,
    TimerState,
    UsageRose,
    rearm_after_restart,
    tick_queues,
    timer_step,
)
from engine.timers_scheduler import go_strictly_greater, go_within

M = "memory"


def change(
    old: int | None,
    new: int | None,
    usage: int,
    *,
    old_delay: float = 60.0,
    delay: float = 60.0,
    enabled: bool = True,
    dynamic: bool = False,
) -> ConfigChanged:
    return ConfigChanged(
        old_max=None if old is None else {M: old},
        max=None if new is None else {M: new},
        usage={M: usage},
        old_delay=old_delay,
        delay=delay,
        enabled=enabled,
        dynamic=dynamic,
    )


def tick(max_: int, usage: int, *, delay: float = 60.0) -> Tick:
    return Tick(max={M: max_}, usage={M: usage}, delay=delay, enabled=True)


def run(rules: RuleSet, steps: list[tuple[TimerEvent, float]]) -> list[TimerDecision]:
    state = TimerState.idle()
    out = []
    for event, now in steps:
        d = timer_step(state, event, now, rules=rules)
        out.append(d)
        state = d.state
    return out


# -- a second decrease ----------------------------------------------------------------


def test_second_decrease_keeps_the_first_start_under_scheduler() -> None:
    """Max 100 -> 50 at 1000 (usage 80), then 50 -> 40 at 1030.

    Go, setPreemptionTime: the first change passes ``resources.StrictlyGreaterThan(
    oldMaxResource, sq.maxResource)`` with ``quotaPreemptionStartTime.IsZero()`` ->
    ``time.Now().Add(sq.quotaPreemptionDelay)`` = 1000 + 60 = 1060. The second is
    lowered again with ``!sq.quotaPreemptionStartTime.IsZero()`` and ``oldDelay ==
    sq.quotaPreemptionDelay`` -> return ("consecutive lowering ... already set"):
    still 1060, kept from the first decrease at 1000.
    """
    first, second = run("scheduler", [(change(100, 50, 80), 1000.0), (change(50, 40, 80), 1030.0)])
    assert (first.action, first.state.deadline) == ("start_wait", 1060.0)
    assert (second.action, second.state.deadline) == ("kept", 1060.0)
    assert second.reason == DeadlineReason("kept", 1000.0, 1000.0)


def test_second_decrease_resets_from_the_change_under_seed() -> None:
    """engine.md 5: "waiting(t + delay), reset from t": the second decrease at 1030 gives 1090."""
    _, second = run("seed", [(change(100, 50, 80), 1000.0), (change(50, 40, 80), 1030.0)])
    assert (second.action, second.state.deadline) == ("reset", 1090.0)
    assert second.reason == DeadlineReason("reset", 1030.0)


# -- a delay change, up and down ------------------------------------------------------


@pytest.mark.parametrize(("new_delay", "expected"), [(120.0, 1120.0), (30.0, 1030.0)])
def test_delay_change_shifts_by_new_minus_old_under_scheduler(
    new_delay: float, expected: float
) -> None:
    """Max 100 -> 50 at 1000 (deadline 1060), then only the delay 60 -> *new_delay* at 1010.

    Go, setPreemptionTime: ``resources.Equals(oldMaxResource, sq.maxResource)`` with a
    start time set and ``oldDelay != sq.quotaPreemptionDelay`` ->
    ``sq.quotaPreemptionStartTime.Add(sq.quotaPreemptionDelay - oldDelay)``:
    1060 + (120 - 60) = 1120 up, 1060 + (30 - 60) = 1030 down.
    """
    _, shifted = run(
        "scheduler",
        [(change(100, 50, 80), 1000.0), (change(50, 50, 80, delay=new_delay), 1010.0)],
    )
    assert (shifted.action, shifted.state.deadline) == ("shifted", expected)
    assert shifted.reason == DeadlineReason("shifted", 1010.0, 1000.0)


def test_delay_change_into_the_past_fires_at_the_next_tick_under_scheduler() -> None:
    """Deadline 1060, delay 60 -> 5 at 1050: 1060 - 55 = 1005, already past ("The resulting
    time could be in the past: also not an issue"); ``tryAcquirePreemption`` passes
    ``time.Now().Before(sq.quotaPreemptionStartTime)`` false at the tick of 1051."""
    decisions = run(
        "scheduler",
        [
            (change(100, 50, 80), 1000.0),
            (change(50, 50, 80, delay=5.0), 1050.0),
            (tick(50, 80, delay=5.0), 1051.0),
        ],
    )
    assert decisions[1].state.deadline == 1005.0
    assert decisions[2].action == "start_preemption"


def test_decrease_with_a_delay_change_shifts_under_scheduler() -> None:
    """A further decrease 50 -> 40 with delay 60 -> 90 at 1030: the lowered branch with
    ``oldDelay != sq.quotaPreemptionDelay`` shifts the first deadline: 1060 + 30 = 1090."""
    _, d = run(
        "scheduler", [(change(100, 50, 80), 1000.0), (change(50, 40, 80, delay=90.0), 1030.0)]
    )
    assert (d.action, d.state.deadline) == ("shifted", 1090.0)


@pytest.mark.parametrize(("new_delay", "expected"), [(120.0, 1130.0), (30.0, 1040.0)])
def test_delay_change_resets_from_the_change_under_seed(new_delay: float, expected: float) -> None:
    """engine.md 5: only the delay changed -> waiting(t + new delay) from t = 1010."""
    _, d = run(
        "seed", [(change(100, 50, 80), 1000.0), (change(50, 50, 80, delay=new_delay), 1010.0)]
    )
    assert (d.action, d.state.deadline) == ("reset", expected)


def test_delay_newly_set_starts_a_timer_under_scheduler() -> None:
    """Max unchanged 50, usage 80, delay 0 -> 60 at 1000: ``oldDelay == 0 &&
    sq.quotaPreemptionDelay > 0`` with no start time -> 1000 + 60."""
    (d,) = run("scheduler", [(change(50, 50, 80, old_delay=0.0), 1000.0)])
    assert (d.action, d.state.deadline) == ("start_wait", 1060.0)


# -- a raise while waiting, then the deadline ----------------------------------------


@pytest.mark.parametrize(("usage_then", "fires"), [(70, True), (55, False)])
def test_raise_while_waiting_keeps_the_timer_under_scheduler(usage_then: int, fires: bool) -> None:
    """Max 100 -> 50 at 1000 (usage 80, deadline 1060), raised 50 -> 60 at 1030.

    Go, setPreemptionTime: usage 80 is not within 60, ``resources.StrictlyGreaterThan(
    sq.maxResource, oldMaxResource)`` with a start time and no delay change -> left as
    is ("decision would be taken later based on the usage then"): still 1060. At 1060
    ``tryAcquirePreemption`` runs only if not ``sq.maxResource.
    StrictlyGreaterThanOrEqualsOnlyExisting(sq.allocatedResource)``: usage 70 > 60
    fires; usage 55 <= 60 clears the start time.
    """
    decisions = run(
        "scheduler",
        [
            (change(100, 50, 80), 1000.0),
            (change(50, 60, 80), 1030.0),
            (tick(60, usage_then), 1060.0),
        ],
    )
    assert (decisions[1].action, decisions[1].state.deadline) == ("kept_across_raise", 1060.0)
    assert decisions[1].reason == DeadlineReason("kept_across_raise", 1030.0, 1000.0)
    if fires:
        assert (decisions[2].action, decisions[2].plan_max) == ("start_preemption", {M: 60})
    else:
        assert (decisions[2].action, decisions[2].state) == ("cancelled", TimerState.idle())


def test_raise_while_waiting_cancels_under_seed() -> None:
    """engine.md 5: a purely looser max -> idle ("an increase cancels a pending decrease");
    the tick at 1060 then finds nothing, even with usage 70 above the raised max 60."""
    decisions = run(
        "seed",
        [(change(100, 50, 80), 1000.0), (change(50, 60, 80), 1030.0), (tick(60, 70), 1060.0)],
    )
    assert decisions[1].action == "cancelled_by_increase"
    assert decisions[2].state.is_idle


def test_raise_without_a_timer_starts_none_under_scheduler() -> None:
    """No timer, max 40 -> 60 with usage 80: the raised branch only adjusts a start time
    that is set (``if !sq.quotaPreemptionStartTime.IsZero()``): none starts. A newly
    set max (nil -> 60) is "raised" too (``StrictlyGreaterThan`` reads nil as zero)."""
    assert run("scheduler", [(change(40, 60, 80), 1000.0)])[0].state.is_idle
    assert run("scheduler", [(change(None, 60, 80), 1000.0)])[0].state.is_idle
    assert run("seed", [(change(None, 60, 80), 1000.0)])[0].state.deadline == 1060.0


# -- usage within the new max ----------------------------------------------------------


@pytest.mark.parametrize("rules", ["scheduler", "seed"])
def test_no_timer_while_usage_is_within_the_new_max(rules: RuleSet) -> None:
    """Max 100 -> 50 with usage 50: Go clears the start time when ``sq.maxResource.
    StrictlyGreaterThanOrEqualsOnlyExisting(sq.allocatedResource)`` (50 >= 50); the seed
    waits only if usage exceeds the new max. A waiting timer is cancelled in both."""
    (d,) = run(rules, [(change(100, 50, 50), 1000.0)])
    assert (d.action, d.state) == ("none", TimerState.idle())
    d = timer_step(TimerState.waiting(1060.0), change(50, 45, 45), 1010.0, rules=rules)
    assert (d.action, d.state) == ("cancelled", TimerState.idle())


def test_scheduler_clears_a_timer_before_its_deadline_once_usage_fits() -> None:
    """``tryAcquirePreemption`` tests usage before time: at 1030 (deadline 1060) usage 40
    within max 50 -> ``sq.quotaPreemptionStartTime = time.Time{}``. The seed waits for
    the deadline (a tick before it does nothing)."""
    waiting = TimerState.waiting(1060.0)
    assert timer_step(waiting, tick(50, 40), 1030.0, rules="scheduler").state.is_idle
    assert timer_step(waiting, tick(50, 40), 1030.0, rules="seed").state == waiting


def test_go_within_reads_only_the_types_the_max_names() -> None:
    """``StrictlyGreaterThanOrEqualsOnlyExisting``: types the max does not name do not count."""
    assert go_within({M: 50}, {M: 50, "vcore": 10_000})
    assert not go_within({M: 50, "vcore": 1}, {M: 10, "vcore": 2})
    assert go_strictly_greater({M: 100, "vcore": 5}, {M: 50})
    assert not go_strictly_greater({M: 100}, {M: 50, "vcore": 1})  # mixed: neither way


def test_mixed_change_leaves_the_timer_as_it_is_under_scheduler() -> None:
    """Memory down, vcore up: neither ``StrictlyGreaterThan`` holds, no branch touches the
    start time: a waiting timer keeps its deadline, an idle queue starts none."""
    ev = ConfigChanged(
        old_max={M: 100, "vcore": 10},
        max={M: 50, "vcore": 20},
        usage={M: 80, "vcore": 5},
        old_delay=60.0,
        delay=60.0,
        enabled=True,
    )
    assert timer_step(TimerState.idle(), ev, 1000.0, rules="scheduler").state.is_idle
    kept = timer_step(TimerState.waiting(1060.0), ev, 1030.0, rules="scheduler")
    assert kept.state.deadline == 1060.0
    assert timer_step(TimerState.idle(), ev, 1000.0, rules="seed").state.deadline == 1060.0


# -- a dynamic queue, the flag off -----------------------------------------------------


@pytest.mark.parametrize("rules", ["scheduler", "seed"])
def test_dynamic_queue_never_gets_a_timer(rules: RuleSet) -> None:
    """Go: ``tryAcquirePreemption`` returns false when ``!sq.isManaged`` and
    ``IncAllocatedResource`` returns on ``!sq.isManaged``: nothing ever fires, so no
    deadline is shown; engine.md 5: dynamic queues get no timer."""
    for event in (change(100, 50, 80, dynamic=True), _rose(dynamic=True)):
        d = timer_step(TimerState.idle(), event, 1000.0, rules=rules)
        assert (d.action, d.state) == ("no_timer", TimerState.idle())


def test_flag_off_gives_no_timer_under_seed() -> None:
    """engine.md 5: with the partition flag off a config change leaves the queue idle."""
    d = timer_step(TimerState.idle(), change(100, 50, 80, enabled=False), 1000.0, rules="seed")
    assert (d.action, d.state) == ("disabled", TimerState.idle())


def test_config_applied_with_the_flag_off_arms_as_when_on_under_scheduler() -> None:
    """Go: ``UpdateQueueProperties`` -> ``setPreemptionTime`` never reads the partition flag:
    100 -> 50 at 1000 with usage 80 arms 1000 + 60 whether the flag is on or off; a
    further decrease keeps it, a delay change shifts it, both with the flag off."""
    off = timer_step(TimerState.idle(), change(100, 50, 80, enabled=False), 1000.0)
    on = timer_step(TimerState.idle(), change(100, 50, 80), 1000.0)
    assert off.state == on.state == TimerState.waiting(1060.0)
    kept = timer_step(off.state, change(50, 40, 80, enabled=False), 1010.0)
    assert kept.state.deadline == 1060.0
    shifted = timer_step(kept.state, change(40, 40, 80, delay=90.0, enabled=False), 1020.0)
    assert shifted.state.deadline == 1090.0


def test_flag_off_neither_fires_nor_clears_and_on_again_fires_under_scheduler() -> None:
    """Go, scheduler.go: ``if psc.IsQuotaPreemptionEnabled() { psc.root.TryQuotaPreemption() }``:
    while the flag is off no queue is checked, so a waiting timer stays (even past its
    deadline, even with usage back within the max); the first check after the flag is
    on again fires it (deadline passed) or clears it (usage within)."""
    waiting = TimerState.waiting(1060.0)
    off_over = Tick(max={M: 50}, usage={M: 80}, delay=60.0, enabled=False)
    off_within = Tick(max={M: 50}, usage={M: 10}, delay=60.0, enabled=False)
    for ev in (off_over, off_within):
        assert timer_step(waiting, ev, 2000.0).state == waiting
    assert timer_step(waiting, tick(50, 80), 2000.0).action == "start_preemption"
    assert timer_step(waiting, tick(50, 10), 2000.0).state.is_idle


def test_usage_rise_with_the_flag_off_arms_nothing_under_scheduler() -> None:
    """Go, IncAllocatedResource: ``if !isQuotaPreemptionEnabled || ... { return }``."""
    ev = UsageRose(max={M: 50}, usage={M: 80}, delay=60.0, enabled=False)
    assert timer_step(TimerState.idle(), ev, 1000.0).state.is_idle


# -- usage rising, completion ----------------------------------------------------------


def _rose(*, usage: int = 80, dynamic: bool = False) -> UsageRose:
    return UsageRose(max={M: 50}, usage={M: usage}, delay=60.0, enabled=True, dynamic=dynamic)


@pytest.mark.parametrize("rules", ["scheduler", "seed"])
def test_usage_rise_starts_a_timer_and_never_moves_one(rules: RuleSet) -> None:
    """Go, IncAllocatedResource: no start time, managed, delay > 0, max set and usage not
    within -> ``time.Now().Add(sq.quotaPreemptionDelay)`` = 500 + 60; a set start time
    returns early (``!sq.quotaPreemptionStartTime.IsZero()``). The seed agrees."""
    d = timer_step(TimerState.idle(), _rose(), 500.0, rules=rules)
    assert (d.state.deadline, d.reason) == (560.0, DeadlineReason("usage_rose", 500.0))
    again = timer_step(d.state, _rose(usage=90), 530.0, rules=rules)
    assert again.state.deadline == 560.0


def test_completion_clears_the_timer_under_scheduler() -> None:
    """Go, setQuotaPreemptionState(false): ``sq.quotaPreemptionStartTime = time.Time{}``: idle
    even when the max was lowered meanwhile (the change was ignored while running); the
    seed re-checks it and waits again from the completion."""
    running = TimerState.running(1060.0, {M: 50})
    done = Completed(max={M: 30}, usage={M: 45}, delay=60.0, enabled=True)
    assert timer_step(running, done, 1100.0, rules="scheduler").state.is_idle
    assert timer_step(running, done, 1100.0, rules="seed").state.deadline == 1160.0


# -- recovery after a scheduler restart ------------------------------------------------


def test_restart_rearms_every_queue_over_its_max_under_scheduler() -> None:
    """A restart at 2000: recovery adds every allocation through ``IncAllocatedResource``
    with no start time (timers are not persisted) -> 2000 + 60 = 2060 for a queue over
    its max, whether it was idle, waiting (1060) or running before; a queue within its
    max gets none."""
    facts = QueueFacts(max={M: 50}, usage={M: 80}, delay=60.0, enabled=True)
    for before in (
        TimerState.idle(),
        TimerState.waiting(1060.0),
        TimerState.running(1060.0, {M: 50}),
    ):
        d = rearm_after_restart(before, 2000.0, facts, rules="scheduler")
        assert (d.action, d.state.deadline) == ("restarted", 2060.0)
        assert d.reason == DeadlineReason("rearmed", 2000.0)
    fits = QueueFacts(max={M: 50}, usage={M: 40}, delay=60.0, enabled=True)
    assert rearm_after_restart(TimerState.waiting(1060.0), 2000.0, fits).state.is_idle
    dynamic = QueueFacts(max={M: 50}, usage={M: 80}, delay=60.0, enabled=True, dynamic=True)
    assert rearm_after_restart(TimerState.idle(), 2000.0, dynamic).state.is_idle


def test_restart_rearms_only_queues_that_recovered_usage_under_scheduler() -> None:
    """A fresh queue is built by ``NewConfiguredQueue`` -> ``UpdateQueueProperties(nil)``
    with no usage, and only ``IncAllocatedResource`` of a recovered allocation arms a
    timer: an empty queue stays idle even with a ``gpu: 0`` max (which Go's
    ``StrictlyGreaterThanOrEqualsOnlyExisting`` calls "not within" an empty usage),
    whatever it did before; with the flag off no recovered allocation arms one."""
    empty = QueueFacts(max={M: 50, "gpu": 0}, usage={}, delay=60.0, enabled=True)
    for before in (TimerState.idle(), TimerState.waiting(1060.0)):
        assert rearm_after_restart(before, 2000.0, empty).state.is_idle
    off = QueueFacts(max={M: 50}, usage={M: 80}, delay=60.0, enabled=False)
    assert rearm_after_restart(TimerState.waiting(1060.0), 2000.0, off).state.is_idle


def test_restart_restarts_only_pending_timers_from_zero_under_seed() -> None:
    """engine.md 5, "Restart": a pending or running timer restarts from the recovery
    (2000 + 60); an idle queue stays idle."""
    facts = QueueFacts(max={M: 50}, usage={M: 80}, delay=60.0, enabled=True)
    d = rearm_after_restart(TimerState.waiting(1060.0), 2000.0, facts, rules="seed")
    assert (d.state.deadline, d.reason) == (2060.0, DeadlineReason("rearmed", 2000.0))
    assert rearm_after_restart(TimerState.idle(), 2000.0, facts, rules="seed").state.is_idle


def test_reason_round_trips_with_the_state_and_unknown_rules_are_refused() -> None:
    """A waiting state's reason survives ``to_dict``/``from_dict``; a bad rule set is an error."""
    state = TimerState.waiting(1060.0, DeadlineReason("kept_across_raise", 1030.0, 1000.0))
    back = TimerState.from_dict(state.to_dict())
    assert (back, back.reason) == (state, state.reason)
    with pytest.raises(ScenarioError, match="rule set"):
        timer_step(TimerState.idle(), change(1, 0, 1), 0.0, rules="go")  # type: ignore[arg-type]
    bad: Mapping[str, object] = {"kind": "waiting", "deadline": 1.0, "reason": {"rule": "x"}}
    with pytest.raises(ScenarioError, match="deadline rule"):
        TimerState.from_dict(bad)


# -- the walk once a second ---------------------------------------------------------------


def _facts(max_: int, usage: int) -> QueueFacts:
    return QueueFacts(max={M: max_}, usage={M: usage}, delay=60.0, enabled=True)


def test_walk_runs_the_parent_and_holds_the_child_due_in_the_same_second() -> None:
    """Go, TryQuotaPreemption: ``if sq.tryAcquirePreemption() { go ...; return }`` before
    the children are visited: a parent and its child both due at 1060 -> the parent
    starts and the child stays waiting; the seed fires the child first (deepest)."""
    states = {"root.p": TimerState.waiting(1060.0), "root.p.l": TimerState.waiting(1060.0)}
    facts = {"root.p": _facts(50, 80), "root.p.l": _facts(50, 80)}
    walk = tick_queues(states, facts, 1060.0)
    assert [(p, d.action) for p, d in walk] == [
        ("root.p", "start_preemption"),
        ("root.p.l", "skipped_ancestor_running"),
    ]
    assert walk[1][1].state == states["root.p.l"]
    seed = tick_queues(states, facts, 1060.0, rules="seed")
    assert [(p, d.action) for p, d in seed] == [
        ("root.p.l", "start_preemption"),
        ("root.p", "start_preemption"),
    ]


def test_walk_hides_the_subtree_of_a_running_queue() -> None:
    """Go: ``if sq.getQuotaPreemptionRunning() { return }`` before the children: a child
    below a running parent is neither fired (due) nor cleared (within its max)."""
    states = {
        "root.p": TimerState.running(1000.0, {M: 50}),
        "root.p.due": TimerState.waiting(1010.0),
        "root.p.fits": TimerState.waiting(1100.0),
        "root.q": TimerState.waiting(1100.0),
    }
    facts = {
        "root.p": _facts(50, 80),
        "root.p.due": _facts(10, 40),
        "root.p.fits": _facts(50, 10),
        "root.q": _facts(50, 10),
    }
    walk = dict(tick_queues(states, facts, 1020.0))
    assert walk["root.p.due"].state == states["root.p.due"]
    assert walk["root.p.fits"].state == states["root.p.fits"]
    # a sibling outside the running subtree within its max is cleared before its deadline
    assert walk["root.q"].action == "cancelled"


def test_walk_checks_nothing_while_the_flag_is_off() -> None:
    """Go, scheduler.go: the quota check runs only ``if psc.IsQuotaPreemptionEnabled()``."""
    states = {"root.a": TimerState.waiting(1000.0), "root.b": TimerState.waiting(1000.0)}
    off = QueueFacts(max={M: 50}, usage={M: 80}, delay=60.0, enabled=False)
    fits = QueueFacts(max={M: 50}, usage={M: 10}, delay=60.0, enabled=False)
    walk = tick_queues(states, {"root.a": off, "root.b": fits}, 2000.0)
    assert [d.state for _, d in walk] == [states["root.a"], states["root.b"]]


def test_a_max_of_zeros_is_no_max_under_scheduler() -> None:
    """Go, setResources: a max that is not ``StrictlyGreaterThanZero`` (``{gpu: 0}``,
    ``{memory: 0}``) leaves the queue with no max, and ``IsZero`` stops both
    ``setPreemptionTime`` and ``IncAllocatedResource``: no timer (found by the oracle)."""
    for zero in ({"gpu": 0}, {M: 0}, {M: 0, "gpu": 0}):
        ev = ConfigChanged(
            old_max={M: 11}, max=zero, usage={}, old_delay=5.0, delay=5.0, enabled=True
        )
        assert timer_step(TimerState.idle(), ev, 55.0).state.is_idle
        rose = UsageRose(max=zero, usage={"gpu": 1}, delay=3.0, enabled=True)
        assert timer_step(TimerState.idle(), rose, 18.0).state.is_idle
