"""The config rollout plan's pure core (dashboard.planning): no database, no Django.

On the shared fixtures (previous -> current -> proposed configs of acme-ml and
its state dump), the chaining rule, refusals and warnings; every planned quota
preemption is checked against ``python -m engine`` on the exported scenario of
its firing, and the incrementally chained snapshot against a full rebuild.
"""

from __future__ import annotations

import ast
import importlib.util
import json
import subprocess
import sys
from functools import cache
from pathlib import Path
from types import ModuleType

import pytest
from django.conf import settings

from dashboard.importers.config import parse_config
from dashboard.importers.errors import ImportFailure
from dashboard.importers.snapshot import parse_snapshot
from dashboard.planning import (
    ChainedCluster,
    ConfigPlan,
    QueueInForce,
    firing_scenario,
    in_force_from_spec,
    plan_config,
)
from dashboard.planning.changes import instant_text
from engine import timers
from engine.model import Allocation, Cluster, Node, Partition, QueueConfig
from engine.queues import build_snapshot
from engine.scenario import parse_scenario

FIXTURES = Path(settings.DASHBOARD_FIXTURES_DIR)
CONFIG = FIXTURES / "config"
REPO = Path(__file__).resolve().parents[3]
GIB = 2**30


@cache
def acme() -> tuple[Cluster, float]:
    """The acme-ml cluster of the state dump and its capture time."""
    parsed = parse_snapshot(
        {"fullstatedump.json": (FIXTURES / "rest/fullstatedump.json").read_bytes()}
    )
    scenario = parse_scenario(
        {**parsed.scenario, "request": {"type": "resources", "queue": "root"}}
    )
    return scenario.cluster, scenario.now


def in_force(name: str) -> dict[str, QueueInForce]:
    return in_force_from_spec(parse_config((CONFIG / name).read_bytes()).partition())


def plan_fixture(
    current: str, proposed: str, rules: timers.RuleSet = timers.DEFAULT_RULES
) -> ConfigPlan:
    cluster, now = acme()
    return plan_config(
        (CONFIG / proposed).read_bytes(),
        in_force=in_force(current),
        cluster=cluster,
        now=now,
        rules=rules,
    )


PROPOSED = ("queues-nested-gpu.yaml", "queues-nested-gpu-proposed.yaml")


#: Runs the engine's command line (``engine.__main__.main``) on each file named, one
#: after another in this one process, and prints their exit statuses and outputs as JSON:
#: one process start for a plan's firings instead of one per firing.
ENGINE_CLI_EACH = """
import contextlib, io, json, sys
from engine.__main__ import main
answers = []
for path in sys.argv[1:]:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = main([path])
    answers.append([code, out.getvalue()])
print(json.dumps(answers))
"""


