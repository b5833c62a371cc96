"""The suite's benchmark families, in the order run.py runs them, and the module of each.

Plain data, no imports: `workbench bench` reads it by path for its `--only` help and
check without loading anything of the suite.
"""

#: family -> the wb_bench module whose `run(ctx)` measures it
MODULES = {"fused": "wb_bench.fused", "overhead": "wb_bench.overhead", "rows": "wb_bench.rows",
           "mlp": "wb_bench.mlp", "compile": "wb_bench.compile_time",
           "linalg": "wb_bench.linalg", "indexing": "wb_bench.indexing"}
FAMILIES = tuple(MODULES)
