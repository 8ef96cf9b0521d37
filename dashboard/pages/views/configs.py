"""Config versions, their diffs, and the import page (configs and snapshots)."""

from __future__ import annotations

import difflib
from urllib.parse import urlencode

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.db.models import Count, QuerySet
from django.http import (
    HttpRequest,
    HttpResponse,
    JsonResponse,
)
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.http import (
    require_GET,
    require_http_methods,
)

from dashboard import models, services
from dashboard.pages import forms
from dashboard.pages import scope as scope_mod
from dashboard.pages.views.changes import change_message
from dashboard.pages.views.common import int_param, staff_required


@login_required
@require_GET
def configs(request: HttpRequest) -> HttpResponse:
    """Every imported config version of the partition, with who and when."""
    scope = scope_mod.resolve(request)
    versions = models.ConfigVersion.objects.select_related("imported_by", "partition")
    if scope.partition is not None:
        versions = versions.filter(partition=scope.partition)
    versions = versions.annotate(
        change_count=Count("changes", distinct=True),
        run_count=Count("changes__run", distinct=True),
    ).order_by("-number", "-id")
    return render(
        request, "dashboard/configs.html", {"title": "Config versions", "versions": versions}
    )


@login_required
@require_GET
def config_detail(request: HttpRequest, pk: int) -> HttpResponse:
    """One config version: its text, warnings, the changes it made and the runs they led to."""
    version = get_object_or_404(
        models.ConfigVersion.objects.select_related("partition__cluster", "imported_by"), pk=pk
    )
    previous = (
        models.ConfigVersion.objects.filter(
            partition=version.partition, number__lt=version.number, planned=False
        )
        .order_by("-number")
        .first()
    )
    scope_mod.pin(request, version.partition)
    return render(
        request,
        "dashboard/config.html",
        {
            "title": f"Config v{version.number}",
            "version": version,
            "previous": previous,
            "changes": import_changes(version),
            "later_changes": later_changes(version),
            "queue_changes": _config_changes(version, previous),
            "read_from": read_from_snapshot(version),
        },
    )


def read_from_snapshot(version: models.ConfigVersion) -> models.ClusterSnapshot | None:
    """The snapshot a config read from a state dump or a REST folder came with (stored
    at the snapshot's capture time): its import says who imported it and when."""
    if version.planned:
        return None
    return (
        version.partition.snapshots.filter(captured_at=version.imported_at)
        .select_related("imported_by")
        .defer("scenario")
        .order_by("id")
        .first()
    )


@login_required
@require_GET
def config_diff(request: HttpRequest) -> HttpResponse:
    """A readable diff between any two config versions: queue changes and the text."""
    a = get_object_or_404(models.ConfigVersion, pk=int_param(request.GET.get("a")) or 0)
    b = get_object_or_404(models.ConfigVersion, pk=int_param(request.GET.get("b")) or 0)
    scope_mod.pin(request, b.partition)
    lines = _text_diff(a.text, b.text)
    return render(
        request,
        "dashboard/config_diff.html",
        {
            "title": f"Config v{a.number} → v{b.number}",
            "a": a,
            "b": b,
            "lines": lines,
            "queue_changes": _config_changes(b, a),
            "changes": import_changes(b),
            "later_changes": later_changes(b),
            "versions": models.ConfigVersion.objects.filter(partition=b.partition).order_by(
                "-number"
            ),
        },
    )


def import_changes(version: models.ConfigVersion) -> QuerySet[models.QuotaChange]:
    """The changes the import of *version* learned from the cluster (timed by its clock)."""
    return version.changes.filter(learned=True).select_related("run").order_by("queue_path", "id")


def later_changes(version: models.ConfigVersion) -> QuerySet[models.QuotaChange]:
    """Changes saved in the pages or the API while *version* was the config in force."""
    return (
        version.changes.exclude(learned=True)
        .select_related("run", "created_by")
        .order_by("changed_at", "id")
    )


def _text_diff(old: str, new: str) -> list[dict[str, object]]:
    """A unified diff (3 lines of context) as rows for the template."""
    out: list[dict[str, object]] = []
    matcher = difflib.SequenceMatcher(a=old.splitlines(), b=new.splitlines(), autojunk=False)
    a_lines, b_lines = old.splitlines(), new.splitlines()
    for group in matcher.get_grouped_opcodes(3):
        first, last = group[0], group[-1]
        old_span = f"-{first[1] + 1},{last[2] - first[1]}"
        new_span = f"+{first[3] + 1},{last[4] - first[3]}"
        out.append({"kind": "hunk", "text": f"@@ {old_span} {new_span} @@"})
        for tag, i1, i2, j1, j2 in group:
            if tag == "equal":
                for k in range(i2 - i1):
                    out.append(
                        {"kind": "same", "a": i1 + k + 1, "b": j1 + k + 1, "text": a_lines[i1 + k]}
                    )
                continue
            for k in range(i1, i2):
                out.append({"kind": "del", "a": k + 1, "b": "", "text": a_lines[k]})
            for k in range(j1, j2):
                out.append({"kind": "add", "a": "", "b": k + 1, "text": b_lines[k]})
    return out


