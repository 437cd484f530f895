"""Stub ``npugraph_ex.core``."""
