"""Filter fields shared by the API's filter sets."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

import django_filters
from django import forms
from django_filters.fields import IsoDateTimeField

#: PostgreSQL stores UTC offsets up to 15:59 either way; a wider one is an error there.
MAX_UTC_OFFSET = timedelta(hours=15, minutes=59)


def _offset_text(offset: timedelta) -> str:
    sign = "-" if offset < timedelta(0) else "+"
    minutes = int(abs(offset).total_seconds()) // 60
    return f"{sign}{minutes // 60:02d}:{minutes % 60:02d}"


class BoundedIsoDateTimeField(IsoDateTimeField):
    """An ISO 8601 date-time whose UTC offset is within ±15:59 (what every database takes)."""

    def to_python(self, value: Any) -> datetime | None:
        result: datetime | None = super().to_python(value)
        offset = result.utcoffset() if result is not None else None
        if offset is not None and abs(offset) > MAX_UTC_OFFSET:
            raise forms.ValidationError(
                f"UTC offset {_offset_text(offset)} is out of range: an offset must be "
                "between -15:59 and +15:59 (e.g. 2026-01-01T00:00:00+02:00 or ...Z)",
                code="offset",
            )
        return result


class IsoDateTimeFilter(django_filters.IsoDateTimeFilter):
    """``django_filters.IsoDateTimeFilter`` answering 400 for an offset beyond ±15:59."""

    field_class = BoundedIsoDateTimeField
