"""Stub ``npugraph_ex._utils``."""
