"""Plotly figures for the pages: engine answers and snapshot data -> figure dicts.

This package owns how the dashboard *draws* queues, nodes, runs and plans.  It
takes plain values (the dataclasses below, engine answers as dicts) and returns
Plotly figure dicts (``{"data": [...], "layout": {...}}``) ready for
``json_script``; it never touches the ORM.  The dicts follow Plotly's schema
(checked by the tests with ``plotly.graph_objects``) without paying for that
validation on every request.

Two rules hold everywhere:

* "Not defined" is not 0.  An undefined max is unlimited and an undefined
  guaranteed is fully preemptable; hover text says "not defined" and bars draw
  a hatched ghost instead of a zero-length bar.
* Every piece of user text (queue paths, node ids, application names) goes
  through :func:`plot_text` before it reaches a label, tick or hover text,
  because Plotly renders a subset of HTML there.

Modules: ``values`` (inputs), ``style`` (colours, layout), ``queues``, ``nodes``, ``runs``,
``plans`` (a config rollout plan's tree by outcome and timeline of firings).
"""
