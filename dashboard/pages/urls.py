"""URLs of the pages.  Scope and filters travel in the query string (deep links)."""

from __future__ import annotations

from django.urls import URLPattern, path

from dashboard.pages import plans, views

urlpatterns: list[URLPattern] = [
    path("", views.home, name="home"),
    path("login/", views.LoginView.as_view(), name="login"),
    path("logout/", views.LogoutView.as_view(), name="logout"),
    path("queues/", views.tree, name="tree"),
    path("queues/bars/", views.tree_bars, name="tree_bars"),
    path("queues/detail/", views.queue_detail, name="queue"),
    path("queues/victims/", views.victims, name="victims"),
    path("nodes/", views.nodes, name="nodes"),
    path("whatif/", views.whatif, name="whatif"),
    path("changes/", views.changes, name="changes"),
    path("changes/new/", views.change_create, name="change_create"),
    path("changes/<int:pk>/", views.change_detail, name="change"),
    path("changes/<int:pk>/edit/", views.change_edit, name="change_edit"),
    path("changes/<int:pk>/cancel/", views.change_cancel, name="change_cancel"),
    path("history/", views.history, name="history"),
    path("history.csv", views.history_csv, name="history_csv"),
    path("runs/<int:pk>/", views.run_detail, name="run"),
    path("alerts/", views.alerts, name="alerts"),
    path("alerts/<int:pk>/ack/", views.alert_ack, name="alert_ack"),
    path("alerts/ack-all/", views.alert_ack_all, name="alert_ack_all"),
    path("configs/", views.configs, name="configs"),
    path("configs/<int:pk>/", views.config_detail, name="config"),
    path("configs/diff/", views.config_diff, name="config_diff"),
    path("import/", views.import_page, name="import"),
    path("plans/", plans.plan_page, name="plan"),
]
