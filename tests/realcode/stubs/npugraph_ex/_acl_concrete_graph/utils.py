"""Stub ``npugraph_ex._acl_concrete_graph.utils``: ``parse_config`` only (2.11, 2.14):
None stays None, a dict is used as is, a string is a Python literal."""

import ast


def parse_config(config_str):
    if config_str is None:
        return None
    if isinstance(config_str, dict):
        return config_str
    return ast.literal_eval(config_str)
