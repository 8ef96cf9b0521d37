"""Queue configs: versions imported, diffed and exported (``versions``), the
scheduler's own config stored as the version in force (``from_scheduler``), big
imports run by a worker (``import_jobs``), and a proposed config's rollout plan
(``plans``)."""
