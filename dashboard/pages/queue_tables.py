"""The queue page's application and allocation table rows as HTML strings.

A queue page lists up to 200 applications and 100 allocations, each with links
that keep the scope; the template engine spent most of the page's time on those
two loops (~2,000 variable lookups, ~200 ``scoped_url`` tags), so the rows are
built here, every value escaped, as the template wrote them.
"""

from __future__ import annotations

from collections.abc import Iterable

from django.urls import reverse
from django.utils.html import escape
from django.utils.safestring import SafeString, mark_safe

from dashboard import models, services
from dashboard.pages.scope import Scope
from dashboard.pages.templatetags.pages import allocation_name, epoch, resource


def _scoped(url: str, scope: Scope, **params: object) -> str:
    query = scope.query(**params)
    return escape(f"{url}?{query}" if query else url)


def _user(details: object) -> str:
    user = details.get("user") if isinstance(details, dict) else None
    return f' <span class="muted small">({escape(user)})</span>' if user else ""


def application_rows_html(apps: Iterable[models.ApplicationSpan], scope: Scope) -> SafeString:
    """``<tr>`` rows of the applications table: id (linked) and user, queue, state, used,
    pending."""
    url = reverse("application")
    out = [
        f'\n      <tr><td><a class="mono" href="{_scoped(url, scope, app=a.app_id)}">'
        f"{escape(a.app_id)}</a>{_user(a.details)}</td>"
        f'<td class="mono">{escape(a.queue)}</td>'
        f"<td>{escape(a.state or '—')}</td><td>{escape(resource(a.used, 'nothing'))}</td>"
        f"<td>{escape(resource(a.pending, 'nothing'))}</td></tr>\n    "
        for a in apps
    ]
    return mark_safe("".join(out))  # every value above is escaped


def _flags(a: models.AllocationSpan) -> str:
    out = []
    if a.originator:
        out.append('<span class="pill">originator</span> ')
    if not a.allow_preemption:
        out.append('<span class="pill warning">opted out</span> ')
    if a.required_node:
        out.append('<span class="pill">required node</span> ')
    if a.preempted:
        out.append('<span class="pill failed">preempted</span> ')
    group = f" · {escape(a.task_group)}" if a.task_group else ""
    if a.placeholder:
        out.append(
            '<span class="pill warning" title="a gang-scheduling placeholder: it holds room '
            f'for the real pods of its task group">gang placeholder{group}</span>'
        )
    elif a.placeholder_used:
        out.append(
            '<span class="pill" title="a real pod that replaced a gang placeholder">'
            f"replaced a placeholder{group}</span>"
        )
    return "".join(out)


def allocation_rows_html(allocs: Iterable[models.AllocationSpan], scope: Scope) -> SafeString:
    """``<tr>`` rows of the allocations table: pod and key, app (linked) and its user,
    queue, node (linked), resources, priority, created, flags; a preempted allocation's
    row is ``excluded``."""
    app_url = reverse("application")
    node_url = reverse("nodes")
    allocs = list(allocs)
    names = services.allocation_names(scope.snapshot, (a.key for a in allocs))
    out = []
    for a in allocs:
        app = f'<a href="{_scoped(app_url, scope, app=a.app)}">{escape(a.app)}</a>' if a.app else ""
        user = names[a.key].user
        if user:
            app += f' <span class="muted small">({escape(user)})</span>'
        excluded = ' class="excluded"' if a.preempted else ""
        out.append(
            f"\n      <tr{excluded}>\n"
            f"        <td>{allocation_name(a.key, a.pod)}</td><td>{app}</td>"
            f'<td class="mono">{escape(a.queue)}</td>\n'
            f'        <td><a class="mono" href="{_scoped(node_url, scope, node=a.node)}">'
            f"{escape(a.node)}</a></td>\n"
            f"        <td>{escape(resource(a.resources, 'nothing'))}</td>"
            f'<td class="num">{escape(a.priority)}</td>\n'
            f'        <td class="nowrap">{escape(epoch(a.created))}</td>\n'
            f"        <td>{_flags(a)}</td>\n      </tr>\n    "
        )
    return mark_safe("".join(out))  # every value above is escaped