def _config_changes(
    version: models.ConfigVersion, other: models.ConfigVersion | None
) -> list[dict[str, object]]:
    """The importers' semantic diff (queues added/removed, limits, delays, properties)."""
    if other is None or other.pk == version.pk:
        return []
    try:
        return services.config_diff(version, other)
    except services.ServiceError as exc:
        return [{"queue": "", "field": "error", "text": exc.message, "is_decrease": False}]


@staff_required
@require_http_methods(["GET", "HEAD", "POST"])
def import_page(request: HttpRequest) -> HttpResponse:
    """Upload a queue config or a snapshot (scenario JSON, REST files, state dump)."""
    # a link from a page of one cluster names it: the form starts with that cluster
    named = request.GET.get("cluster", "")
    form = forms.ImportForm(
        request.POST or None,
        request.FILES or None,
        initial={"cluster": named} if named else None,
    )
    status = 200
    if request.method == "POST":
        if form.is_valid():
            try:
                target = _import(request, form)
            except services.ServiceError as exc:
                form.add_error(None, f"{exc.field}: {exc.message}" if exc.field else exc.message)
                too_large = isinstance(exc, services.UploadTooLarge | services.OverLimit)
                status = 413 if too_large else 400
            else:
                if request.headers.get("x-requested-with") == "XMLHttpRequest":
                    # the upload script navigates itself, so the flash messages survive
                    return JsonResponse({"location": target})
                return redirect(target)
        else:
            status = 400
    recent = (
        models.ClusterSnapshot.objects.select_related("partition__cluster", "imported_by")
        .defer("scenario")
        .order_by("-imported_at", "-id")[:10]
    )
    recent_configs = models.ConfigVersion.objects.select_related(
        "partition__cluster", "imported_by"
    ).order_by("-imported_at", "-id")[:10]
    jobs = models.ImportJob.objects.defer("data").order_by("-created_at", "-id")[:10]
    return render(
        request,
        "dashboard/import.html",
        {
            "title": "Import",
            "form": form,
            "recent": recent,
            "recent_configs": recent_configs,
            "jobs": jobs,
        },
        status=status,
    )


def _import(request: HttpRequest, form: forms.ImportForm) -> str:
    """Run the chosen importer; returns the URL that shows the result."""
    files = request.FILES.getlist("upload")
    for upload in files:  # refuse an oversized file before reading it into memory
        services.check_upload_size(upload.name or "upload", upload.size or 0)
    partition = form.cleaned_data.get("partition") or None
    cluster = form.cleaned_data.get("cluster") or None
    if form.cleaned_data["kind"] == "config":
        upload = files[0]
        if (upload.size or 0) > services.async_import_bytes():
            job = services.queue_config_import(
                upload.read(),
                filename=upload.name or "queues.yaml",
                user=request.user,
                partition=partition,
                cluster=cluster,
            )
            messages.info(
                request,
                f"{upload.name} is large: a worker imports it as import job {job.pk}; its "
                "progress is listed below.",
            )
            return reverse("import")
        result = services.import_config(
            upload.read(),
            filename=upload.name or "queues.yaml",
            user=request.user,
            partition=partition,
            cluster=cluster,
        )
        for version in result.versions:
            where = f"{version.partition.cluster.name}/{version.partition.name}"
            if version.pk in result.unchanged:
                messages.info(
                    request,
                    f"{upload.name} is config v{version.number} of {where}, the version in "
                    "force: nothing stored, nothing changed.",
                )
                continue
            messages.success(request, f"Imported config v{version.number} of {where}.")
            for warning in version.warnings or []:
                messages.warning(request, str(warning))
        for change in result.changes:
            messages.info(request, change_message(change))
        return reverse("config", args=[result.versions[0].pk])
    answers = {upload.name or f"file{i}": upload.read() for i, upload in enumerate(files)}
    captured = form.cleaned_data.get("captured_at")
    # the command line's rule: the same files with the same options store nothing
    digest = services.answers_digest_of(
        answers, partition, cluster, None if captured is None else captured.isoformat()
    )
    same = services.snapshot_of_answers(digest)
    if same is not None:
        where = f"{same.partition.cluster.name}/{same.partition.name}"
        messages.info(
            request,
            f"These files are those snapshot {same.pk} of {where} was imported from: "
            "nothing stored.",
        )
        snapshot = same
    else:
        snapshot = services.import_snapshot(
            answers,
            user=request.user,
            partition=partition,
            cluster=cluster,
            captured_at=captured,
            answers_digest=digest,
        )
        where = f"{snapshot.partition.cluster.name}/{snapshot.partition.name}"
        messages.success(request, f"Imported snapshot {snapshot.pk} of {where}.")
        for warning in snapshot.warnings or []:
            messages.warning(request, str(warning))
    query = urlencode(
        {
            "cluster": snapshot.partition.cluster.name,
            "partition": snapshot.partition.name,
            "snapshot": snapshot.pk,
        }
    )
    return f"{reverse('tree')}?{query}"