def engine_answers(scenarios: list[dict[str, object]], tmp_path: Path) -> list[dict[str, object]]:
    """The engine command line's answer to each scenario, from one process."""
    paths = []
    for i, scenario in enumerate(scenarios):
        paths.append(tmp_path / f"scenario-{i}.json")
        paths[-1].write_text(json.dumps(scenario))
    done = subprocess.run(
        [sys.executable, "-c", ENGINE_CLI_EACH, *map(str, paths)],
        capture_output=True,
        text=True,
        cwd=REPO,
        check=False,
        timeout=120,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    answers = []
    for code, out in json.loads(done.stdout):
        assert code == 0, out
        answers.append(json.loads(out))
    return answers


def check_against_engine(plan: ConfigPlan, tmp_path: Path) -> int:
    """Every firing's planned preemption equals the engine CLI's answer; returns how many."""
    ran = [change for change in plan.firings if change.answer is not None]
    expected = engine_answers([firing_scenario(plan, change) for change in ran], tmp_path)
    for change, answer in zip(ran, expected, strict=True):
        assert change.answer is not None
        assert answer == change.answer.to_dict(), change.queue
        assert answer["victims"] == [v.key for v in change.victims]
    return len(ran)


# -- the shared fixtures ----------------------------------------------------------------


def test_current_to_proposed_lists_every_change_with_its_timer() -> None:
    """research and nlp (max down, delay 10m -> 15m) and batch (max down) start timers."""
    plan = plan_fixture("queues-nested-gpu.yaml", "queues-nested-gpu-proposed.yaml")
    assert plan.refusals == ()
    by_queue = {c.queue: c for c in plan.changes}
    assert set(by_queue) == {"root.batch", "root.research", "root.research.nlp"}
    _, now = acme()
    batch = by_queue["root.batch"]
    assert (batch.old_max, batch.new_max) == (
        {"vcore": 10000, "memory": 48 * GIB},
        {"vcore": 8000, "memory": 40 * GIB},
    )
    assert (batch.old_delay_seconds, batch.delay_seconds) == (300.0, 300.0)
    assert batch.timer.starts
    assert batch.fires_at == now + 300
    for path in ("root.research", "root.research.nlp"):
        change = by_queue[path]
        assert (change.old_delay_seconds, change.delay_seconds) == (600.0, 900.0)
        assert change.timer.starts
        assert "the timer fires at 2026-09-01 10:15:00 UTC" in change.timer.reason
        assert change.is_decrease
    # both due at 10:15: the scheduler starts research; nlp, held, at the next check
    assert by_queue["root.research"].fires_at == now + 900
    assert by_queue["root.research.nlp"].fires_at == now + 901


def test_proposed_fires_batch_then_parent_then_leaf_under_scheduler() -> None:
    """batch fires first (5m); research and nlp share 15m: the scheduler's check walks top
    down, starts research and skips its subtree that second (engine.md 5.1 "Tick"); nlp is
    checked a second later on the usage research left: its allocated (6 cores left and
    the 4 the cluster was already preempting) still exceeds 5 cores, so its quota
    preemption starts and finds nothing more to take. No order note: the plan is the
    scheduler's order."""
    plan = plan_fixture(*PROPOSED)
    _, now = acme()
    assert [(c.queue, c.order, c.fires_at) for c in plan.firings] == [
        ("root.batch", 1, now + 300),
        ("root.research", 2, now + 900),
        ("root.research.nlp", 3, now + 901),
    ]
    batch, research, nlp = plan.firings
    assert research.status == "enforced"
    assert nlp.taken_before == tuple(v.key for v in (*batch.victims, *research.victims))
    assert nlp.usage_at_firing == {"vcore": 6000, "memory": 24 * GIB, "pods": 3}
    assert (nlp.status, nlp.victims) == ("not_needed", ())
    assert not [w for w in plan.warnings if "due within the same second" in w]


def test_proposed_fires_batch_then_leaf_before_parent_under_seed() -> None:
    """batch fires first (5m); nlp and research share 15m: the leaf nlp before its parent."""
    plan = plan_fixture(*PROPOSED, rules="seed")
    assert [c.queue for c in plan.firings] == ["root.batch", "root.research.nlp", "root.research"]
    assert [c.order for c in plan.firings] == [1, 2, 3]


def test_a_parent_due_with_its_leaf_is_named_as_ordered_otherwise_by_the_scheduler() -> None:
    """Rule set seed: nlp and research fire in the same second: the plan says the
    scheduler, walking top down, would start research first (engine.md 5.1 "Order");
    batch, due alone, is not named."""
    plan = plan_fixture(*PROPOSED, rules="seed")
    research = next(c for c in plan.firings if c.queue == "root.research")
    notes = [w for w in plan.warnings if "due within the same second" in w]
    assert notes == [
        "root.research and root.research.nlp are due within the same second "
        f"({instant_text(research.fires_at or 0.0)}): this plan fires the deeper queue first; "
        "the scheduler walks the tree top down each second, so it would start root.research's "
        "quota preemption first and skip the queues below it in that second. What each takes "
        "in the cluster may differ from this plan."
    ]
    assert notes[0] in plan.to_dict()["warnings"]  # type: ignore[operator]


def test_proposed_chains_nlp_victims_into_research() -> None:
    """Rule set seed: nlp's victims bring research within its new max: research's firing
    preempts nothing."""
    plan = plan_fixture(*PROPOSED, rules="seed")
    batch, nlp, research = plan.firings
    # the README's reclaims: batch 2000m, research/nlp 2000m and 8Gi (usage minus preempting)
    assert batch.preemptable == {"vcore": 2000}
    assert batch.status == "enforced"
    assert nlp.preemptable == {"vcore": 2000, "memory": 8 * GIB}
    assert nlp.status == "enforced"
    assert research.usage == {"vcore": 8000, "memory": 32 * GIB, "pods": 4}
    assert research.usage_at_firing == {"vcore": 6000, "memory": 24 * GIB, "pods": 3}
    assert research.status == "not_needed"
    assert research.victims == ()
    assert nlp.taken_before == tuple(v.key for v in batch.victims)
    totals = plan.totals()
    assert totals.allocations == len(batch.victims) + len(nlp.victims)
    assert totals.resources == {
        t: sum(v.resources.get(t, 0) for c in plan.firings for v in c.victims)
        for t in ("memory", "pods", "vcore")
    }
    assert set(plan.to_dict()["totals"]["by_queue"]) == {"root.batch", "root.research.nlp"}  # type: ignore[index]


@pytest.mark.subprocess
def test_proposed_firings_equal_the_engine_cli(tmp_path: Path) -> None:
    """Each planned quota preemption is what python -m engine answers at that moment."""
    plan = plan_fixture(*PROPOSED)
    assert check_against_engine(plan, tmp_path) == 3  # batch, research, then nlp
    assert check_against_engine(plan_fixture(*PROPOSED, rules="seed"), tmp_path) == 2


def test_previous_to_current_starts_a_timer_on_the_allocated_usage() -> None:
    """batch 14 -> 10 cores: the scheduler's usage is its allocated, 12 cores with the 2
    being preempted (engine.md 5.1), over 10: a timer starts."""
    plan = plan_fixture("queues-nested-gpu-previous.yaml", "queues-nested-gpu.yaml")
    (batch,) = plan.changes
    assert batch.timer.starts
    assert batch.timer.reason.startswith("usage exceeds the new max")
    assert [c.queue for c in plan.firings] == ["root.batch"]


def test_previous_to_current_starts_no_timer_when_usage_is_within() -> None:
    """Rule set seed: batch 14 -> 10 cores: the snapshot's batch uses 10 (2 preempting),
    so no timer starts."""
    plan = plan_fixture("queues-nested-gpu-previous.yaml", "queues-nested-gpu.yaml", "seed")
    (batch,) = plan.changes
    assert batch.queue == "root.batch"
    assert batch.is_decrease
    assert not batch.timer.starts
    assert "within the new max" in batch.timer.reason
    assert batch.status == "no_timer"
    assert plan.firings == ()


def test_json_shape_names_the_issue_fields() -> None:
    """The JSON has changes (queue, maxes, delays, timer, fires_at, order, status, victims)."""
    doc = plan_fixture("queues-nested-gpu.yaml", "queues-nested-gpu-proposed.yaml").to_dict()
    assert {"changes", "warnings", "totals"} <= set(doc)
    change = doc["changes"][0]  # type: ignore[index]
    for key in (
        "queue",
        "old_max",
        "new_max",
        "old_delay_seconds",
        "delay_seconds",
        "timer",
        "fires_at",
        "order",
        "status",
        "victims",
    ):
        assert key in change
    assert all(isinstance(k, str) for k in change["victims"])
    json.dumps(doc)


# -- the chaining rule --------------------------------------------------------------------


def _cluster(*, enabled: bool = True) -> Cluster:
    """root.p (guaranteed 2 cores) with leaves a and b; six 1-core allocations in each."""
    tree = QueueConfig(
        "root",
        children=(
            QueueConfig(
                "p",
                guaranteed={"vcore": 2000},
                quota_preemption_delay=60.0,
                children=(QueueConfig("a"), QueueConfig("b")),
            ),
        ),
    )
    allocs = tuple(
        Allocation(f"{leaf}{i}", f"root.p.{leaf}", "n1", {"vcore": 1000}, created=float(i))
        for leaf in ("a", "b")
        for i in range(6)
    )
    return Cluster(
        tree, (Node("n1", {"vcore": 100000}),), allocs, Partition(quota_preemption_enabled=enabled)
    )


CHAIN_CURRENT = """
partitions:
  - name: default
    preemption: {quotapreemptionenabled: true}
    queues:
      - name: root
        queues:
          - name: p
            resources: {guaranteed: {vcore: 2}}
            properties: {quota.preemption.delay: 1m}
            queues:
              - name: a
              - name: b
"""


def _proposed(p_max: int, a_max: int | None = None) -> str:
    text = CHAIN_CURRENT.replace(
        "resources: {guaranteed: {vcore: 2}}",
        f"resources: {{guaranteed: {{vcore: 2}}, max: {{vcore: {p_max}}}}}",
    )
    if a_max is None:
        return text
    return text.replace(
        "- name: a\n", f"- name: a\n                resources: {{max: {{vcore: {a_max}}}}}\n"
    )


@pytest.mark.subprocess
def test_chain_takes_no_victim_twice_and_counts_earlier_firings(tmp_path: Path) -> None:
    """Leaf a (max 2) fires before parent p (max 6): p's target is what is left after a's."""
    cluster = _cluster()
    current = in_force_from_spec(parse_config(CHAIN_CURRENT).partition())
    plan = plan_config(_proposed(6, 2), in_force=current, cluster=cluster, now=1000.0, rules="seed")
    leaf, parent = plan.firings
    assert (leaf.queue, parent.queue) == ("root.p.a", "root.p")
    assert leaf.fires_at == parent.fires_at == 1060.0
    assert [v.key for v in leaf.victims] == ["a5", "a4", "a3", "a2"]  # youngest first
    # p used 12 cores; after a's four victims it uses 8: the target is 2, not 6
    assert parent.usage_at_firing == {"vcore": 8000}
    assert parent.preemptable == {"vcore": 2000}
    assert not {v.key for v in leaf.victims} & {v.key for v in parent.victims}
    # shares follow the chained usage (a 2 cores, b 6): 0.5 and 1.5 cores
    assert parent.leaves == {"root.p.a": ("a1",), "root.p.b": ("b5", "b4")}
    # without the chain the parent would have planned 6 cores
    alone = plan_config(
        _proposed(6), in_force=current, cluster=cluster, now=1000.0, rules="seed"
    ).firings[0]
    assert alone.preemptable == {"vcore": 6000}
    assert check_against_engine(plan, tmp_path) == 2


def test_earlier_deadline_fires_first_whatever_the_depth() -> None:
    """A parent due earlier fires before a leaf due later; the leaf then needs less."""
    text = _proposed(6, 2).replace(
        "- name: a\n", "- name: a\n                properties: {quota.preemption.delay: 5m}\n"
    )
    plan = plan_config(
        text,
        in_force=in_force_from_spec(parse_config(CHAIN_CURRENT).partition()),
        cluster=_cluster(),
        now=1000.0,
        rules="seed",
    )
    assert [(c.queue, c.fires_at) for c in plan.firings] == [
        ("root.p", 1060.0),
        ("root.p.a", 1300.0),
    ]
    parent, leaf = plan.firings
    taken_in_a = sum(1 for v in parent.victims if v.queue == "root.p.a")
    assert leaf.usage_at_firing == {"vcore": (6 - taken_in_a) * 1000}
    # four minutes apart: the scheduler's order is the plan's, nothing to say
    assert not [w for w in plan.warnings if "due within the same second" in w]


def test_chained_snapshot_equals_a_full_rebuild() -> None:
    """After taking victims, the incremental snapshot is the one build_snapshot gives."""
    cluster, _ = acme()
    chain = ChainedCluster(cluster)
    nlp = build_snapshot(cluster).queue("root.research.nlp").allocations
    batch = build_snapshot(cluster).queue("root.batch").allocations
    chain.take({"root.research.nlp": [nlp[0].key, nlp[1].key]})
    chain.take({"root.batch": [a.key for a in batch if not a.preempted][:2]})
    rebuilt = build_snapshot(chain.cluster())
    assert list(chain.snapshot) == list(rebuilt)


def test_increase_cancels_a_waiting_timer() -> None:
    """Rule set ``seed``: a raised max cancels the decrease already waiting."""
    current = in_force_from_spec(parse_config(CHAIN_CURRENT).partition())
    current["root.p.a"] = QueueInForce(
        {"vcore": 1000}, None, 60.0, timer=timers.TimerState.waiting(1030.0)
    )
    plan = plan_config(
        _proposed(100, 5), in_force=current, cluster=_cluster(), now=1000.0, rules="seed"
    )
    by_queue = {c.queue: c for c in plan.changes}
    assert by_queue["root.p.a"].timer.action == "cancelled_by_increase"
    assert not by_queue["root.p.a"].timer.starts


def test_pending_timer_fires_in_the_same_chain() -> None:
    """A timer already waiting for an untouched queue fires with the planned ones."""
    current = in_force_from_spec(parse_config(_proposed(100, 2)).partition())
    current["root.p.a"] = QueueInForce(
        {"vcore": 2000}, None, 60.0, timer=timers.TimerState.waiting(1030.0)
    )
    plan = plan_config(_proposed(6, 2), in_force=current, cluster=_cluster(), now=1000.0)
    assert [c.queue for c in plan.pending] == ["root.p.a"]
    assert [c.queue for c in plan.firings] == ["root.p.a", "root.p"]
    assert any("already waits" in w for w in plan.warnings)
    assert plan.firings[1].preemptable == {"vcore": 2000}


# -- refusals and warnings ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "words"),
    [
        ("child-max-above-parent-max.yaml", "max"),
        ("guaranteed-above-max.yaml", "guaranteed"),
        ("quota-delay-under-resources.yaml", "quota.preemption.delay"),
    ],
)
def test_invalid_config_is_refused_with_reason_and_line(name: str, words: str) -> None:
    """A config the scheduler refuses: the importer's reason and line, no change."""
    data = (CONFIG / "invalid" / name).read_bytes()
    cluster, now = acme()
    plan = plan_config(data, in_force=in_force("queues-nested-gpu.yaml"), cluster=cluster, now=now)
    (refusal,) = plan.refusals
    with pytest.raises(ImportFailure) as exc:
        parse_config(data)
    assert refusal.reason in str(exc.value)
    assert refusal.line is not None
    assert refusal.line > 0
    assert f"line {refusal.line}" in str(exc.value)
    assert words in refusal.reason
    assert plan.changes == ()
    assert plan.to_dict()["refused"] is True


