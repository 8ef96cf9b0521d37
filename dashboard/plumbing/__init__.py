"""Plumbing the services (and a few other parts) stand on, with no domain concept of its own.

``clock`` (the wall clock and epoch seconds <-> datetimes), ``errors`` (the
services' error types, which the API maps to 400 and 413), ``users`` (the user
stored on a row) and ``bulk`` (bulk inserts of plain value tuples).  Nothing here
imports the services.
"""
