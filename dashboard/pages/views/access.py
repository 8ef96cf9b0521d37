"""Your permissions: what the queue ACLs of each partition's config in force grant the
signed-in user, and its API token (which carries the same permissions)."""

from __future__ import annotations

from django.contrib.auth import get_user_model
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_http_methods
from rest_framework.authtoken.models import Token

from dashboard import models
from dashboard.access.grants import access_for, granted_queues


@login_required
@require_http_methods(["GET", "HEAD", "POST"])
def access(request: HttpRequest) -> HttpResponse:
    """GET: the grants. POST: a new API token for this user (shown once; the old one
    stops working)."""
    new_token = None
    user = request.user
    if request.method == "POST" and isinstance(user, get_user_model()):
        Token.objects.filter(user=user).delete()
        new_token = Token.objects.create(user=user).key
    partitions = []
    for partition in models.Partition.objects.select_related("cluster").order_by(
        "cluster__name", "name"
    ):
        grant = access_for(request.user, partition)
        lines = []
        for item in granted_queues(grant, grant.tree.paths()):
            verb = "administer" if item.administers else "view"
            lines.append(
                f"You {verb} {item.queue} through {item.grant.kind} of {item.grant.queue}, "
                f"{grant.version_label()}."
            )
        partitions.append(
            {
                "partition": partition,
                "version": grant.version,
                "lines": lines,
                "staff": grant.staff,
                "reads_everything": grant.reads_everything,
                "problems": grant.tree.problems() if grant.staff else {},
            }
        )
    identity = access_for(request.user, None).identity
    return render(
        request,
        "dashboard/access.html",
        {
            "title": "Your permissions",
            "partitions": partitions,
            "identity": identity,
            "new_token": new_token,
        },
    )
