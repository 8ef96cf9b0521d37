"""Scope: which cluster and partition an import goes to or a request names
(``cluster_choice``), and a partition's latest snapshot and config (``latest``)."""
