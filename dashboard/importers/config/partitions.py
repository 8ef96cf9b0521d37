"""Decoded partitions -> typed specs: delays, templates, queues, and the warnings about them."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from dashboard.importers import quota_rule
from dashboard.importers.config.decoding import _BARE_NUMBER, _fail, _Obj, _SMap
from dashboard.importers.config.limits import (
    _check_limit_apps,
    _check_limit_resources,
    _check_limits,
    _check_queue_limits,
)
from dashboard.importers.config.placement import _check_node_sort, _check_placement
from dashboard.importers.config.specs import (
    DEFAULT_PARTITION,
    PREEMPTION_DELAY,
    QUOTA_DELAY,
    ROOT,
    SHORT_DELAY_SECONDS,
    PartitionSpec,
    QueueSpec,
)
from dashboard.importers.config.validation import (
    _Q,
    _build_q,
    _check_max_applications,
    _check_names,
    _check_queue_resource,
    _fit_max_undef,
    _is_zero,
    _iter_q,
    _parse_queue_resources,
    _parse_resource,
)
from dashboard.importers.quantities import (
    format_resource,
    short_duration,
)
from engine.durations import DurationSyntaxError, read_go_duration


def _plain(value: Any) -> Any:
    """Decoded values -> plain JSON-friendly data (the canonical ``raw`` form)."""
    if isinstance(value, _Obj):
        return {k: _plain(v) for k, v in value.fields.items() if v is not None}
    if isinstance(value, _SMap):
        return dict(value.items)
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value


def _delay_of(
    props: Mapping[str, str], inherited: float, where: str, line: int, warnings: list[str]
) -> float:
    text = props.get(QUOTA_DELAY)
    if text is None:
        return inherited
    try:
        seconds = read_go_duration(text)
    except DurationSyntaxError as exc:
        if _BARE_NUMBER.fullmatch(text):
            try:
                fix = f"{text}s or {short_duration(float(text))}"
            except ValueError:
                fix = f"{text}s"
            warnings.append(
                f"line {line}: {where}: {QUOTA_DELAY} {text!r} is a bare number; the scheduler "
                f"needs a Go duration with a unit, ignores this value (keeps 0s) and quota "
                f"preemption never fires for this queue. Write {fix}."
            )
        else:
            warnings.append(
                f"line {line}: {where}: {QUOTA_DELAY} {text!r} is not a Go duration ({exc}); "
                "the scheduler keeps 0s and quota preemption never fires for this queue"
            )
        return 0.0
    if seconds < 0:
        warnings.append(
            f"line {line}: {where}: {QUOTA_DELAY} {text!r} is negative; the scheduler treats it "
            "as 0s and quota preemption never fires for this queue"
        )
        return 0.0
    if 0 < seconds < SHORT_DELAY_SECONDS:
        warnings.append(
            f"line {line}: {where}: {QUOTA_DELAY} {text!r} is shorter than a minute; the "
            "YuniKorn guide advises against delays below 60s"
        )
    return seconds


def _zero_check(
    res: dict[str, int], kind: str, where: str, line: int, warnings: list[str]
) -> dict[str, int] | None:
    if not res:
        return None
    if _is_zero(res):
        warnings.append(
            f"line {line}: {where}: {kind} {format_resource(res)} has no positive value; the "
            f"scheduler treats it as not set at all (imported as not set)"
        )
        return None
    return dict(res)


def _template_spec(obj: _Obj | None, where: str, warnings: list[str]) -> dict[str, Any] | None:
    if obj is None or not obj.fields:
        return None
    res = obj.get("resources")
    g = _parse_resource(
        res.get("guaranteed") if isinstance(res, _Obj) else None,
        f"{where} child template guaranteed",
        warnings,
    )
    m = _parse_resource(
        res.get("max") if isinstance(res, _Obj) else None,
        f"{where} child template max",
        warnings,
    )
    if not _fit_max_undef(m, g):
        # the scheduler does not validate templates (template.FromConf only parses them)
        warnings.append(
            f"line {obj.line}: {where}: child template guaranteed {format_resource(g)} is "
            f"larger than its max {format_resource(m)}; the scheduler accepts it, and every "
            "queue made from the template gets a guarantee it can never reach"
        )
    props = dict(obj.get("properties").items) if obj.get("properties") is not None else {}
    if QUOTA_DELAY in props:
        warnings.append(
            f"line {obj.line}: {where}: the child template sets {QUOTA_DELAY}; queues created "
            "from a template are dynamic and never run quota preemption"
        )
    apps = obj.get("maxapplications") or None
    if not g and not m and not props and apps is None:
        return None
    return {
        "max_applications": apps,
        "properties": props,
        "guaranteed": g or None,
        "max": m or None,
    }


def _spec(q: _Q, inherited_delay: float, warnings: list[str]) -> QueueSpec:
    where = f"queue {q.path}"
    props_obj = q.obj.get("properties")
    props: dict[str, str] = dict(props_obj.items) if props_obj is not None else {}
    prop_lines = props_obj.key_lines if props_obj is not None else {}
    delay_line = prop_lines.get(QUOTA_DELAY, q.obj.line_of("properties"))
    delay = _delay_of(props, inherited_delay, where, delay_line, warnings)
    pdelay = props.get(PREEMPTION_DELAY)
    if pdelay is not None:
        try:
            if read_go_duration(pdelay) <= 0:
                raise DurationSyntaxError("not positive")
        except DurationSyntaxError:
            warnings.append(
                f"line {prop_lines.get(PREEMPTION_DELAY)}: {where}: {PREEMPTION_DELAY} "
                f"{pdelay!r} is not a positive Go duration; the scheduler uses the default 30s"
            )
    guaranteed = _zero_check(
        q.guaranteed, "guaranteed", where, q.resources_line("guaranteed"), warnings
    )
    maximum = _zero_check(q.max, "max", where, q.resources_line("max"), warnings)
    children = tuple(_spec(c, delay, warnings) for c in q.children)
    raw = {k: _plain(v) for k, v in q.obj.fields.items() if k != "queues" and v is not None}
    if q.inserted:
        raw = {"name": ROOT}
    apps = q.obj.get("maxapplications") or None
    return QueueSpec(
        name=q.name.lower(),
        path=q.path,
        parent=True if q.path == ROOT else q.obj.get("parent"),
        guaranteed=guaranteed,
        max=maximum,
        properties=props,
        quota_preemption_delay=delay,
        max_applications=apps,
        child_template=_template_spec(q.obj.get("childtemplate"), where, warnings),
        is_leaf=not (q.parent_flag or q.children),
        children=children,
        raw=raw,
        line=None if q.inserted else q.line,
    )


def _partition(part_obj: _Obj, seen: dict[str, int], warnings: list[str]) -> PartitionSpec:
    name = part_obj.get("name") or ""
    if name == "" or name.lower() == DEFAULT_PARTITION:
        name = DEFAULT_PARTITION
    if name.lower() in seen:
        raise _fail(
            f"duplicate partition name {name} (first at line {seen[name.lower()]})",
            part_obj.line_of("name"),
        )
    seen[name.lower()] = part_obj.line_of("name")
    where = f"partition {name}"
    queues = part_obj.get("queues")
    if queues is None:
        raise _fail(
            f"{where}: queue config is not set (add queues: with a root queue)", part_obj.line
        )
    queues = [q for q in queues if q is not None]
    if len(queues) == 1 and (queues[0].get("name") or "").lower() == ROOT:
        root = _build_q(queues[0], "")
        root.parent_flag = True
    else:
        fake = _Obj(part_obj.line_of("queues"), {"name": ROOT, "parent": True}, {})
        root = _Q(fake, ROOT, ROOT, True, [_build_q(q, ROOT) for q in queues], inserted=True)
    res = root.obj.get("resources")
    if isinstance(res, _Obj) and (res.get("guaranteed") is not None or res.get("max") is not None):
        raise _fail(f"{where}: the root queue must not have resource limits set", res.line)

    _check_names(root)
    _parse_queue_resources(root, warnings)
    _check_queue_limits(root, warnings)
    _check_queue_resource(root, None, None)
    _check_placement(part_obj.get("placementrules"), root, name)
    _check_limits(part_obj.get("limits"), where, root, warnings)
    _check_node_sort(part_obj, name)
    _check_max_applications(root)
    _check_limit_resources(root, {}, {}, "")
    _check_limit_apps(root, {}, {}, "")

    spec_root = _spec(root, 0.0, warnings)
    lines = {q.path: q.resources_line("max") for q in _iter_q(root)}
    warnings.extend(quota_rule.warnings_for(spec_root.walk(), lines))

    preemption = part_obj.get("preemption")
    qp_enabled = bool(preemption.get("quotapreemptionenabled")) if preemption else False
    enabled_flag = preemption.get("enabled") if preemption else None
    if not qp_enabled:
        delayed = [
            q
            for q in spec_root.walk()
            if QUOTA_DELAY in q.properties and q.quota_preemption_delay > 0
        ]
        if delayed:
            state = (
                "false"
                if preemption is not None and preemption.get("quotapreemptionenabled") is False
                else "absent (default false)"
            )
            names = ", ".join(
                f"{q.path} ({short_duration(q.quota_preemption_delay)})" for q in delayed
            )
            warnings.append(
                f"line {part_obj.line}: {where}: quota preemption delays are set on {names} but "
                f"preemption.quotapreemptionenabled is {state}, so quota preemption never fires "
                "in this partition; set preemption: {quotapreemptionenabled: true}"
            )
    raw = {k: _plain(v) for k, v in part_obj.fields.items() if k != "queues" and v is not None}
    raw["name"] = name
    return PartitionSpec(
        name=name,
        quota_preemption_enabled=qp_enabled,
        preemption_enabled=True if enabled_flag is None else bool(enabled_flag),
        root=spec_root,
        placement_rules=_plain(part_obj.get("placementrules") or []),
        raw=raw,
    )
