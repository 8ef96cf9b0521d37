"""Generated queue configs and scenarios of any size, with history-making variants: for
the config re-import benchmark (``benchmarks/config_reimport.py``) and the tests that
check its costs and the import jobs."""

from __future__ import annotations

import math
from datetime import UTC, datetime
from typing import Any

T0 = datetime(2026, 9, 1, 10, 0, tzinfo=UTC)


def config_yaml(n: int, round_: int, extra: int = 0) -> str:
    """A queues.yaml with about *n* queues; every tenth leaf's max depends on *round_*."""
    parents = max(1, int(math.sqrt(n)))
    leaves_per_parent = max(1, (n - 1 - parents) // parents)
    lines = [
        "partitions:",
        "  - name: default",
        "    preemption:",
        "      quotapreemptionenabled: true",
        "    queues:",
        "      - name: root",
        "        queues:",
    ]
    serial = 0
    for p in range(parents):
        lines += [
            f"          - name: p{p:04d}",
            "            properties:",
            "              quota.preemption.delay: 5m",
            "            queues:",
        ]
        count = leaves_per_parent + (extra if p == 0 else 0)
        for leaf in range(count):
            cores = 64 - (round_ * 8 if serial % 10 == 0 else 0)
            lines += [
                f"              - name: q{leaf:05d}",
                "                resources:",
                f"                  max: {{vcore: {cores}, memory: {cores * 4}Gi}}",
            ]
            serial += 1
    return "\n".join(lines) + "\n"


def scenario(n: int) -> dict[str, Any]:
    """A scenario JSON with the queues of :func:`config_yaml` and usage in every leaf."""
    parents = max(1, int(math.sqrt(n)))
    leaves_per_parent = max(1, (n - 1 - parents) // parents)
    children = []
    nodes = [{"id": "n1", "capacity": {"vcore": 10**9, "memory": 2**60}}]
    allocations = []
    for p in range(parents):
        leaves = []
        for leaf in range(leaves_per_parent):
            name = f"q{leaf:05d}"
            leaves.append({"name": name, "max": {"vcore": 64000, "memory": 64 * 4 * 2**30}})
            allocations.append(
                {
                    "key": f"a-{p}-{leaf}",
                    "app": f"app-{p}-{leaf}",
                    "queue": f"root.p{p:04d}.{name}",
                    "node": "n1",
                    "resources": {"vcore": 60000, "memory": 60 * 4 * 2**30},
                    "priority": 0,
                    "created": T0.timestamp() - 3600,
                }
            )
        children.append({"name": f"p{p:04d}", "quota_preemption_delay": 300, "children": leaves})
    return {
        "now": T0.timestamp(),
        "partition": {"quota_preemption_enabled": True},
        "queues": {"name": "root", "children": children},
        "nodes": nodes,
        "allocations": allocations,
    }
