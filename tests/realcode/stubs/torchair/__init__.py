"""Stub package ``torchair`` (2.7.1): the launcher loads the wheel's own
``core/utils.py`` and ``_acl_concrete_graph/static_kernel.py`` into it by path."""
