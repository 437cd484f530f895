"""Stub ``torch.fx``: static_kernel.py only asks ``isinstance(fx_func, GraphModule)``."""


class GraphModule:
    pass


class Interpreter:
    def __init__(self, module):
        self.module = module

    def run(self, *args, **kwargs):
        return self.module(*args, **kwargs)
