"""The API's per-process answer caches.

A snapshot's row pages (serialized and rendered: a stored snapshot never changes) and
the list pages of runs, quota changes and alerts (while the tables they read are
unchanged), sent as the JSON body kept.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, cast

from django.db.models import QuerySet
from rest_framework.renderers import JSONRenderer
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.serializers import BaseSerializer
from rest_framework.viewsets import GenericViewSet

from dashboard import dataversion, models
from dashboard.access import scoping
from dashboard.pages.data import snapshot_key
from dashboard.pages.memo import Memo


class RenderedJSON(Response):
    """A response whose JSON body was rendered before (and kept): sent as it is, with the
    content type DRF's own JSON response names."""

    def __init__(self, body: bytes, media_type: str) -> None:
        super().__init__(None)
        self.content = body  # rendered: render() leaves it alone
        self["Content-Type"] = media_type


#: Pages of a snapshot's row lists (queues, nodes, allocations, asks, applications),
#: serialized, kept per process: a stored snapshot never changes
#: (see :func:`snapshot_rows_page`).
_SNAPSHOT_ROWS_MEMO: Memo[Any] = Memo(256)
#: The same pages rendered as JSON (the bytes sent).
_SNAPSHOT_BODY_MEMO: Memo[bytes] = Memo(256)


def snapshot_rows_page(
    view: GenericViewSet[models.ClusterSnapshot],
    rows: Callable[[models.ClusterSnapshot], QuerySet[Any]],
    serializer: type[BaseSerializer[Any]],
) -> Response:
    """One page of the snapshot's *rows*, serialized once per process.

    A stored snapshot's rows never change, so the answer's data is kept per process,
    keyed by the snapshot (id, checksum, import time), the list read, and the
    request's whole absolute URL (page, page size, ``?queue=``, and the host and
    scheme the ``next`` / ``previous`` links are built from). Errors (a page out of
    range, a bad page size) are raised by the build and never kept.
    """
    snapshot = view.get_object()

    def build() -> Any:
        qs = rows(snapshot)
        page = view.paginate_queryset(qs)
        context = {"snapshot": snapshot}  # where a row's serializer reads more of it
        if page is not None:
            return view.get_paginated_response(
                serializer(page, many=True, context=context).data
            ).data
        return serializer(qs, many=True, context=context).data

    key = (view.action, snapshot_key(snapshot), view.request.build_absolute_uri())
    renderer = getattr(view.request, "accepted_renderer", None)
    if type(renderer) is not JSONRenderer:  # the browsable API: user's forms, CSRF
        return Response(_SNAPSHOT_ROWS_MEMO.get(key, build))
    media_type = view.request.accepted_media_type

    def render() -> bytes:
        data = _SNAPSHOT_ROWS_MEMO.get(key, build)
        context = view.get_renderer_context()
        return cast(bytes, renderer.render(data, media_type, context))

    # JSON (what clients ask for): the rendered body itself (rendering a page of rows
    # is most of what an answer costs)
    body = _SNAPSHOT_BODY_MEMO.get((key, media_type), render)
    return RenderedJSON(body, media_type)


#: Rendered list pages of runs, quota changes and alerts, per data versions (see below).
_LIST_BODY_MEMO: Memo[bytes] = Memo(256)


class VersionedListMixin:
    """``list`` answered from a per-process copy of its JSON body while the tables it
    reads are unchanged: keyed by their data versions (:mod:`dashboard.dataversion`,
    changed by every committed write), the request's absolute URL (filters, ordering,
    page, and the host of the ``next`` links), the media type and the reader's scope
    (:func:`dashboard.access.scoping.read_scope_key`: users the queue ACLs restrict read
    only their queues' rows; everybody else reads the same lists). Other renderers (the
    browsable API) are not kept."""

    #: Every table the list's body is read from.
    list_tables: tuple[str, ...] = ()

    def list(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        build = super().list  # type: ignore[misc]
        renderer = request.accepted_renderer
        if type(renderer) is not JSONRenderer:
            return cast(Response, build(request, *args, **kwargs))
        media_type = request.accepted_media_type

        def render() -> bytes:
            response = build(request, *args, **kwargs)
            context = self.get_renderer_context()  # type: ignore[attr-defined]
            return cast(bytes, renderer.render(response.data, media_type, context))

        # a user the queue ACLs restrict reads its own rows: its scope is in the key
        key = (
            type(self).__name__,
            request.build_absolute_uri(),
            media_type,
            scoping.read_scope_key(request.user),
        )
        body = dataversion.cached(_LIST_BODY_MEMO, self.list_tables, key, render)
        return RenderedJSON(body, media_type)