def test_unknown_partition_is_refused() -> None:
    cluster, now = acme()
    plan = plan_config(
        (CONFIG / "queues-nested-gpu-proposed.yaml").read_bytes(),
        in_force=in_force("queues-nested-gpu.yaml"),
        cluster=cluster,
        now=now,
        partition="gpu",
    )
    (refusal,) = plan.refusals
    assert "no partition 'gpu'" in refusal.reason


@pytest.mark.parametrize("rules", ["scheduler", "seed"])
def test_partition_flag_off_warns_and_fires_nothing(rules: timers.RuleSet) -> None:
    """The proposed config without the flag: a warning, and nothing fires. The seed starts
    no timer for the decreases; the scheduler applies the config whatever the flag (its
    timers start, and fire only once the flag is on again: engine.md 5.1)."""
    text = (
        (CONFIG / "queues-nested-gpu-proposed.yaml")
        .read_text()
        .replace("quotapreemptionenabled: true", "quotapreemptionenabled: false")
    )
    cluster, now = acme()
    plan = plan_config(
        text,
        in_force=in_force("queues-nested-gpu.yaml"),
        cluster=cluster,
        now=now,
        in_force_enabled=True,
        rules=rules,
    )
    assert plan.firings == ()
    if rules == "seed":
        assert all(not c.timer.starts for c in plan.changes)
        assert any("disabled on the partition" in c.timer.reason for c in plan.changes)
    else:
        assert all(c.timer.starts for c in plan.changes if c.is_decrease)
    assert any("only applies to new requests" in w for w in plan.warnings)
    assert any("turns quota preemption off" in w for w in plan.warnings)
    # the importer's own pitfall: delays set while the flag is off
    assert any("quotapreemptionenabled is false" in w for w in plan.warnings)


