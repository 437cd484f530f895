"""Stub ``npugraph_ex._acl_concrete_graph``."""
