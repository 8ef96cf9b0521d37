"""Differential driver: yunikorn-core's quota timers (the timer oracle) against the engine.

The oracle (``../shared/tools/timer-oracle``, see its README) is core's own
``pkg/scheduler/objects`` test binary with a virtual clock: given a JSON list of
histories over the tree ``root > root.parent > root.parent.leaf`` it answers, op by
op, which quota preemptions the once-a-second checks started and each queue's timer
after the op.  This module

- makes seeded random histories (:func:`random_history`): lowerings, further
  lowerings, raises below and above usage, delays up, down and unset, limits on new
  types and zero limits, allocations added and released, restarts, the partition
  flag off and on, queues due in the same second, completions;
- runs a list of them through the oracle in one process call (:func:`run_oracle`);
- replays each through the engine exactly as the dashboard's sweep drives it
  (:func:`replay`): a config -> one ``ConfigChanged`` per queue, an allocation ->
  ``UsageRose`` on the parent then the leaf (core's ``IncAllocatedResource`` order),
  a check at every whole second through :func:`engine.timers.tick_queues`, a restart
  -> :func:`engine.timers.rearm_after_restart`, a completion -> ``Completed``;
- compares them step by step (:func:`first_difference`) and shrinks a differing
  history to the shortest one that still differs (:func:`shrink`).

``PYTHONPATH=.:tests python -m support.timer_oracle HISTORY.json`` replays a history (one, or a
list, in the oracle's input format) through both and prints every step side by side.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import os
import random
import subprocess
import sys
import tempfile
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from engine import timers
from engine.durations import parse_go_duration_ns

ROOT, PARENT, LEAF = "root", "root.parent", "root.parent.leaf"
#: The queues the oracle reports, by its names.
REPORTED = {"parent": PARENT, "leaf": LEAF}
#: Resource types the histories use.  ``vcore`` is left out on purpose: core reads a
#: configured vcore max in milli-cores (``ParseVCore``) while allocations are raw.
TYPES = ("memory", "gpu")
DELAYS: tuple[str | None, ...] = (
    None,
    None,
    "5s",
    "5s",
    "10s",
    "3s",
    "2500ms",
    "8s",
    "0s",
    "-4s",
    "later",
    "1m",
)
TOLERANCE = 1e-6
MAX_TWEAKS = (
    *("lower", "lower", "lower"),
    *("raise_below", "raise_above"),
    *("add", "drop", "zero", "unset", "mixed", "same"),
)

History = dict[str, Any]
Step = dict[str, Any]


# -- the oracle binary ------------------------------------------------------------


def oracle_dir() -> Path:
    """``TIMER_ORACLE_DIR``, else ``../shared/tools/timer-oracle`` beside the checkout."""
    env = os.environ.get("TIMER_ORACLE_DIR")
    if env:
        return Path(env)
    return Path(__file__).resolve().parents[2].parent / "shared" / "tools" / "timer-oracle"


def oracle_binary(cache: Path) -> Path:
    """The oracle unpacked from ``objects.test.gz`` into *cache* (once per archive content).

    Raises:
        FileNotFoundError: the archive is not there.
    """
    archive = oracle_dir() / "objects.test.gz"
    data = archive.read_bytes()
    digest = hashlib.sha256(data).hexdigest()[:16]
    target = cache / f"timer-oracle-{digest}"
    if target.exists():
        return target
    cache.mkdir(parents=True, exist_ok=True)
    # unpack beside the target and rename: concurrent test workers never see half a file
    fd, tmp = tempfile.mkstemp(dir=cache, prefix=".oracle-")
    with os.fdopen(fd, "wb") as out:
        out.write(gzip.decompress(data))
    os.chmod(tmp, 0o755)
    os.replace(tmp, target)
    return target


def run_oracle(binary: Path, histories: Sequence[History]) -> list[dict[str, Any]]:
    """Every history through the oracle in one process; its results in input order.

    Raises:
        RuntimeError: the oracle failed or answered a history with an error.
    """
    with tempfile.TemporaryDirectory(prefix="timer-oracle-") as tmp:
        src = Path(tmp) / "in.json"
        dst = Path(tmp) / "out.json"
        src.write_text(json.dumps(list(histories)))
        proc = subprocess.run(
            [str(binary), "-test.run", "^TestQuotaTimerOracle$", "-test.count=1"],
            env={**os.environ, "ORACLE_INPUT": str(src), "ORACLE_OUTPUT": str(dst)},
            capture_output=True,
            text=True,
            timeout=300,
            check=False,
        )
        if proc.returncode != 0 or not dst.exists():
            raise RuntimeError(
                f"the timer oracle exited {proc.returncode}: {proc.stdout[-2000:]}"
                f"{proc.stderr[-2000:]}"
            )
        results: list[dict[str, Any]] = json.loads(dst.read_text())
    for r in results:
        if r.get("error"):
            raise RuntimeError(f"the timer oracle refused history {r['id']}: {r['error']}")
    return results


# -- random histories ---------------------------------------------------------------


def _random_max(rng: random.Random) -> dict[str, int] | None:
    roll = rng.random()
    if roll < 0.12:
        return None
    out = {"memory": rng.randint(2, 14)}
    if rng.random() < 0.35:
        out["gpu"] = rng.choice((0, 1, 2, 3))
    if rng.random() < 0.1:
        del out["memory"]
        if not out:
            out["gpu"] = 0
    return out


def _random_conf(rng: random.Random, flag: bool = True) -> dict[str, Any]:
    return {
        "flag": flag if rng.random() < 0.9 else not flag,
        "root_delay": rng.choice((None, None, None, "5s", "10s")),
        "parent_max": _random_max(rng),
        "parent_delay": rng.choice(DELAYS),
        "leaf_max": _random_max(rng),
        "leaf_delay": rng.choice(DELAYS),
    }


def _usage(allocs: Mapping[int, Mapping[str, int]]) -> dict[str, int]:
    out: dict[str, int] = {}
    for res in allocs.values():
        for t, q in res.items():
            out[t] = out.get(t, 0) + q
    return {t: q for t, q in out.items() if q}


def _tweak_max(rng: random.Random, old: dict[str, int] | None, used: Mapping[str, int]) -> Any:
    """A new max from *old*: lowered (again), raised below or above usage, a type added
    or removed, a zero limit, unset, or some types up and others down."""
    cur = dict(old or {"memory": rng.randint(4, 14)})
    kind = rng.choice(MAX_TWEAKS)
    t = rng.choice(sorted(cur))
    u = used.get(t, 0)
    if kind == "lower":
        cur[t] = max(0, cur[t] - rng.randint(1, 4))
    elif kind == "raise_below":
        cur[t] = max(cur[t] + 1, u - rng.randint(0, 2)) if u > cur[t] else cur[t] + 1
    elif kind == "raise_above":
        cur[t] = max(cur[t], u) + rng.randint(1, 3)
    elif kind == "add":
        other = next((x for x in TYPES if x not in cur), None)
        if other is not None:
            cur[other] = rng.choice((0, 1, used.get(other, 0), used.get(other, 0) + 1))
    elif kind == "drop" and len(cur) > 1:
        del cur[t]
    elif kind == "zero":
        cur[t] = 0
    elif kind == "unset":
        return None
    elif kind == "mixed" and len(cur) > 1:
        a, b = sorted(cur)
        cur[a] += 2
        cur[b] = max(0, cur[b] - 1)
    return cur


def random_history(rng: random.Random, ident: int) -> History:
    """One seeded history of 3 to 14 ops over a few tens of seconds."""
    init = _random_conf(rng)
    conf = dict(init)
    ops: list[dict[str, Any]] = []
    allocs: dict[int, dict[str, int]] = {}
    next_id = 1
    # whole and half seconds: ops land on the second of a check and between two
    t = rng.choice((0.5, 1.0, 1.5))
    for _ in range(rng.choice((0, 1, 2, 2, 3))):  # usage before the first change
        res = {"memory": rng.randint(2, 7)}
        allocs[next_id] = res
        ops.append({"t": t, "op": "alloc", "res": res, "id": next_id})
        next_id += 1
        t += rng.choice((0.0, 0.5, 1.0))
    for _ in range(rng.randint(3, 14)):
        roll = rng.random()
        if roll < 0.3:
            res = {"memory": rng.randint(1, 6)}
            if rng.random() < 0.25:
                res["gpu"] = rng.randint(1, 2)
            if rng.random() < 0.1:
                res = {"gpu": 1}
            allocs[next_id] = res
            ops.append({"t": t, "op": "alloc", "res": res, "id": next_id})
            next_id += 1
        elif roll < 0.62:
            conf = dict(conf)
            used = _usage(allocs)
            for _ in range(rng.choice((1, 1, 1, 2))):
                what = rng.random()
                if what < 0.3:
                    conf["leaf_max"] = _tweak_max(rng, conf["leaf_max"], used)
                elif what < 0.55:
                    conf["parent_max"] = _tweak_max(rng, conf["parent_max"], used)
                elif what < 0.65:
                    # the same lowering on both: due in the same second
                    new = _tweak_max(rng, conf["leaf_max"], used)
                    conf["leaf_max"] = new
                    conf["parent_max"] = None if new is None else dict(new)
                    if rng.random() < 0.5:
                        conf["leaf_delay"] = conf["parent_delay"]
                elif what < 0.75:
                    conf["leaf_delay"] = rng.choice(DELAYS)
                elif what < 0.82:
                    conf["parent_delay"] = rng.choice(DELAYS)
                elif what < 0.86:
                    conf["root_delay"] = rng.choice((None, "5s", "10s", "2s"))
                else:
                    conf["flag"] = not conf["flag"]
            ops.append({"t": t, "op": "config", "conf": conf})
        elif roll < 0.78 and allocs:
            gone = rng.choice(sorted(allocs))
            del allocs[gone]
            ops.append({"t": t, "op": "release", "id": gone})
        elif roll < 0.86:
            ops.append({"t": t, "op": "complete", "queue": rng.choice(("leaf", "parent", "any"))})
        elif roll < 0.93:
            ops.append({"t": t, "op": "restart"})
        else:
            ops.append({"t": t, "op": "advance"})
        t += rng.choice((0.0, 0.5, 1.0, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0, 9.0, 12.0))
    ops.append({"t": t + rng.choice((1.0, 5.0, 12.0)), "op": "advance"})
    return {"id": ident, "init": init, "ops": ops}


def random_histories(seed: int, count: int) -> list[History]:
    rng = random.Random(seed)
    return [random_history(rng, i) for i in range(count)]


# -- the engine, as the sweep drives it -----------------------------------------------


def effective_delay(conf: Mapping[str, Any], queue: str) -> float:
    """A queue's ``quota.preemption.delay`` as core reads it: its own text, else the
    nearest ancestor's, parsed by Go's rules; unparsable or <= 0 gives 0 (no timer)."""
    chain = {ROOT: ("root_delay",), PARENT: ("parent_delay", "root_delay")}.get(
        queue, ("leaf_delay", "parent_delay", "root_delay")
    )
    text = next((conf[k] for k in chain if conf.get(k) is not None), None)
    if text is None:
        return 0.0
    ns = parse_go_duration_ns(text)
    return 0.0 if ns is None or ns <= 0 else ns / 1e9


def queue_max(conf: Mapping[str, Any], queue: str) -> dict[str, int] | None:
    raw = {PARENT: conf.get("parent_max"), LEAF: conf.get("leaf_max")}.get(queue)
    return dict(raw) if raw else None


@dataclass
class _Replay:
    conf: dict[str, Any]
    allocs: dict[int, dict[str, int]]
    states: dict[str, timers.TimerState]

    def facts(self, queue: str) -> timers.QueueFacts:
        return timers.QueueFacts(
            max=queue_max(self.conf, queue),
            usage=_usage(self.allocs),
            delay=effective_delay(self.conf, queue),
            enabled=bool(self.conf["flag"]),
        )


def _state_view(replay: _Replay, queue: str) -> dict[str, Any]:
    s = replay.states[queue]
    return {
        "kind": s.kind,
        "deadline": s.deadline if s.is_waiting else None,
        "delay": effective_delay(replay.conf, queue),
    }


def replay(history: History) -> list[Step]:
    """*history* through the engine (rule set ``scheduler``); one step per op, in the
    oracle's shape: ``fires`` ``[[second, queue], ...]`` and ``after`` per queue."""
    r = _Replay(dict(history["init"]), {}, {PARENT: timers.TimerState.idle()})
    r.states[LEAF] = timers.TimerState.idle()
    last_tick = 0
    out: list[Step] = []
    event: timers.TimerEvent
    for op in history["ops"]:
        t = float(op["t"])
        fires: list[list[Any]] = []
        second = last_tick + 1
        while second < t:
            facts = {q: r.facts(q) for q in (ROOT, PARENT, LEAF)}
            for queue, decision in timers.tick_queues(r.states, facts, float(second)):
                if queue in r.states:
                    r.states[queue] = decision.state
                if decision.action == "start_preemption":
                    fires.append([second, queue])
            last_tick = second
            second += 1
        kind = op["op"]
        if kind == "config":
            old = r.conf
            r.conf = dict(op["conf"])
            for queue in (PARENT, LEAF):
                f = r.facts(queue)
                event = timers.ConfigChanged(
                    old_max=queue_max(old, queue),
                    old_delay=effective_delay(old, queue),
                    max=f.max,
                    usage=f.usage,
                    delay=f.delay,
                    enabled=f.enabled,
                )
                r.states[queue] = timers.timer_step(r.states[queue], event, t).state
        elif kind == "alloc":
            r.allocs[int(op["id"])] = dict(op["res"])
            for queue in (PARENT, LEAF):  # core updates the parent first
                f = r.facts(queue)
                event = timers.UsageRose(max=f.max, usage=f.usage, delay=f.delay, enabled=f.enabled)
                r.states[queue] = timers.timer_step(r.states[queue], event, t).state
        elif kind == "release":
            r.allocs.pop(int(op["id"]), None)
        elif kind == "complete":
            which = op.get("queue", "any")
            for name, queue in REPORTED.items():
                if which in ("any", name) and r.states[queue].is_running:
                    f = r.facts(queue)
                    event = timers.Completed(
                        max=f.max, usage=f.usage, delay=f.delay, enabled=f.enabled
                    )
                    r.states[queue] = timers.timer_step(r.states[queue], event, t).state
        elif kind == "restart":
            for queue in (PARENT, LEAF):
                d = timers.rearm_after_restart(r.states[queue], t, r.facts(queue))
                r.states[queue] = d.state
        elif kind != "advance":
            raise ValueError(f"unknown op {kind!r}")
        out.append({"fires": fires, "after": {n: _state_view(r, q) for n, q in REPORTED.items()}})
    return out


