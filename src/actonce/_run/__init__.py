"""The protocols as generators of typed operations, and the drivers that run them.

``_run`` imports ``_rules`` and the store interfaces of ``_store``; it never
imports a facade.
"""
