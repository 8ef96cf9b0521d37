"""Completed applications' resource history: the work each one lost to preemption.

``GET /ws/v1/partition/<p>/applications/completed`` answers ``[]*dao.ApplicationDAOInfo``
(``pkg/webservice/dao/application_info.go``) of the applications the partition moved to
its completed list.  Each carries ``resourceHistory`` (``dao.ResourceHistory``):
``preemptedResource``, ``resourceUsage`` and ``placeholderResource``, each a map of
*instance type* (the node's ``si/instance-type`` attribute, ``UNKNOWN`` without one) to
a map of resource type to **quantity times seconds**.  The scheduler adds an allocation's
resource times the whole seconds from its bind to its release
(``TrackedResource.AggregateTrackedResource``): a preempted allocation goes to
``preemptedResource``, a placeholder to ``placeholderResource``, any other to
``resourceUsage``.  Quantities are the scheduler's own: ``vcore`` in millicores,
``memory`` in bytes, other types as counts; so ``vcore`` is millicore-seconds and
``memory`` byte-seconds.  ``finishedTime`` is Unix nanoseconds (absent while unset).

An uploaded REST folder's application answers are read here too: an application in a
terminal state (Completed, Failed, Expired) with a finish time is a completed one,
whichever file held it.  No Django here.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace

from dashboard.importers.snapshot.access import INT64_MAX, Reader

#: The application states of the partition's completed list.
TERMINAL_STATES = ("Completed", "Failed", "Expired")

#: The most completed applications kept from one answer (the scheduler keeps its completed
#: list for days: a busy partition's answer can be long; the rest are counted).
KEEP_LIMIT = 50_000

History = dict[str, dict[str, int]]


@dataclass(frozen=True, slots=True)
class CompletedApplication:
    """One completed application's resource history (raw quantity times seconds)."""

    app_id: str
    queue: str
    partition: str
    state: str
    user: str
    submitted: float | None
    finished: float
    preempted: History = field(default_factory=dict)
    used: History = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class CompletedRead:
    """What one answer (or folder) held: the applications, and those left out with why."""

    applications: tuple[CompletedApplication, ...] = ()
    skipped: tuple[str, ...] = ()

    def of_partition(self, partition: str) -> CompletedRead:
        """Only the applications of *partition* (those naming none taken as of it)."""
        return CompletedRead(
            tuple(
                a if a.partition else replace(a, partition=partition)
                for a in self.applications
                if a.partition in ("", partition)
            ),
            self.skipped,
        )


def _history(r: Reader, v: object, path: str) -> History:
    """instance type -> resource type -> quantity times seconds (zeros dropped)."""
    if v is None:
        return {}
    out: History = {}
    for instance, per_type in r.obj(v, path).items():
        res = r.resource(per_type, f"{path}.{instance}")
        kept = {t: q for t, q in res.items() if q}
        if kept:
            out[str(instance)] = kept
    return out


def read_application(
    r: Reader, raw: object, path: str, partition: str
) -> CompletedApplication | str | None:
    """One application DAO as a completed application; a reason string when it is
    completed but cannot be counted (no finish time); None when it is not completed.

    Raises:
        ImportFailure: naming the file and JSON path of a malformed field.
    """
    app = r.obj(raw, path)
    state = r.string(app.get("applicationState"), f"{path}.applicationState", required=False)
    if state not in TERMINAL_STATES:
        return None
    app_id = r.key(app.get("applicationID"), f"{path}.applicationID")
    finished = r.time_ns(app.get("finishedTime"), f"{path}.finishedTime")
    if finished is None or finished <= 0:
        return f"{app_id}: {state} without a finishedTime"
    history = r.obj(app.get("resourceHistory") or {}, f"{path}.resourceHistory")
    submitted = r.time_ns(app.get("submissionTime"), f"{path}.submissionTime")
    return CompletedApplication(
        app_id=app_id,
        queue=r.key(app.get("queueName"), f"{path}.queueName"),
        partition=r.string(app.get("partition"), f"{path}.partition", required=False) or partition,
        state=state,
        user=r.string(app.get("user"), f"{path}.user", required=False),
        submitted=submitted if submitted and submitted > 0 else None,
        finished=finished,
        preempted=_history(
            r, history.get("preemptedResource"), f"{path}.resourceHistory.preemptedResource"
        ),
        used=_history(r, history.get("resourceUsage"), f"{path}.resourceHistory.resourceUsage"),
    )


def read_completed(
    answers: Sequence[tuple[str, object]], partition: str = "", *, limit: int = KEEP_LIMIT
) -> CompletedRead:
    """The completed applications in application answers (file, JSON list): those of
    *partition*, or of every partition when it is empty.

    An application found in several answers is kept once (the first file by name).

    Raises:
        ImportFailure: naming the file and JSON path of a malformed entry.
    """
    seen: dict[tuple[str, str, float], CompletedApplication] = {}
    skipped: list[str] = []
    for name, doc in sorted(answers, key=lambda item: item[0]):
        r = Reader(name)
        if not isinstance(doc, list):
            raise r.fail("", "must be a list of applications")
        for i, raw in enumerate(doc):
            got = read_application(r, raw, f"[{i}]", partition)
            if got is None:
                continue
            if isinstance(got, str):
                skipped.append(got)
            elif partition and got.partition != partition:
                continue
            elif len(seen) < limit:
                seen.setdefault((got.partition, got.app_id, got.finished), got)
            else:
                skipped.append(f"{got.app_id}: over the limit of {limit} applications")
    return CompletedRead(tuple(seen.values()), tuple(skipped))


def total(history: Mapping[str, Mapping[str, int]]) -> dict[str, int]:
    """Resource type -> quantity times seconds over every instance type (capped at int64).

    >>> total({"m5.large": {"vcore": 4000}, "UNKNOWN": {"vcore": 1000, "memory": 5}})
    {'memory': 5, 'vcore': 5000}
    """
    out: dict[str, int] = {}
    for per_type in history.values():
        for t, q in per_type.items():
            out[t] = min(INT64_MAX, out.get(t, 0) + q)
    return dict(sorted(out.items()))
