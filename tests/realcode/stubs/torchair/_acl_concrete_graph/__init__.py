"""Stub ``torchair._acl_concrete_graph``."""
