"""Prometheus' text format (0.0.4) of the collector's families, written in one pass.

Byte for byte what ``prometheus_client.exposition.generate_latest`` writes for them
(tests compare the two), without its per-sample checks of every label name: writing
14,000 samples that way took most of a scrape.  The collector's metric and label names
are fixed legacy names, checked once per family here; a family with any other name is
written by ``generate_latest`` itself.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from typing import cast

from prometheus_client.exposition import generate_latest
from prometheus_client.metrics_core import Metric
from prometheus_client.registry import Collector
from prometheus_client.utils import floatToGoString

#: Go's float text, as Prometheus reads it (+Inf, NaN; exponents past 1e+06).
_number = cast(Callable[[float], str], floatToGoString)

#: Prometheus' legacy metric and label names: written as they are, never quoted.
_METRIC_NAME = re.compile(r"[a-zA-Z_:][a-zA-Z0-9_:]*")
_LABEL_NAME = re.compile(r"[a-zA-Z_][a-zA-Z0-9_]*")
#: What a label value escapes (a backslash, a new line, a double quote).
_SPECIAL = re.compile(r'[\\\n"]')

#: The Prometheus type written for an OpenMetrics type, and the suffix of its name.
_TYPES = {
    "counter": ("counter", "_total"),
    "info": ("gauge", "_info"),
    "stateset": ("gauge", ""),
    "gaugehistogram": ("histogram", ""),
    "unknown": ("untyped", ""),
}
#: OpenMetrics-only samples, written as gauges of their own after their family.
_OM_SUFFIXES = ("_created", "_gsum", "_gcount")


def _escape_value(value: str) -> str:
    if "\\" in value or "\n" in value or '"' in value:
        return value.replace("\\", r"\\").replace("\n", r"\n").replace('"', r"\"")
    return value


def _help(text: str) -> str:
    return text.replace("\\", r"\\").replace("\n", r"\n")


class _One(Collector):
    def __init__(self, metric: Metric) -> None:
        self.metric = metric

    def collect(self) -> Iterable[Metric]:
        return [self.metric]


def _plain(metric: Metric) -> bool:
    """Whether every name of *metric* is a legacy one (written as it is)."""
    if not _METRIC_NAME.fullmatch(metric.name):
        return False
    labels = {name for sample in metric.samples for name in sample.labels}
    names = {sample.name for sample in metric.samples}
    return all(_LABEL_NAME.fullmatch(n) for n in labels) and all(
        _METRIC_NAME.fullmatch(n) for n in names
    )


def render(families: Iterable[Metric]) -> bytes:
    """The text exposition of *families*, as ``generate_latest`` writes it."""
    out: list[str] = []
    for metric in families:
        if not _plain(metric):
            out.append(generate_latest(_One(metric)).decode("utf-8"))
            continue
        mtype, suffix = _TYPES.get(metric.type, (metric.type, ""))
        name = metric.name + suffix
        text = _help(metric.documentation)
        out.append(f"# HELP {name} {text}\n# TYPE {name} {mtype}\n")
        later: dict[str, list[str]] = {}
        # the samples of a family share their label names: their order and the
        # template of their label set are worked out once per set of names
        shapes: dict[tuple[str, ...], tuple[list[str], str]] = {}
        for sample in metric.samples:
            labels = sample.labels
            if labels:
                names = tuple(labels)
                shape = shapes.get(names)
                if shape is None:
                    order = sorted(names)
                    shape = shapes[names] = (order, ",".join(f'{k}="{{}}"' for k in order))
                values = [labels[k] for k in shape[0]]
                if _SPECIAL.search("".join(values)):
                    values = [_escape_value(v) for v in values]
                pairs = shape[1].format(*values)
                line = f"{sample.name}{{{pairs}}} {_number(sample.value)}"
            else:
                line = f"{sample.name} {_number(sample.value)}"
            if sample.timestamp is not None:
                line += f" {int(float(sample.timestamp) * 1000):d}"
            line += "\n"
            for om in _OM_SUFFIXES:
                if sample.name == metric.name + om:
                    later.setdefault(om, []).append(line)
                    break
            else:
                out.append(line)
        for om, lines in sorted(later.items()):
            out.append(f"# HELP {metric.name}{om} {text}\n# TYPE {metric.name}{om} gauge\n")
            out.extend(lines)
    return "".join(out).encode("utf-8")
