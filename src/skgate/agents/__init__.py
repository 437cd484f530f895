"""What AI agents reach skgate through: the Model Context Protocol server (``skgate mcp``).

Its tools are the same start/wait/stop/status/report calls as the CLI's, from
:mod:`skgate.api` and :mod:`skgate.report`.
"""
