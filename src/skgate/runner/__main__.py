"""``python -m skgate.runner``: the runner as a child (:func:`skgate.api.run`, a Ray arm).

It reads one :class:`~skgate.model.request.RunRequest` as JSON on stdin and ends with one
JSON line on stdout (the protocol of :mod:`skgate.model.protocol`).
"""

from __future__ import annotations

import sys

from skgate.runner.run import child_main

sys.exit(child_main(sys.argv[1:]))
