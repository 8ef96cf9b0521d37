"""Live cluster sources: follow running YuniKorn schedulers and hand configs back.

A separate Django app (label ``sources``) beside the platform's ``dashboard`` app:

- ``models``      ClusterSource (connection + poll state) and SourceSnapshot (which
                  stored snapshot a poll produced, with its state fingerprint)
- ``client``      the HTTP side: fetch YuniKorn's REST endpoints (timeout, bounded
                  exponential backoff, Bearer token) as ``{file name: bytes}``
- ``services``    polling (due check by conditional update, fingerprint, store only
                  on change through the platform's ``import_snapshot``), source state
                  and alerts, source validation
- ``compare``     what changed between two snapshots of one cluster
- ``retention``   thinning old polled snapshots by age, keeping referenced ones
- ``configpatch`` a fired quota change as queues.yaml, ConfigMap and ``kubectl patch``
- ``tasks``       Celery envelopes; ``api``/``urls`` the REST API; ``admin``
"""
