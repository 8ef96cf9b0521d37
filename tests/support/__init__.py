"""What every test suite shares, registered once as a pytest plugin (``support.plugin``).

``plugin``     fixtures (users, API clients, Redis) and hooks (markers, settings, profiles)
``settings``   the test settings applied to every test (fast password hasher)
``profiles``   the Hypothesis profiles: ``ci`` (full counts) and ``dev`` (a fifth)
``processes``  the test database's URL for child processes, process control, free ports
``brokers``    each xdist worker's own Redis database; pointing Celery at a broker
``queries``    the SQL statements a block of code sends, and which of them write
"""
