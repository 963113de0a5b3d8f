"""Pure data and decisions: no I/O, no clock reads, stdlib only.

Nothing here imports anything of actonce outside ``_rules``.
"""
