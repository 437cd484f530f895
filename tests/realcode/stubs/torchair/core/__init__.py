"""Stub ``torchair.core``."""
