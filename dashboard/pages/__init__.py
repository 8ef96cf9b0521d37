"""The dashboard's server-rendered pages: views, forms, template helpers.

Pages read the stored state through the ORM, draw it with :mod:`dashboard.charts`
and change anything only through :mod:`dashboard.services`, and only for staff.
"""