def test_seed_rule_is_a_warning_not_a_refusal() -> None:
    """max not above guaranteed with a delay: the scheduler accepts it, the plan warns."""
    lines = (CONFIG / "queues-nested-gpu-proposed.yaml").read_text().splitlines(keepends=True)
    # nlp (guaranteed 4 cores, 15m delay inherited): max 6 -> 4 cores
    nlp = max(i for i, line in enumerate(lines) if "max: {vcore: 6" in line)
    lines[nlp] = lines[nlp].replace("vcore: 6", "vcore: 4")
    text = "".join(lines)
    cluster, now = acme()
    plan = plan_config(text, in_force=in_force("queues-nested-gpu.yaml"), cluster=cluster, now=now)
    assert plan.refusals == ()
    (warning,) = [w for w in plan.warnings if "equals guaranteed" in w]
    assert warning.startswith("line ")
    assert f"line {nlp + 1}: queue root.research.nlp: max vcore 4 equals guaranteed 4" in warning
    assert warning in parse_config(text).warnings  # the import accepts it with the same warning


def test_new_max_below_own_guarantee_is_refused_with_its_line() -> None:
    """The scheduler refuses a max below the queue's own guaranteed: reason and line."""
    proposed = CHAIN_CURRENT.replace(
        "resources: {guaranteed: {vcore: 2}}",
        "resources: {guaranteed: {vcore: 2}, max: {vcore: 1}}",
    )
    plan = plan_config(
        proposed,
        in_force=in_force_from_spec(parse_config(CHAIN_CURRENT).partition()),
        cluster=_cluster(),
        now=0.0,
    )
    (refusal,) = plan.refusals
    assert "guaranteed" in refusal.reason
    assert (
        refusal.line
        == proposed.splitlines().index(
            "            resources: {guaranteed: {vcore: 2}, max: {vcore: 1}}"
        )
        + 1
    )


