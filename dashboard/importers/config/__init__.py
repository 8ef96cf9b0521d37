"""YuniKorn queue configs (queues.yaml or its ConfigMap) -> validated, typed partition specs.

Reading mirrors yunikorn-core: the strict decoder (``KnownFields(true)``:
every unknown key is an error, keys are the lower-case Go field names), the
quantity syntax of ``quantity.go``, and the checks of ``configvalidator.go``
(root inserted when missing and without resources; child names
``^[a-zA-Z0-9_-]{1,64}$`` unique among siblings ignoring case; ACLs; limits;
a child's max inside its parent's; guaranteed inside its own max; a parent's
guaranteed and max not below the sum of its children's guaranteed; placement
rules and the ``parent: true`` they require; node sorting policy; max
applications).  Queue names are lower-cased as the scheduler does at load time.

It refuses exactly what the scheduler refuses.  It warns about configs the
scheduler accepts but in which quota preemption silently never fires or is
limited (bare-number delays, delays without the partition flag, all-zero
resources that the scheduler treats as not set, a max at the guarantee while a
delay is set: the quota-change design's rule, which
:mod:`dashboard.importers.quota_rule` keeps for changes made in the
dashboard), and about what the scheduler accepts without checking (a child
template's guaranteed above its max, resource type names that are not
Kubernetes resource names).

The scheduler's own config (``GET /ws/v1/config``, JSON with Go field names or its
YAML form) is read by :mod:`dashboard.importers.config.answer` into the same
ConfigImport, through the same validation.

YAML is read through :mod:`dashboard.importers.yamlnodes` (no aliases, no
duplicate keys, bounded depth, YAML 1.2 scalars so a queue named ``NO``
stays a name) after a size check.
"""

from __future__ import annotations

from dashboard.importers.config.diff import ConfigChange
from dashboard.importers.config.reader import ConfigImport, TooManyConfigQueues, parse_config
from dashboard.importers.config.specs import (
    MAX_CONFIG_BYTES,
    PartitionSpec,
    QueueSpec,
    to_queue_config,
)

__all__ = [
    "MAX_CONFIG_BYTES",
    "ConfigChange",
    "ConfigImport",
    "PartitionSpec",
    "QueueSpec",
    "TooManyConfigQueues",
    "parse_config",
    "to_queue_config",
]
