"""Quota changes and their timers: what a queue is configured with now
(``queue_settings``), scheduling and cancelling changes (``changes``), the delay
timers (``timers``) and every deadline by the partition's rule set
(``deadlines``), the scheduler's own clock for changes (``scheduler_clock``) and
the timers re-armed at a scheduler restart (``restarts``)."""