# -- comparing ------------------------------------------------------------------------


def _near(a: float | None, b: float | None) -> bool:
    if a is None or b is None:
        return a is b
    return abs(a - b) < TOLERANCE


def first_difference(
    history: History, oracle_steps: Sequence[Step], engine_steps: Sequence[Step]
) -> str | None:
    """The first step where the engine and the oracle differ, in words; ``None`` if none."""
    if len(oracle_steps) != len(engine_steps):
        return f"{len(oracle_steps)} oracle steps against {len(engine_steps)} engine steps"
    for i, (o, e) in enumerate(zip(oracle_steps, engine_steps, strict=True)):
        op = history["ops"][i]
        where = f"step {i} ({op['op']} at {op['t']})"
        o_fires = [[int(s), str(q)] for s, q in o["fires"]]
        if o_fires != e["fires"]:
            return f"{where}: fires: oracle {o_fires}, engine {e['fires']}"
        for name in REPORTED:
            os_, es = o["after"][name], e["after"][name]
            if not _near(float(os_["delay"]), es["delay"]):
                return f"{where}: {name} delay: oracle {os_['delay']}, engine {es['delay']}"
            if os_["kind"] != es["kind"]:
                return (
                    f"{where}: {name}: oracle {os_['kind']} (deadline {os_['deadline']}), "
                    f"engine {es['kind']} (deadline {es['deadline']})"
                )
            if os_["kind"] == "waiting" and not _near(os_["deadline"], es["deadline"]):
                return (
                    f"{where}: {name} deadline: oracle {os_['deadline']}, engine {es['deadline']}"
                )
    return None


