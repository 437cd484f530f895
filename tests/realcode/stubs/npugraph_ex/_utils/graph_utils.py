"""Stub ``npugraph_ex._utils.graph_utils``: ``debug_time`` only times a call at DEBUG
level in the real module; here it calls through (timing changes no behaviour)."""

import functools


def debug_time(func=None, *, phase_name=None):
    def wrap(f):
        @functools.wraps(f)
        def inner(*args, **kwargs):
            return f(*args, **kwargs)

        return inner

    return wrap(func) if func is not None else wrap
