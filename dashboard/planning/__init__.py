"""Planning a config rollout before it is applied (framework-free: no Django here).

- :func:`plan_config` - the proposed config against the config in force and the
  latest snapshot: changes, timer decisions, chained firings, victims, totals;
- :func:`firing_scenario` - the scenario ``python -m engine`` answers for one firing;
- :class:`ChainedCluster` - one cluster evolving firing after firing, built once.
"""

from __future__ import annotations

from dashboard.planning.chain import ChainedCluster, overlay_limits
from dashboard.planning.plan import (
    ConfigPlan,
    PlannedChange,
    QueueInForce,
    Refusal,
    Totals,
    Victim,
    describe_change,
    firing_scenario,
    in_force_from_spec,
    plan_config,
    refusal_of,
)

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