def differences(
    histories: Sequence[History], results: Sequence[Mapping[str, Any]]
) -> list[tuple[History, str]]:
    """Each history whose replay differs from the oracle's result, with the first difference."""
    by_id = {r["id"]: r for r in results}
    out: list[tuple[History, str]] = []
    for h in histories:
        diff = first_difference(h, by_id[h["id"]]["steps"] or [], replay(h))
        if diff is not None:
            out.append((h, diff))
    return out


def shrink(binary: Path, history: History) -> tuple[History, str]:
    """The shortest history that still differs, found by dropping ops one at a time
    while it differs (every candidate of a round goes to the oracle in one call)."""
    current = history
    results = run_oracle(binary, [current])
    diff = first_difference(current, results[0]["steps"] or [], replay(current))
    if diff is None:
        raise ValueError("the history does not differ")
    while True:
        ops = current["ops"]
        candidates = [
            {"id": i, "init": current["init"], "ops": ops[:i] + ops[i + 1 :]}
            for i in range(len(ops))
        ]
        if not candidates:
            return current, diff
        found = differences(candidates, run_oracle(binary, candidates))
        if not found:
            return current, diff
        current, diff = found[0]


def coverage(histories: Sequence[History], results: Sequence[Mapping[str, Any]]) -> Counter[str]:
    """How many steps of the oracle's answers show each rule worth a history (engine.md
    5.1's bullets), so that a test can check the random histories reach them all."""
    seen: Counter[str] = Counter()
    by_id = {r["id"]: r for r in results}
    for h in histories:
        before = {n: {"kind": "idle", "deadline": None} for n in REPORTED}
        flag_was_off = not h["init"]["flag"]
        for op, step in zip(h["ops"], by_id[h["id"]]["steps"] or [], strict=True):
            after = step["after"]
            fired = {str(q) for _, q in step["fires"]}
            if fired:
                seen["fired"] += 1
                if flag_was_off:
                    seen["fired after the flag was off"] += 1
            if PARENT in fired and before["leaf"]["kind"] == "waiting":
                due = before["leaf"]["deadline"]
                if any(due <= s for s, q in step["fires"] if q == PARENT):
                    seen["parent ran, child due in the same second held"] += 1
            for n in REPORTED:
                b, a = before[n], after[n]
                kind = op["op"]
                if (
                    b["kind"] == "waiting"
                    and a["kind"] == "idle"
                    and not fired
                    and kind in ("alloc", "release", "advance")
                    and b["deadline"] > op["t"]
                ):
                    seen["cleared within the max before its deadline"] += 1
                if kind == "config" and b["kind"] == a["kind"] == "waiting":
                    same = abs(b["deadline"] - a["deadline"]) < TOLERANCE
                    seen["kept by a config" if same else "shifted by a delay change"] += 1
                if kind == "config" and b["kind"] == "idle" and a["kind"] == "waiting":
                    seen["armed by a config" + ("" if op["conf"]["flag"] else ", flag off")] += 1
                if kind == "alloc" and b["kind"] == "idle" and a["kind"] == "waiting":
                    seen["armed by a usage rise"] += 1
                if kind == "restart" and a["kind"] == "waiting":
                    seen["re-armed at a restart"] += 1
                if kind == "restart" and b["kind"] != "idle" and a["kind"] == "idle":
                    seen["lost at a restart"] += 1
                if kind == "complete" and b["kind"] == "running" and a["kind"] == "idle":
                    seen["completed"] += 1
            if op["op"] == "config" and not op["conf"]["flag"]:
                flag_was_off = True
            before = after
    return seen