def test_without_snapshot_timers_assume_the_max_exceeded() -> None:
    plan = plan_config(
        (CONFIG / "queues-nested-gpu-proposed.yaml").read_bytes(),
        in_force=in_force("queues-nested-gpu.yaml"),
        cluster=None,
        now=0.0,
    )
    assert not plan.has_snapshot
    assert all(c.timer.starts for c in plan.changes)
    assert all(c.status == "unknown" and not c.victims for c in plan.firings)
    assert any("no cluster snapshot" in w for w in plan.warnings)


def test_added_and_removed_queues_are_listed() -> None:
    proposed = CHAIN_CURRENT.replace("              - name: b\n", "              - name: c\n")
    plan = plan_config(
        proposed,
        in_force=in_force_from_spec(parse_config(CHAIN_CURRENT).partition()),
        cluster=_cluster(),
        now=0.0,
    )
    kinds = {c.queue: c.kind for c in plan.changes}
    assert kinds == {"root.p.b": "removed", "root.p.c": "added"}
    assert all(not c.timer.starts for c in plan.changes)


# -- a bigger synthetic cluster and the layering rule ------------------------------------------


def _benchmark_module() -> ModuleType:
    spec = importlib.util.spec_from_file_location("plan_bench", REPO / "benchmarks/plan_config.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.subprocess
@pytest.mark.parametrize("rules", ["scheduler", "seed"])
def test_synthetic_cluster_plans_equal_the_engine_cli(
    tmp_path: Path, rules: timers.RuleSet
) -> None:
    """The benchmark's generator (small size): 20 chained firings, each as the CLI answers.
    Seed: leaves before parents on a shared deadline.  Scheduler: the walk's order, a
    parent before the queues below it (held to the next second), a timer cleared at a
    check when an earlier firing brought its queue within its max."""
    bench = _benchmark_module()
    current, proposed, cluster, _ = bench.synthetic("small", 20)
    plan = plan_config(
        proposed,
        in_force=in_force_from_spec(parse_config(current).partition()),
        cluster=cluster,
        now=1_700_000_000.0,
        rules=rules,
    )
    assert len(plan.firings) == 20
    keys = [v.key for c in plan.firings for v in c.victims]
    assert len(keys) == len(set(keys))  # no allocation is a victim twice
    if rules == "seed":
        depths = [(c.fires_at, -c.queue.count(".")) for c in plan.firings]
        assert depths == sorted(depths)  # leaves before parents on the shared deadline
        assert check_against_engine(plan, tmp_path) == 20
        return
    times = [c.fires_at or 0.0 for c in plan.firings]
    assert times == sorted(times)
    for t in sorted(set(times)):
        same = [c.queue for c in plan.firings if c.fires_at == t]
        assert same == [p for p in timers.walk_order(same) if p in same]  # top down
        # never a queue and one of its ancestors in the same second
        assert not [q for q in same if any(a in same for a in timers.ancestor_paths(q))]
    ran = [c for c in plan.firings if c.answer is not None]
    assert ran
    assert check_against_engine(plan, tmp_path) == len(ran)


def test_planning_imports_no_django() -> None:
    """dashboard/planning is framework-free, like the importers and the engine."""
    forbidden = {"django", "rest_framework", "celery", "redis", "plotly", "kombu"}
    for path in (REPO / "dashboard" / "planning").glob("*.py"):
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            names: list[str] = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module]
            for name in names:
                assert name.split(".")[0] not in forbidden, f"{path.name} imports {name}"
            if (
                isinstance(node, ast.ImportFrom)
                and node.module
                and node.module.startswith("dashboard.")
            ):
                # dashboard.display is framework-free too (its import-linter contract)
                assert node.module.startswith(
                    ("dashboard.importers", "dashboard.planning", "dashboard.display")
                )


