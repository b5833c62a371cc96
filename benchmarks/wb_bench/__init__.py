"""The benchmark suite behind `python benchmarks/run.py` and `workbench bench`.

One module per benchmark family; each has `run(ctx) -> list[Row]`. Every time is a
median of repeats measured in this process (compile times in fresh subprocesses),
and each row's ratio compares a reference with workbench's own row of the same case.
"""
