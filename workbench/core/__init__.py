"""The engine: dtypes, the graph core, scalar and tensor Ops, autodiff, rewrites, linkers."""
