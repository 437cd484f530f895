"""The read side: what an attempt is now, from its archive and live probing (read-only).

Every command that shows an attempt (status, wait, report, MCP) reads through here; it
never sends a signal (C4).
"""
