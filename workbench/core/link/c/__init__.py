"""The C linker: the CLinkerType/COp contracts and their registry (interface.py), the
system C compiler (compiler.py), the on-disk cache of compiled extension modules
(cache.py); the C of one node from those contracts (codegen.py), many node kinds in
one translation unit (bundle.py), the C loop and call path (runtime.c), the linker
itself (linker.py) and the C of the library's Types and Ops (types.py, ops/).

The entry point for code generators: `default_cache().get_or_build(key_parts, source,
module_name, version=...)` returns the imported extension module.
"""

from workbench.core.link.c.cache import (
    CacheStats,
    CorruptCacheEntryWarning,
    ModuleCache,
    default_cache,
)
from workbench.core.link.c.compiler import (
    CompileError,
    CompilerInfo,
    CompilerUnavailableError,
    compile_module,
    compiler_info,
    cpu_features,
    extension_suffix,
    has_compiler,
    load_module,
    openmp_flags,
    python_include_dirs,
)
from workbench.core.link.c.interface import (
    CLinkerObject,
    CLinkerType,
    COp,
    COpAdapter,
    CTypeAdapter,
    c_op_of,
    c_optional,
    c_type_of,
    register_c_op,
    register_c_type,
    registered_c_ops,
    registered_c_types,
)

__all__ = [
    "CLinkerObject", "CLinkerType", "COp", "COpAdapter", "CTypeAdapter", "CacheStats",
    "CompileError", "CompilerInfo", "CompilerUnavailableError", "CorruptCacheEntryWarning",
    "ModuleCache", "c_op_of", "c_optional", "c_type_of", "compile_module", "compiler_info",
    "cpu_features", "default_cache", "extension_suffix", "has_compiler", "load_module",
    "openmp_flags", "python_include_dirs", "register_c_op", "register_c_type", "registered_c_ops",
    "registered_c_types",
]  # fmt: skip
