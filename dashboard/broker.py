"""The embedded default broker: kombu's SQLAlchemy transport, polled often.

kombu's virtual transports sleep ``polling_interval`` seconds (1 s by default)
after every poll that found no message, so on the embedded default a task waited
half a second on average, up to a whole one, before a worker even saw it.  The
SQLAlchemy transport cannot take the interval as a transport option (it hands
every option to ``create_engine``), so this subclass carries it, read from
``DASHBOARD_BROKER_POLL_SECONDS``; :mod:`dashboard.celery` registers it under
kombu's ``sqla`` alias, so ``sqla+sqlite:///...`` URLs keep working unchanged.
"""

from __future__ import annotations

from django.conf import settings
from kombu import Connection
from kombu.transport import sqlalchemy


class Transport(sqlalchemy.Transport):
    """kombu's SQLAlchemy transport with the dashboard's polling interval."""

    def __init__(self, client: Connection, **kwargs: object) -> None:
        super().__init__(client, **kwargs)
        self.polling_interval = float(settings.DASHBOARD_BROKER_POLL_SECONDS)
