"""Quota preemption delay timers (engine.md 5; the quota seed, "Quota Preemption Delay")."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from support.profiles import examples

from engine.errors import ScenarioError
from engine.timers import (
    Completed,
    ConfigChanged,
    QueueFacts,
    Tick,
    TimerState,
    UsageRose,
    due_queues,
    is_purely_looser,
    predict_after_scheduler_restart,
    running_descendants,
    same_max,
)
from engine.timers import timer_step as _timer_step

Q = 90  # the seed's "Q": a max of 90 units of memory


def timer_step(state: TimerState, event: Any, now: float) -> Any:
    """These are the seed's rules (rule set ``seed``); tests/engine/test_timer_rules.py has 5.1."""
    return _timer_step(state, event, now, rules="seed")


def change(
    old: Mapping[str, int] | None,
    new: Mapping[str, int] | None,
    usage: Mapping[str, int] | None,
    *,
    delay: float = 60.0,
    old_delay: float | None = None,
    enabled: bool = True,
    dynamic: bool = False,
) -> ConfigChanged:
    return ConfigChanged(
        old_max=old,
        max=new,
        usage=usage,
        old_delay=delay if old_delay is None else old_delay,
        delay=delay,
        enabled=enabled,
        dynamic=dynamic,
    )


def tick(
    max_: Mapping[str, int] | None, usage: Mapping[str, int], *, ancestor_running: bool = False
) -> Tick:
    return Tick(max=max_, usage=usage, delay=60.0, enabled=True, ancestor_running=ancestor_running)


# -- config changes -----------------------------------------------------------------


def test_decrease_below_usage_starts_the_timer_from_the_change() -> None:
    """5: a tighter max exceeded by usage -> waiting(t + delay)."""
    d = timer_step(TimerState.idle(), change({"memory": Q}, {"memory": 30}, {"memory": 80}), 1000.0)
    assert (d.action, d.state) == ("start_wait", TimerState.waiting(1060.0))


def test_further_decrease_resets_from_the_change_time() -> None:
    """5 / seed: a change while waiting restarts from t, not adjusted from the old deadline."""
    waiting = TimerState.waiting(1060.0)
    d = timer_step(waiting, change({"memory": 30}, {"memory": 20}, {"memory": 80}), 1030.0)
    assert (d.action, d.state.deadline) == ("reset", 1090.0)


def test_only_a_delay_change_resets_too() -> None:
    """5: only the delay changed -> reset from t with the new delay (Go would shift it, 8.7)."""
    waiting = TimerState.waiting(1060.0)
    ev = change({"memory": 30}, {"memory": 30}, {"memory": 80}, old_delay=60.0, delay=120.0)
    d = timer_step(waiting, ev, 1030.0)
    assert (d.action, d.state.deadline) == ("reset", 1150.0)


def test_nothing_changed_is_a_no_op() -> None:
    """5: the timer only moves when the max or the delay changes."""
    waiting = TimerState.waiting(1060.0)
    d = timer_step(waiting, change({"memory": 30}, {"memory": 30}, {"memory": 80}), 1030.0)
    assert (d.action, d.state) == ("none", waiting)


