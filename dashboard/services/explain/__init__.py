"""Explanations for administrators, read from a stored snapshot: why an ask's
what-if answered as it did (``ask``), queue preemptable values and victim reasons
(``preemption``), and one application with its allocations and asks
(``application``)."""
