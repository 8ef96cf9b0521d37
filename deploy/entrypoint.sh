#!/bin/sh
# The image's entry point: one image for every process of the dashboard.
#
#   web      gunicorn with deploy/gunicorn.conf.py (threaded workers)
#   worker   Celery worker for runs, what-ifs, imports and the quota sweep (default queue)
#   poller   Celery worker for cluster-source polls only (SOURCES_POLL_QUEUE, default polls)
#   beat     Celery beat: exactly one replica per installation
#   migrate  database migrations, then the default YuniKorn source (DASHBOARD_DEFAULT_SOURCE_URL,
#            else http://yunikorn-service.$YUNIKORN_NAMESPACE.svc:9080 when that is set)
#   prune    thin old polled snapshots once (manage.py prune_snapshots)
#   manage   any manage.py command, e.g. "manage createsuperuser"
#
# The Kubernetes manifests in deploy/kubernetes/ run exactly these commands (a test checks it).
set -eu
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python}
export SOURCES_POLL_QUEUE="${SOURCES_POLL_QUEUE:-polls}"
VAR=${DASHBOARD_VAR_DIR:-/tmp/dashboard}
mkdir -p "$VAR"

command=${1:-web}
[ $# -gt 0 ] && shift
case "$command" in
  web)
    exec "$PYTHON" -m gunicorn --config deploy/gunicorn.conf.py "$@"
    ;;
  worker)
    exec "$PYTHON" -m celery -A dashboard worker --loglevel="${LOG_LEVEL:-INFO}" \
      --queues=celery --concurrency="${CELERY_CONCURRENCY:-2}" --without-gossip "$@"
    ;;
  poller)
    exec "$PYTHON" -m celery -A dashboard worker --loglevel="${LOG_LEVEL:-INFO}" \
      --queues="$SOURCES_POLL_QUEUE" --concurrency="${CELERY_POLL_CONCURRENCY:-2}" \
      --without-gossip --hostname="poller@%h" "$@"
    ;;
  beat)
    exec "$PYTHON" -m celery -A dashboard beat --loglevel="${LOG_LEVEL:-INFO}" \
      --schedule="$VAR/celerybeat-schedule" "$@"
    ;;
  migrate)
    "$PYTHON" manage.py migrate --noinput "$@"
    url=${DASHBOARD_DEFAULT_SOURCE_URL:-}
    if [ -z "$url" ] && [ -n "${YUNIKORN_NAMESPACE:-}" ]; then
      url="http://yunikorn-service.${YUNIKORN_NAMESPACE}.svc:9080"
    fi
    if [ -n "$url" ]; then
      exec "$PYTHON" manage.py ensure_source --name "${DASHBOARD_DEFAULT_SOURCE_NAME:-yunikorn}" \
        --base-url "$url" --cluster "${DASHBOARD_DEFAULT_CLUSTER:-default}"
    fi
    ;;
  prune)
    exec "$PYTHON" manage.py prune_snapshots "$@"
    ;;
  manage)
    exec "$PYTHON" manage.py "$@"
    ;;
  *)
    echo "unknown command: $command (web, worker, poller, beat, migrate, prune, manage)" >&2
    exit 64
    ;;
esac
