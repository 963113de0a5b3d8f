"""Ledger backends: per-domain store protocols, rows, memory, SQLite, PostgreSQL.

``_store`` imports only ``_rules``: it knows rows, not runs or facades.
"""
