"""Preemption runs: requests checked and sent to a worker (``requests``), the
engine's answer (``compute``), claimed and finished by one worker
(``execution``), a page's wait for the answer (``wait``), the history as CSV
(``csv_export``), and the scheduler's own preemptions stored as observed runs
(``observed``)."""
