"""The API's own field types: resources, delays and any JSON value."""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from dashboard import models, services
from dashboard.access.redaction import row_redactions

RESOURCE_SCHEMA = {
    "type": "object",
    "additionalProperties": {"type": "integer", "minimum": 0},
    "nullable": True,
    "description": "resource type -> quantity (vcore in millicores, memory in bytes)",
}


@extend_schema_field(RESOURCE_SCHEMA)
class ResourceField(serializers.JSONField):
    """A ``{type: int}`` object (``null`` = not set)."""


def parse_delay(value: object) -> float | None:
    """A delay as seconds (number) or a Go duration string (``5m``); ``None`` passes.

    The range is the one rule shared with the forms and the config hand-back
    (``services.checked_delay``): finite, 0 or 1ns to Go's longest duration.
    """
    if value is None:
        return None
    if isinstance(value, bool):
        raise serializers.ValidationError("must be seconds or a duration such as 5m")
    if isinstance(value, int | float):
        seconds = float(value)
    elif isinstance(value, str):
        text = value.strip()
        try:
            seconds = float(text)
        except ValueError:
            try:
                seconds = services.delay_seconds(text)
            except services.ServiceError as exc:
                raise serializers.ValidationError(
                    f"{value!r} is not a duration (use seconds or e.g. 5m, 1h30m): {exc.message}"
                ) from None
    else:
        raise serializers.ValidationError("must be seconds or a duration such as 5m")
    try:
        return services.checked_delay(seconds)
    except services.ServiceError as exc:
        raise serializers.ValidationError(exc.message) from None


@extend_schema_field(
    {
        "oneOf": [
            {"type": "number", "minimum": 0, "maximum": services.MAX_DELAY_SECONDS},
            {"type": "string"},
        ],
        "nullable": True,
        "description": "seconds (0, or 1ns up to about 292 years) or a Go duration such as 5m",
    }
)
class DelayField(serializers.Field[float | None, object, object, Any]):
    """Seconds, or a Go duration string such as ``5m``."""

    def to_internal_value(self, data: object) -> float | None:
        return parse_delay(data)

    def to_representation(self, value: float | None) -> object:
        return value


@extend_schema_field({"description": "the old or new value (null when absent)", "nullable": True})
class AnyValueField(serializers.JSONField):
    """Any JSON value."""


def tenant_text(context: dict[str, Any], row: models.Alert | models.QuotaChange, text: str) -> str:
    """*text*, a free-text field of *row* (an alert, a change), as the request's user may
    read it: a tenant gets no name of a queue it cannot view, nor of its run's hidden
    victims."""
    rows = row_redactions(context)
    if rows is None:
        return text
    return rows.text(text, row.run if row.run_id else None, row.partition)


class PodNames:
    """``get_pod`` / ``get_namespace`` of a serializer of rows with ``key`` and ``pod``
    (an allocation, a pending ask): the pod's name and namespace (empty when unknown)."""

    def get_pod(self, obj: models.AllocationSpan | models.PendingAsk) -> str:
        return services.AllocationName(obj.key, obj.pod).pod_name

    def get_namespace(self, obj: models.AllocationSpan | models.PendingAsk) -> str:
        return services.AllocationName(obj.key, obj.pod).namespace
