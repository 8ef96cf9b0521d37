"""Planning a config rollout before it is applied (framework-free: no Django here).

- :func:`plan_config` - the proposed config against the config in force and the
  latest snapshot: changes, timer decisions, chained firings, victims, totals;
- :func:`firing_scenario` - the scenario ``python -m engine`` answers for one firing;
- :class:`ChainedCluster` - one cluster evolving firing after firing, built once.

``plan`` plans the whole config, ``changes`` one queue's change and timer decision,
``firings`` the timers fired in order, ``answer`` the plan's parts and their JSON,
``chain`` the evolving cluster.
"""

from __future__ import annotations

from dashboard.planning.answer import (
    ConfigPlan,
    PlannedChange,
    QueueInForce,
    Refusal,
    Totals,
    Victim,
    in_force_from_spec,
    refusal_of,
)
from dashboard.planning.chain import ChainedCluster, overlay_limits
from dashboard.planning.changes import describe_change
from dashboard.planning.firings import firing_scenario
from dashboard.planning.plan import plan_config

__all__ = [
    "ChainedCluster",
    "ConfigPlan",
    "PlannedChange",
    "QueueInForce",
    "Refusal",
    "Totals",
    "Victim",
    "describe_change",
    "firing_scenario",
    "in_force_from_spec",
    "overlay_limits",
    "plan_config",
    "refusal_of",
]
