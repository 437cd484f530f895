"""Stub package ``npugraph_ex`` (2.9 and later): the launcher loads the wheel's own
``core/utils.py`` and ``_acl_concrete_graph/static_kernel.py`` into it by path."""