def test_guarantee_floor_makes_a_firing_not_help_and_says_why() -> None:
    """p (guaranteed 10 cores) uses 12 in 4-core tasks; max 11: no task can go without
    taking p below its guarantee, so the firing does not help and the alert names p."""
    current = CHAIN_CURRENT.replace("{guaranteed: {vcore: 2}}", "{guaranteed: {vcore: 10}}")
    proposed = current.replace(
        "resources: {guaranteed: {vcore: 10}}",
        "resources: {guaranteed: {vcore: 10}, max: {vcore: 11}}",
    )
    tree = QueueConfig(
        "root",
        children=(
            QueueConfig(
                "p", guaranteed={"vcore": 10000}, children=(QueueConfig("a"), QueueConfig("b"))
            ),
        ),
    )
    allocs = tuple(
        Allocation(f"a{i}", "root.p.a", "n1", {"vcore": 4000}, created=float(i)) for i in range(3)
    )
    cluster = Cluster(tree, (Node("n1", {"vcore": 100000}),), allocs, Partition(True))
    plan = plan_config(
        proposed,
        in_force=in_force_from_spec(parse_config(current).partition()),
        cluster=cluster,
        now=0.0,
        rules="seed",
    )
    (firing,) = plan.firings
    assert firing.status == "does_not_help"
    assert firing.victims == ()
    assert firing.missed == {"vcore": 1000}
    assert any("the guarantee of root.p" in a for a in firing.alerts)
    assert any("preemption does not help on root.p" in a for a in firing.alerts)
    assert plan.to_dict()["changes"][0]["status"] == "does_not_help"  # type: ignore[index]
    # with the partition's miss at 100 % the same shortfall is best effort
    lenient = plan_config(
        proposed,
        in_force=in_force_from_spec(parse_config(current).partition()),
        cluster=cluster,
        now=0.0,
        miss=1.0,
        rules="seed",
    )
    assert lenient.firings[0].status == "best_effort"
    assert any("best effort on root.p" in a for a in lenient.firings[0].alerts)


