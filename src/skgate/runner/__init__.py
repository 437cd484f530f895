"""The runner side of one attempt: the process that owns the workload.

``run``: one attempt end to end (:func:`~skgate.runner.run.run_here`; ``python -m
skgate.runner`` is its child form, see ``__main__``); ``watch``: what the runner hears
while the command runs and the final files; ``attempt``: the files of one attempt;
``stage_tracker``: live tracking of op_compiler stages. Nothing here is imported by the
read side (report/, read/).
"""
