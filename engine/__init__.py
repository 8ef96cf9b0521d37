"""The preemption engine: pure Python, framework-free (never imports Django).

The library face the dashboard calls without JSON:

- :func:`parse_scenario` turns a decoded scenario document into frozen
  dataclasses (raising :class:`ScenarioError` naming the bad field);
- :func:`evaluate` answers a scenario's request; every answer has ``to_dict()``;
- :func:`preempt`, :func:`run_round`, :func:`queue_resources` answer the
  ``preempt``, ``round`` and ``resources`` requests directly; a
  :class:`PreemptionState` built once per cluster serves many ``preempt``
  calls (what-if pages) much faster than rebuilding it each time;
- ``plan_quota_change`` (``engine.quota``) and ``timer_step`` (``engine.timers``)
  are re-exported lazily, so this package imports even before they exist.

``python -m engine FILE.json`` is the command-line face (``engine.__main__``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

from engine.answers import PreemptAnswer, RoundAnswer
from engine.errors import ScenarioError
from engine.model import (
    Allocation,
    Ask,
    Cluster,
    Node,
    Partition,
    PreemptRequest,
    QueueConfig,
    QuotaChangeRequest,
    Request,
    ResourcesRequest,
    RoundRequest,
    Scenario,
)
from engine.preempt import preempt
from engine.preempt_state import PreemptionState
from engine.queues import ResourcesAnswer, Snapshot, build_snapshot, queue_resources
from engine.rounds import run_round
from engine.scenario import parse_scenario, scenario_to_dict

if TYPE_CHECKING:
    from engine.quota import plan_quota_change
    from engine.timers import timer_step

__all__ = [
    "Allocation",
    "Answer",
    "Ask",
    "Cluster",
    "Node",
    "Partition",
    "PreemptAnswer",
    "PreemptRequest",
    "PreemptionState",
    "QueueConfig",
    "QuotaChangeRequest",
    "Request",
    "ResourcesAnswer",
    "ResourcesRequest",
    "RoundAnswer",
    "RoundRequest",
    "Scenario",
    "ScenarioError",
    "Snapshot",
    "build_snapshot",
    "evaluate",
    "parse_scenario",
    "plan_quota_change",
    "preempt",
    "queue_resources",
    "run_round",
    "scenario_to_dict",
    "timer_step",
]

_LAZY = {"plan_quota_change": "engine.quota", "timer_step": "engine.timers"}


class Answer(Protocol):
    """What every request's answer offers: its contract JSON object."""

    def to_dict(self) -> dict[str, object]: ...


def __getattr__(name: str) -> object:
    # quota and timers live in modules another engineer owns; import them on first use
    module_name = _LAZY.get(name)
    if module_name is None:
        raise AttributeError(f"module 'engine' has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(module_name), name)


def evaluate(scenario: Scenario) -> Answer:
    """Answer the scenario's request (scenario-format.md "Requests and answers").

    Raises:
        ScenarioError: the request names something the cluster does not have.
    """
    request = scenario.request
    cluster = scenario.cluster
    if isinstance(request, PreemptRequest):
        return preempt(cluster, request.ask, scenario.now)
    if isinstance(request, RoundRequest):
        return run_round(cluster, request.asks, request.max_preempted, scenario.now)
    if isinstance(request, ResourcesRequest):
        snap = build_snapshot(cluster)
        if request.queue not in snap:
            raise ScenarioError("request.queue", f"unknown queue {request.queue!r}")
        return queue_resources(snap, request.queue)
    from engine.quota import plan_quota_change as plan

    answer: Answer = plan(
        cluster, request.queue, request.new_max, scenario.now, running=frozenset()
    )
    return answer
