"""The state dump's shim cache: pods, their allow-preemption annotation and tags."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from dashboard.importers.snapshot.access import _FALSE_WORDS, _TRUE_WORDS, Reader
from dashboard.importers.snapshot.result import ANNOTATION_ALLOW_PREEMPTION, TAG_NAMESPACE, TAG_POD
from dashboard.importers.snapshot.statedump import _Sources


@dataclass
class _PodInfo:
    allow_preemption: bool | None
    allow_preempt_other: bool | None


def _shim_pods(src: _Sources) -> tuple[dict[str, _PodInfo], dict[str, _PodInfo]]:
    """Pod opt-outs from the state dump: by uid and by ``namespace/name``."""
    by_uid: dict[str, _PodInfo] = {}
    by_name: dict[str, _PodInfo] = {}
    if src.diagnostics is None:
        return by_uid, by_name
    file, diag = src.diagnostics
    r = Reader(file)
    cache = diag.get("cache")
    if not isinstance(cache, dict):
        src.warnings.append(f"{file}: rmDiagnostics has no shim cache; allow-preemption unknown")
        return by_uid, by_name
    classes: dict[str, tuple[bool | None, bool | None]] = {}
    pcs = r.obj(cache.get("priorityClasses") or {}, "rmDiagnostics.cache.priorityClasses")
    for cname, pc in pcs.items():
        path = f"rmDiagnostics.cache.priorityClasses.{cname}"
        pc = r.obj(pc, path)
        allow = _annotation_bool(r, pc, path, src.warnings)
        policy = pc.get("preemptionPolicy")
        classes[cname] = (allow, None if policy is None else policy != "Never")
    pods = r.obj(cache.get("pods") or {}, "rmDiagnostics.cache.pods")
    for key, pod in pods.items():
        path = f"rmDiagnostics.cache.pods.{key}"
        pod = r.obj(pod, path)
        allow = _annotation_bool(r, pod, path, src.warnings)
        pc_name = pod.get("priorityClassName")
        pc_allow, pc_other = (
            classes.get(pc_name, (None, None)) if isinstance(pc_name, str) else (None, None)
        )
        policy = pod.get("preemptionPolicy")
        other = (policy != "Never") if isinstance(policy, str) else pc_other
        info = _PodInfo(allow if allow is not None else pc_allow, other)
        by_name[key] = info
        uid = pod.get("uid")
        if isinstance(uid, str) and uid:
            by_uid[uid] = info
    return by_uid, by_name


def _annotation_bool(
    r: Reader, obj: Mapping[str, Any], path: str, warnings: list[str]
) -> bool | None:
    notes = obj.get("annotations")
    if not isinstance(notes, dict):
        return None
    value = notes.get(ANNOTATION_ALLOW_PREEMPTION)
    if value is None:
        return None
    if not isinstance(value, str):
        raise r.fail(f"{path}.annotations", f"{ANNOTATION_ALLOW_PREEMPTION} must be a string")
    if value.strip() in _TRUE_WORDS:
        return True
    if value.strip() in _FALSE_WORDS:
        return False
    warnings.append(
        f"{r.file}: {path}: {ANNOTATION_ALLOW_PREEMPTION}={value!r} is not a boolean; ignored"
    )
    return None


def _pod_key(tags: Mapping[str, str]) -> str | None:
    ns, pod = tags.get(TAG_NAMESPACE), tags.get(TAG_POD)
    return f"{ns}/{pod}" if ns and pod else None


def _tags(r: Reader, v: object, path: str) -> dict[str, str]:
    if type(v) is dict and all(type(t) is str for t in v.values()):
        return dict(v)  # the common case, without a path per tag
    d = r.obj(v or {}, path)
    return {k: r.string(t, f"{path}.{k}") for k, t in d.items()}