def test_seed_increase_before_the_deadline_cancels() -> None:
    """Seed: Q -> Q/3 at T1 (delay x), then Q/3 -> Q/2 at T2 < T1 + x: no preemption."""
    usage = {"memory": 80}
    d1 = timer_step(TimerState.idle(), change({"memory": Q}, {"memory": Q // 3}, usage), 1000.0)
    assert d1.state.is_waiting
    d2 = timer_step(d1.state, change({"memory": Q // 3}, {"memory": Q // 2}, usage), 1030.0)
    assert (d2.action, d2.state) == ("cancelled_by_increase", TimerState.idle())
    d3 = timer_step(d2.state, tick({"memory": Q // 2}, usage), 1100.0)
    assert (d3.action, d3.state) == ("none", TimerState.idle())


def test_seed_increase_after_the_preemption_started_is_ignored() -> None:
    """Seed: if T1 + x just passed and preemption started, the change at T2 cannot revert it."""
    usage = {"memory": 80}
    running = TimerState.running(1060.0, {"memory": Q // 3})
    d = timer_step(running, change({"memory": Q // 3}, {"memory": Q // 2}, usage), 1061.0)
    assert (d.action, d.state) == ("skipped_running", running)


def test_running_ignores_even_a_zero_delay_decrease() -> None:
    """Seed: only one preemption per queue, even for a decrease with delay 0 meanwhile."""
    running = TimerState.running(1060.0, {"memory": 30})
    ev = change({"memory": 30}, {"memory": 10}, {"memory": 80}, delay=0.0, old_delay=60.0)
    assert timer_step(running, ev, 1061.0).state == running


def test_tightening_one_type_counts_even_when_another_loosens() -> None:
    """5: "some type tighter" is enough; the whole change is not purely looser."""
    ev = change({"memory": 50, "vcore": 10}, {"memory": 100, "vcore": 5}, {"vcore": 8})
    d = timer_step(TimerState.idle(), ev, 0.0)
    assert (d.action, d.state.deadline) == ("start_wait", 60.0)


def test_new_limit_type_and_newly_set_max_count_as_tightening() -> None:
    """5 / 8.7: a new type limit or a first max can start a timer (Go would not)."""
    for old, new, usage in [
        ({"memory": 100}, {"memory": 100, "vcore": 100}, {"memory": 50, "vcore": 500}),  # row 5
        (None, {"memory": 50}, {"memory": 80}),  # row 2
        ({"memory": 100}, {"vcore": 100}, {"memory": 100, "vcore": 500}),  # row 7
    ]:
        assert timer_step(TimerState.idle(), change(old, new, usage), 0.0).state.is_waiting


def test_decrease_within_usage_does_not_wait_and_cancels_a_wait() -> None:
    """5: a tighter max that usage does not exceed -> idle."""
    ev = change({"memory": 90}, {"memory": 80}, {"memory": 50})
    assert timer_step(TimerState.idle(), ev, 0.0).action == "none"
    d = timer_step(TimerState.waiting(30.0), ev, 0.0)
    assert (d.action, d.state) == ("cancelled", TimerState.idle())


@pytest.mark.parametrize(
    ("enabled", "delay"), [(False, 60.0), (True, 0.0)], ids=["flag-off", "delay-0"]
)
def test_flag_off_or_zero_delay_gives_no_timer(enabled: bool, delay: float) -> None:
    """5: partition flag off or effective delay 0 -> idle, also cancelling a waiting timer."""
    ev = change({"memory": 90}, {"memory": 10}, {"memory": 50}, delay=delay, enabled=enabled)
    for state in (TimerState.idle(), TimerState.waiting(99.0)):
        d = timer_step(state, ev, 0.0)
        assert (d.action, d.state) == ("disabled", TimerState.idle())


def test_dynamic_queue_gets_no_timer() -> None:
    """5 / seed "Dynamic Queues": template-created queues and annotation limits have no timer."""
    facts: dict[str, Any] = {
        "max": {"memory": 10},
        "usage": {"memory": 50},
        "delay": 60.0,
        "enabled": True,
    }
    events: list[ConfigChanged | UsageRose] = [
        ConfigChanged(old_max={"memory": 90}, old_delay=60.0, dynamic=True, **facts),
        UsageRose(dynamic=True, **facts),
    ]
    for ev in events:
        d = timer_step(TimerState.idle(), ev, 0.0)
        assert (d.action, d.state) == ("no_timer", TimerState.idle())
    d = timer_step(TimerState.waiting(0.0), Tick(dynamic=True, **facts), 5.0)
    assert (d.action, d.plan_max) == ("no_timer", None)


# -- usage rising --------------------------------------------------------------------


def _rose(usage: Mapping[str, int], *, delay: float = 60.0) -> UsageRose:
    return UsageRose(max={"memory": 50}, usage=usage, delay=delay, enabled=True)


def test_usage_rise_while_idle_starts_a_wait() -> None:
    """5: usage rises above the max while idle and the delay > 0 -> waiting(now + delay)."""
    d = timer_step(TimerState.idle(), _rose({"memory": 60}), 500.0)
    assert (d.action, d.state) == ("start_wait", TimerState.waiting(560.0))
    assert timer_step(TimerState.idle(), _rose({"memory": 50}), 500.0).state.is_idle
    assert timer_step(TimerState.idle(), _rose({"memory": 60}, delay=0.0), 500.0).state.is_idle


def test_usage_rise_does_not_move_a_waiting_deadline_or_touch_a_running_one() -> None:
    """5: "A waiting deadline is not moved"; a running preemption ignores it."""
    waiting = TimerState.waiting(520.0)
    assert timer_step(waiting, _rose({"memory": 70}), 500.0).state == waiting
    running = TimerState.running(400.0, {"memory": 50})
    assert timer_step(running, _rose({"memory": 70}), 500.0).state == running


# -- ticks ---------------------------------------------------------------------------


def test_tick_before_the_deadline_does_nothing() -> None:
    """5: only queues with deadline <= now fire."""
    waiting = TimerState.waiting(100.0)
    assert timer_step(waiting, tick({"memory": 10}, {"memory": 50}), 99.9).state == waiting


def test_tick_at_the_deadline_starts_the_preemption_with_the_current_max() -> None:
    """5: due and usage above the current max -> running, plan with the current max."""
    d = timer_step(TimerState.waiting(100.0), tick({"memory": 10}, {"memory": 50}), 100.0)
    assert d.action == "start_preemption"
    assert d.state == TimerState.running(100.0, {"memory": 10})
    assert d.plan_max == {"memory": 10}


def test_tick_when_usage_already_fits_goes_idle() -> None:
    """5: due but usage within the current max (tasks ended meanwhile) -> idle."""
    d = timer_step(TimerState.waiting(100.0), tick({"memory": 60}, {"memory": 50}), 150.0)
    assert (d.action, d.state) == ("cancelled", TimerState.idle())


def test_tick_waits_while_an_ancestor_runs() -> None:
    """5: a queue never starts while an ancestor runs; it stays waiting."""
    waiting = TimerState.waiting(100.0)
    d = timer_step(waiting, tick({"memory": 10}, {"memory": 50}, ancestor_running=True), 150.0)
    assert (d.action, d.state) == ("skipped_ancestor_running", waiting)


# -- completion ----------------------------------------------------------------------


def _done(max_: Mapping[str, int] | None, usage: Mapping[str, int]) -> Completed:
    return Completed(max=max_, usage=usage, delay=60.0, enabled=True)


def test_completion_goes_idle_even_if_best_effort_left_usage_above_max() -> None:
    """5: completion -> idle; an unchanged max is not retried (no retry loop on best effort)."""
    running = TimerState.running(100.0, {"memory": 50})
    d = timer_step(running, _done({"memory": 50}, {"memory": 55}), 200.0)
    assert (d.action, d.state) == ("completed", TimerState.idle())


def test_completion_rechecks_a_max_lowered_while_running() -> None:
    """5: the max changed while running and usage still exceeds it -> waiting(now + delay)."""
    running = TimerState.running(100.0, {"memory": 50})
    d = timer_step(running, _done({"memory": 30}, {"memory": 45}), 200.0)
    assert (d.action, d.state) == ("rewait", TimerState.waiting(260.0))
    d = timer_step(running, _done({"memory": 30}, {"memory": 25}), 200.0)
    assert (d.action, d.state) == ("completed", TimerState.idle())


def test_completion_after_a_pure_increase_while_running_does_not_rewait() -> None:
    """Seed: a purely looser change made while running triggers no new preemption."""
    running = TimerState.running(100.0, {"memory": 30})
    d = timer_step(running, _done({"memory": 45}, {"memory": 50}), 200.0)
    assert (d.action, d.state) == ("completed", TimerState.idle())


def test_completion_of_a_queue_that_is_not_running_is_harmless() -> None:
    """A duplicate completion event changes nothing (safe to replay per event)."""
    for state in (TimerState.idle(), TimerState.waiting(5.0)):
        assert timer_step(state, _done({"memory": 1}, {"memory": 9}), 10.0).state == state


# -- many queues ---------------------------------------------------------------------


def test_due_queues_deepest_first_then_path() -> None:
    """5: a leaf before its parent when both are due, then by path; future ones wait."""
    states = {
        "root.a": TimerState.waiting(10.0),
        "root.a.x": TimerState.waiting(10.0),
        "root.b.y.z": TimerState.waiting(5.0),
        "root.a.w": TimerState.waiting(9.0),
        "root.c": TimerState.waiting(11.0),
        "root.d": TimerState.idle(),
    }
    assert due_queues(states, 10.0) == ["root.b.y.z", "root.a.w", "root.a.x", "root.a"]


def test_due_queues_skip_queues_under_a_running_ancestor() -> None:
    """5: skip a queue while any ancestor runs (real ancestry, not a name prefix)."""
    states = {
        "root.a": TimerState.running(1.0, {"memory": 1}),
        "root.a.b.c": TimerState.waiting(1.0),
        "root.ab.x": TimerState.waiting(1.0),
        "root": TimerState.waiting(1.0),
    }
    assert due_queues(states, 2.0) == ["root.ab.x", "root"]


def test_parent_may_run_while_a_child_runs_without_that_child() -> None:
    """5: the plan's ``running`` argument lists running descendants only."""
    states = {
        "root.p": TimerState.waiting(1.0),
        "root.p.x": TimerState.running(0.5, {"memory": 1}),
        "root.p.y": TimerState.idle(),
        "root.px": TimerState.running(0.5, None),
    }
    assert due_queues(states, 2.0) == ["root.p"]
    assert running_descendants(states, "root.p") == frozenset({"root.p.x"})


# -- helpers -------------------------------------------------------------------------


def test_purely_looser_and_same_max() -> None:
    """5: purely looser = no lower limit, no new limit, not newly set; 0 is a limit."""
    assert is_purely_looser({"memory": 50, "vcore": 5}, {"memory": 50})
    assert is_purely_looser({"memory": 50}, {})
    assert not is_purely_looser({"memory": 50}, {"memory": 49})
    assert not is_purely_looser({}, {"gpu": 0})
    assert not same_max({"gpu": 0}, None)
    assert same_max(None, {})


def test_scheduler_restart_restarts_from_zero() -> None:
    """5 / seed "Impact of Restart": YuniKorn restarts timers when allocations are recovered."""
    facts = QueueFacts(max={"memory": 50}, usage={"memory": 80}, delay=60.0, enabled=True)
    d = predict_after_scheduler_restart(TimerState.waiting(1060.0), 1045.0, facts)
    assert (d.action, d.state) == ("restarted", TimerState.waiting(1105.0))
    d = predict_after_scheduler_restart(TimerState.running(1060.0, {"memory": 50}), 1070.0, facts)
    assert (d.action, d.state) == ("restarted", TimerState.waiting(1130.0))
    assert predict_after_scheduler_restart(TimerState.idle(), 1070.0, facts).state.is_idle
    fits = QueueFacts(max={"memory": 90}, usage={"memory": 80}, delay=60.0, enabled=True)
    assert predict_after_scheduler_restart(TimerState.waiting(1.0), 2.0, fits).state.is_idle


def test_state_dict_round_trip_and_bad_data() -> None:
    """States persist as JSON; bad rows raise ScenarioError naming the field."""
    for state in (
        TimerState.idle(),
        TimerState.waiting(12.5),
        TimerState.running(3.0, {"memory": 0}),
        TimerState.running(3.0, None),
    ):
        assert TimerState.from_dict(state.to_dict()) == state
    cases: list[tuple[dict[str, object], str]] = [
        ({"kind": "sleeping"}, "kind"),
        ({"kind": "waiting"}, "deadline"),
        ({"kind": "running", "started": "x"}, "started"),
        ({"kind": "running", "started": 1, "enforced_max": {"m": 1.5}}, "enforced_max.m"),
    ]
    for bad, field in cases:
        with pytest.raises(ScenarioError) as err:
            TimerState.from_dict(bad)
        assert err.value.field == field


# -- properties ------------------------------------------------------------------------

_limits = st.one_of(
    st.none(),
    st.dictionaries(st.sampled_from(["memory", "vcore", "gpu"]), st.integers(0, 6), max_size=3),
)
_usage = st.dictionaries(st.sampled_from(["memory", "vcore", "gpu"]), st.integers(1, 8), max_size=3)
_states = st.one_of(
    st.just(TimerState.idle()),
    st.floats(0, 100).map(TimerState.waiting),
    st.builds(TimerState.running, st.floats(0, 100), _limits),
)


@settings(max_examples=examples(200), deadline=None)
@given(
    _states,
    _limits,
    _limits,
    _usage,
    st.sampled_from([0.0, 30.0]),
    st.sampled_from([0.0, 30.0, 60.0]),
    st.booleans(),
    st.booleans(),
    st.floats(0, 100),
)
def test_config_change_properties(
    state: TimerState,
    old: dict[str, int] | None,
    new: dict[str, int] | None,
    usage: dict[str, int],
    old_delay: float,
    delay: float,
    enabled: bool,
    dynamic: bool,
    now: float,
) -> None:
    """5: running is never touched; waiting is always now + delay; looser never waits."""
    ev = change(old, new, usage, delay=delay, old_delay=old_delay, enabled=enabled, dynamic=dynamic)
    d = timer_step(state, ev, now)
    if state.is_running:
        assert d.state == state
        return
    assert not d.state.is_running
    if d.action in ("start_wait", "reset"):
        assert d.state == TimerState.waiting(now + delay)  # reset from t, never adjusted
        assert enabled
        assert delay > 0
        assert not dynamic
        assert not (not same_max(old, new) and is_purely_looser(old, new))
        assert (d.action == "reset") == state.is_waiting
    else:
        assert d.state in (state, TimerState.idle())


@settings(max_examples=examples(200), deadline=None)
@given(_states, _limits, _usage, st.booleans(), st.floats(0, 100))
def test_usage_rise_never_moves_a_deadline(
    state: TimerState, limit: dict[str, int] | None, usage: dict[str, int], dyn: bool, now: float
) -> None:
    """5: a usage rise only starts an idle timer; waiting and running states stay as they are."""
    d = timer_step(
        state, UsageRose(max=limit, usage=usage, delay=30.0, enabled=True, dynamic=dyn), now
    )
    if not state.is_idle:
        assert d.state == state
    elif d.state.is_waiting:
        assert (d.state.deadline, dyn) == (now + 30.0, False)