def replayable(history: History) -> str:
    """A history as the oracle's input (a list of one), ready to replay."""
    return json.dumps([{**history, "id": 1}], indent=1)


def main(argv: Sequence[str]) -> int:
    """Replay the histories of a file through both and print each step side by side."""
    if len(argv) != 1:
        print(
            "usage: PYTHONPATH=.:tests python -m support.timer_oracle HISTORY.json", file=sys.stderr
        )
        return 2
    doc = json.loads(Path(argv[0]).read_text())
    histories = doc if isinstance(doc, list) else [doc]
    cache = Path(tempfile.gettempdir()) / "timer-oracle-cache"
    binary = oracle_binary(cache)
    for h, result in zip(histories, run_oracle(binary, histories), strict=True):
        engine_steps = replay(h)
        for op, o, e in zip(h["ops"], result["steps"], engine_steps, strict=True):
            print(json.dumps(op))
            print("  oracle", json.dumps({"fires": o["fires"], "after": _brief(o["after"])}))
            print("  engine", json.dumps({"fires": e["fires"], "after": _brief(e["after"])}))
        print("difference:", first_difference(h, result["steps"], engine_steps))
    return 0


def _brief(after: Mapping[str, Mapping[str, Any]]) -> dict[str, Any]:
    return {n: [s["kind"], s["deadline"]] for n, s in after.items()}


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
