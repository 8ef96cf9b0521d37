#!/bin/sh
# The image's entry point: one image for every process of the dashboard.
#
#   web      gunicorn with deploy/gunicorn.conf.py (threaded workers)
#   worker   Celery worker for runs, what-ifs, imports and the quota sweep (default queue)
#   poller   Celery worker for cluster-source polls only (SOURCES_POLL_QUEUE, default polls)
#   deliveries  Celery worker for alert deliveries only (ALERT_DELIVERY_QUEUE, default
#            deliveries): a receiver that never answers holds only these processes
#   beat     Celery beat: exactly one replica per installation
#   migrate  database migrations, then the default YuniKorn source (DASHBOARD_DEFAULT_SOURCE_URL,
#            else http://yunikorn-service.$YUNIKORN_NAMESPACE.svc:9080 when that is set),
#            one process at a time (the web pods' init container runs it)
#   prune    thin old polled snapshots once (manage.py prune_snapshots)
#   manage   any manage.py command, e.g. "manage createsuperuser"
#   alive NAME [MAX_AGE]  the liveness probe of worker, poller, deliveries or beat: exits 0
#            when that process touched its heartbeat file ($DASHBOARD_VAR_DIR/NAME.alive)
#            within MAX_AGE seconds (default DASHBOARD_HEARTBEAT_MAX_AGE, 60); see
#            dashboard/heartbeat.py
#
# The Kubernetes manifests in deploy/kubernetes/ run exactly these commands (a test checks it).
set -eu
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python}
export SOURCES_POLL_QUEUE="${SOURCES_POLL_QUEUE:-polls}"
export ALERT_DELIVERY_QUEUE="${ALERT_DELIVERY_QUEUE:-deliveries}"
VAR=${DASHBOARD_VAR_DIR:-/tmp/dashboard}
mkdir -p "$VAR"

command=${1:-web}
[ $# -gt 0 ] && shift
case "$command" in
  worker|poller|deliveries|beat) export DASHBOARD_HEARTBEAT_FILE="$VAR/$command.alive" ;;
esac
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
      --queues="$SOURCES_POLL_QUEUE" --concurrency="${CELERY_POLL_CONCURRENCY:-1}" \
      --without-gossip --hostname="poller@%h" "$@"
    ;;
  deliveries)
    exec "$PYTHON" -m celery -A dashboard worker --loglevel="${LOG_LEVEL:-INFO}" \
      --queues="$ALERT_DELIVERY_QUEUE" --concurrency="${CELERY_DELIVERY_CONCURRENCY:-2}" \
      --without-gossip --hostname="deliveries@%h" "$@"
    ;;
  beat)
    exec "$PYTHON" -m celery -A dashboard beat --loglevel="${LOG_LEVEL:-INFO}" \
      --schedule="$VAR/celerybeat-schedule" "$@"
    ;;
  migrate)
    url=${DASHBOARD_DEFAULT_SOURCE_URL:-}
    if [ -z "$url" ] && [ -n "${YUNIKORN_NAMESPACE:-}" ]; then
      url="http://yunikorn-service.${YUNIKORN_NAMESPACE}.svc:9080"
    fi
    # one migration at a time however many pods start (a PostgreSQL advisory lock)
    exec "$PYTHON" manage.py migrate_locked --source-url "$url" \
      --source-name "${DASHBOARD_DEFAULT_SOURCE_NAME:-yunikorn}" \
      --source-cluster "${DASHBOARD_DEFAULT_CLUSTER:-default}" "$@"
    ;;
  prune)
    exec "$PYTHON" manage.py prune_snapshots "$@"
    ;;
  manage)
    exec "$PYTHON" manage.py "$@"
    ;;
  alive)
    [ $# -ge 1 ] || { echo "usage: alive worker|poller|deliveries|beat [MAX_AGE]" >&2; exit 64; }
    exec "$PYTHON" -I dashboard/heartbeat.py "$VAR/$1.alive" "${2:-${DASHBOARD_HEARTBEAT_MAX_AGE:-60}}"
    ;;
  *)
    echo "unknown command: $command (web, worker, poller, deliveries, beat, migrate, prune, manage, alive)" >&2
    exit 64
    ;;
esac
