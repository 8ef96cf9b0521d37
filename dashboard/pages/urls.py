"""URLs of the pages.  Scope and filters travel in the query string (deep links)."""

from __future__ import annotations

from django.urls import URLPattern, path

from dashboard.pages.views import (
    account,
    alert_routes,
    alerts,
    applications,
    changes,
    configs,
    nodes,
    overtime,
    plans,
    queues,
    run_wait,
    runs,
    whatif,
)

urlpatterns: list[URLPattern] = [
    path("", account.home, name="home"),
    path("login/", account.LoginView.as_view(), name="login"),
    path("logout/", account.LogoutView.as_view(), name="logout"),
    path("queues/", queues.tree, name="tree"),
    path("queues/bars/", queues.tree_bars, name="tree_bars"),
    path("queues/detail/", queues.queue_detail, name="queue"),
    path("queues/victims/", queues.victims, name="victims"),
    path("queues/over-time/", overtime.queue_over_time_page, name="queue_over_time"),
    path("nodes/", nodes.nodes, name="nodes"),
    path("applications/", applications.application, name="application"),
    path("whatif/", whatif.whatif, name="whatif"),
    path("whatif/answer/", whatif.whatif_answer, name="whatif_answer"),
    path("changes/", changes.changes, name="changes"),
    path("changes/new/", changes.change_create, name="change_create"),
    path("changes/<int:pk>/", changes.change_detail, name="change"),
    path("changes/<int:pk>/edit/", changes.change_edit, name="change_edit"),
    path("changes/<int:pk>/cancel/", changes.change_cancel, name="change_cancel"),
    path("history/", runs.history, name="history"),
    path("history.csv", runs.history_csv, name="history_csv"),
    path("runs/<int:pk>/", runs.run_detail, name="run"),
    path("runs/<int:pk>/wait/", run_wait.run_wait, name="run_wait"),
    path("alerts/", alerts.alerts, name="alerts"),
    path("alerts/<int:pk>/ack/", alerts.alert_ack, name="alert_ack"),
    path("alerts/ack-all/", alerts.alert_ack_all, name="alert_ack_all"),
    path("alerts/routes/", alert_routes.routes, name="alert_routes"),
    path("alerts/routes/<int:pk>/", alert_routes.route_detail, name="alert_route"),
    path("alerts/routes/<int:pk>/test/", alert_routes.route_test, name="alert_route_test"),
    path("alerts/deliveries/", alert_routes.deliveries, name="alert_deliveries"),
    path("configs/", configs.configs, name="configs"),
    path("configs/<int:pk>/", configs.config_detail, name="config"),
    path("configs/diff/", configs.config_diff, name="config_diff"),
    path("import/", configs.import_page, name="import"),
    path("plans/", plans.plan_page, name="plan"),
]
