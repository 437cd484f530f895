"""``skgate demo``: the CANN simulator under the gate (``scenarios``). The only part of
skgate besides the tests that imports :mod:`skgate.sim`."""
