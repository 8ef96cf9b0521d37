"""Work lost to preemption: the completed applications' resource history, stored.

The model lives here (:mod:`dashboard.worklost.models`, imported by ``dashboard.models``);
reading it is :mod:`dashboard.services.work_lost`.
"""
