"""The pages, one module per page group: queues, nodes, runs, what-if, changes,
alerts, configs (and imports), account.

Every page needs a signed-in user; every write needs a staff user and is
checked here on the server (a viewer's POST gets 403 whatever the page shows).
Writes go through :mod:`dashboard.services`; reads use the ORM and
:mod:`dashboard.pages.data`; figures come from :mod:`dashboard.charts`.
"""