def test_pending_timer_already_due_fires_now() -> None:
    """A waiting timer whose deadline passed fires at the next sweep: now, first."""
    current = in_force_from_spec(parse_config(_proposed(100, 2)).partition())
    current["root.p.a"] = QueueInForce(
        {"vcore": 2000}, None, 60.0, timer=timers.TimerState.waiting(900.0)
    )
    plan = plan_config(_proposed(6, 2), in_force=current, cluster=_cluster(), now=1000.0)
    assert [(c.queue, c.fires_at) for c in plan.firings] == [
        ("root.p.a", 1000.0),
        ("root.p", 1060.0),
    ]


BAD = Path(__file__).parents[1] / "data" / "bad"
WARN = Path(__file__).parents[1] / "data" / "warn"


@pytest.mark.parametrize("name", sorted(p.name for p in WARN.glob("*.yaml")))
def test_every_config_the_import_warns_about_is_planned_with_the_same_warnings(name: str) -> None:
    """The seed's rule and what the scheduler accepts unchecked: warnings, as in the import."""
    data = (WARN / name).read_bytes()
    plan = plan_config(data, in_force={}, cluster=None, now=0.0, filename=name)
    assert plan.refusals == ()
    warnings = parse_config(data, filename=name).warnings
    assert warnings
    assert set(warnings) <= set(plan.warnings)


