"""Filters, ordering and paging shared by the API's views: bad values are a 400 naming
the parameter, never ignored and never a 500."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime, timedelta
from typing import Any

import django_filters
from django import forms
from django.db.models import QuerySet
from django_filters.fields import IsoDateTimeField
from rest_framework import filters, pagination
from rest_framework.exceptions import ValidationError
from rest_framework.request import Request
from rest_framework.views import APIView

from dashboard import models

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


class ClusterFilter(django_filters.CharFilter):
    """``?cluster=NAME``: the rows of that cluster; an unknown cluster is a 400 naming the
    clusters there are (an empty list would hide a misspelt name)."""

    def filter(self, qs: Any, value: Any) -> Any:
        if value in (None, ""):
            return qs
        if not models.Cluster.objects.filter(name=value).exists():
            known = ", ".join(models.Cluster.objects.values_list("name", flat=True))
            raise ValidationError(
                {
                    "cluster": [
                        f"there is no cluster {str(value)[:60]!r} (clusters: {known or 'none yet'})"
                    ]
                }
            )
        return super().filter(qs, value)


class OrderingFilter(filters.OrderingFilter):
    """DRF's ordering filter, answering 400 for an unknown field instead of ignoring it."""

    def remove_invalid_fields(
        self, queryset: QuerySet[Any], fields: Iterable[str], view: APIView, request: Request
    ) -> list[str]:
        fields = list(fields)
        valid = super().remove_invalid_fields(queryset, fields, view, request)
        unknown = [term for term in fields if term not in valid]
        if unknown:
            context = {"request": request}
            allowed = sorted(name for name, _ in self.get_valid_fields(queryset, view, context))
            raise ValidationError(
                {
                    self.ordering_param: [
                        f"unknown ordering field {', '.join(map(repr, unknown))}; "
                        f"one of {', '.join(allowed)} (prefix - for descending)"
                    ]
                }
            )
        return valid


def _positive_int(request: Request, name: str, default: int, maximum: int | None) -> int:
    text = request.query_params.get(name)
    if text is None or text == "":
        return default
    try:
        value = int(text, 10)
    except ValueError:
        raise ValidationError({name: [f"{text!r} is not a whole number"]}) from None
    if value < 1:
        raise ValidationError({name: [f"must be at least 1, not {value}"]})
    if maximum is not None and value > maximum:
        raise ValidationError({name: [f"must be at most {maximum}, not {value}"]})
    return value


class Pagination(pagination.PageNumberPagination):
    """Page-number paging; ``page`` and ``page_size`` that are not whole numbers in range
    are a 400 naming the parameter (DRF ignores a bad ``page_size`` and answers 404 for
    a bad ``page``).  A page past the last one stays a 404, as in DRF."""

    page_size = 50
    page_size_query_param = "page_size"
    max_page_size = 500

    def get_schema_operation_parameters(self, view: APIView) -> list[dict[str, Any]]:
        """DRF's paging parameters with the bounds :meth:`get_page_size` enforces."""
        params = super().get_schema_operation_parameters(view)
        for param in params:
            param["schema"]["minimum"] = 1
            if param["name"] == self.page_size_query_param:
                param["schema"]["maximum"] = self.max_page_size
        return params

    def get_page_size(self, request: Request) -> int:
        return _positive_int(request, "page_size", self.page_size, self.max_page_size)

    def paginate_queryset(
        self, queryset: Any, request: Request, view: APIView | None = None
    ) -> list[Any] | None:
        _positive_int(request, self.page_query_param, 1, None)
        return super().paginate_queryset(queryset, request, view)
