"""Cluster snapshots: import and store one in one transaction (``store``), the
nodes, applications and allocations stored once per span of snapshots (``spans``),
the scheduler's own figures and facts for the rows (``facts``), and recognising
answers a snapshot was already imported from (``already_imported``)."""