@pytest.mark.parametrize("name", sorted(p.name for p in BAD.glob("*.yaml")))
def test_every_bad_config_is_refused_as_the_importer_refuses_it(name: str) -> None:
    """Same reason and location as the import."""
    data = (BAD / name).read_bytes()
    plan = plan_config(data, in_force={}, cluster=None, now=0.0, filename=name)
    with pytest.raises(ImportFailure) as exc:
        parse_config(data, filename=name)
    (refusal,) = plan.refusals
    assert (refusal.reason, refusal.location) == (exc.value.message, exc.value.location or name)
    if exc.value.location.startswith("line "):
        assert refusal.line == int(exc.value.location.split()[1])


def test_a_dynamic_queue_added_with_its_max_is_not_explained_as_a_guarantee_change() -> None:
    """A queue the scheduler made (in the snapshot, not in the config) added by the plan
    with the max it runs with starts no timer because no max is lowered (issue 28)."""
    proposed = CHAIN_CURRENT.replace(
        "              - name: b\n",
        "              - name: b\n              - name: c\n"
        "                resources: {max: {vcore: 3}}\n",
    )
    in_force = in_force_from_spec(parse_config(CHAIN_CURRENT).partition())
    in_force["root.p.c"] = QueueInForce({"vcore": 3000}, None, 60.0, is_dynamic=True)
    plan = plan_config(proposed, in_force=in_force, cluster=_cluster(), now=0.0)
    (change,) = [c for c in plan.changes if c.queue == "root.p.c"]
    assert change.kind == "added"
    assert not change.timer.starts
    assert "guaranteed" not in change.timer.reason
    assert "no max is lowered" in change.timer.reason


def test_scheduler_rules_keep_a_waiting_timer_across_a_raise_and_say_so() -> None:
    """Rule set ``scheduler`` (the default, engine.md 5.1): a waiting decrease of a (1 core,
    due 1030) raised to 5 cores while a uses 6 keeps its deadline (Go's setPreemptionTime
    only adjusts a set start time on a raise); a newly set max (p: none -> 100) is a raise
    too and starts no timer."""
    current = in_force_from_spec(parse_config(CHAIN_CURRENT).partition())
    current["root.p.a"] = QueueInForce(
        {"vcore": 1000},
        None,
        60.0,
        timer=timers.TimerState.waiting(1030.0, timers.DeadlineReason("started", 970.0)),
    )
    plan = plan_config(_proposed(100, 5), in_force=current, cluster=_cluster(), now=1000.0)
    by_queue = {c.queue: c for c in plan.changes}
    a = by_queue["root.p.a"]
    assert (a.timer.action, a.fires_at, plan.timer_rules) == (
        "kept_across_raise",
        1030.0,
        "scheduler",
    )
    assert "kept across the raise at 1970-01-01 00:16:40 UTC (rule set scheduler)" in a.timer.reason
    assert not by_queue["root.p"].timer.starts
    assert plan.to_dict()["timer_rules"] == "scheduler"
