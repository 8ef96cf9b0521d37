"""The long poll a page waiting for a run makes: answers as soon as the run is finished."""

from __future__ import annotations

from django.http import HttpRequest, JsonResponse
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET

from dashboard import services
from dashboard.pages.views.common import RUN_ACTIVE

#: The longest a request waits (s): under gunicorn's 30 s worker timeout, and short
#: enough that a page left open holds a web worker only briefly at a time.
MAX_WAIT_SECONDS = 20.0
DEFAULT_WAIT_SECONDS = 10.0


@never_cache
@require_GET
def run_wait(request: HttpRequest, pk: int) -> JsonResponse:
    """``{"run", "status", "finished"}`` once run *pk* is finished, or after ``?timeout=`` s.

    A page shows a pending run, calls this, and reloads its live regions when
    ``finished`` is true (or calls again when the wait timed out).
    """
    if not request.user.is_authenticated:
        return JsonResponse({"detail": "Sign in to follow a run."}, status=403)
    try:
        timeout = float(request.GET.get("timeout", DEFAULT_WAIT_SECONDS))
    except ValueError:
        return JsonResponse({"detail": "timeout: give a number of seconds."}, status=400)
    if not 0.0 <= timeout <= MAX_WAIT_SECONDS:  # also refuses nan
        return JsonResponse(
            {"detail": f"timeout: give 0 to {MAX_WAIT_SECONDS:.0f} seconds."}, status=400
        )
    status = services.wait_for_run(pk, timeout)
    if status is None:
        return JsonResponse({"detail": f"No run {pk}."}, status=404)
    return JsonResponse({"run": pk, "status": status, "finished": status not in RUN_ACTIVE})
