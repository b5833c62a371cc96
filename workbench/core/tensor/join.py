"""(Being written: see the tensor-library issue.)"""

__all__: list[str] = []
