"""Compiling C extension modules with the system compiler, and importing them."""

from __future__ import annotations

import math
import platform

import numpy as np
import pytest

from workbench.core.link.c import (
    CompileError,
    CompilerUnavailableError,
    compile_module,
    compiler_info,
    has_compiler,
    load_module,
    openmp_flags,
)

pytestmark = pytest.mark.skipif(not has_compiler(), reason="no C compiler on this machine")


def extension_source(name: str, functions: str, methods: str, init: str = "") -> str:
    """The C text of a module `name` with the given functions and method table entries."""
    return f"""
#define PY_SSIZE_T_CLEAN
#include <Python.h>
{functions}
static PyMethodDef {name}_methods[] = {{
{methods}
    {{NULL, NULL, 0, NULL}}
}};
static struct PyModuleDef {name}_def = {{PyModuleDef_HEAD_INIT, "{name}", NULL, -1,
                                        {name}_methods}};
PyMODINIT_FUNC PyInit_{name}(void) {{
    {init}
    return PyModule_Create(&{name}_def);
}}
"""


SCALAR_FUNCTIONS = """
static PyObject* add(PyObject* self, PyObject* args) {
    double a, b;
    if (!PyArg_ParseTuple(args, "dd", &a, &b)) return NULL;
    return PyFloat_FromDouble(a + b);
}
static PyObject* is_nan(PyObject* self, PyObject* args) {
    double x;
    if (!PyArg_ParseTuple(args, "d", &x)) return NULL;
    /* -ffast-math would fold this to 0: the default flags must keep IEEE semantics. */
    return PyBool_FromLong(x != x);
}
"""
SCALAR_METHODS = """
    {"add", add, METH_VARARGS, "a + b for two doubles"},
    {"is_nan", is_nan, METH_VARARGS, "x != x"},
"""

NUMPY_FUNCTIONS = """
#define NPY_NO_DEPRECATED_API NPY_1_7_API_VERSION
#include <numpy/arrayobject.h>
static PyObject* total(PyObject* self, PyObject* args) {
    PyObject* obj;
    if (!PyArg_ParseTuple(args, "O", &obj)) return NULL;
    PyArrayObject* arr = (PyArrayObject*)PyArray_FROM_OTF(obj, NPY_DOUBLE,
                                                          NPY_ARRAY_IN_ARRAY);
    if (arr == NULL) return NULL;
    const double* data = (const double*)PyArray_DATA(arr);
    npy_intp n = PyArray_SIZE(arr);
    double s = 0.0;
    for (npy_intp i = 0; i < n; i++) s += data[i];
    Py_DECREF(arr);
    return PyFloat_FromDouble(s);
}
"""
NUMPY_METHODS = '    {"total", total, METH_VARARGS, "sum of an array as float64"},'


def test_compiler_info_describes_the_compiler_and_keeps_ieee_math():
    info = compiler_info()
    assert info.path and info.version
    assert "-O3" in info.default_flags and "-fPIC" in info.default_flags
    assert not any("fast-math" in f or "finite-math" in f for f in info.default_flags)
    assert len(info.fingerprint) == 16
    assert openmp_flags() in ((), ("-fopenmp",))


def test_compile_and_call_a_scalar_extension(tmp_path):
    so = compile_module(extension_source("wbt_scalar", SCALAR_FUNCTIONS, SCALAR_METHODS),
                        "wbt_scalar", out_dir=tmp_path)
    assert so.exists() and (tmp_path / "wbt_scalar.c").exists()
    mod = load_module(so, "wbt_scalar")
    assert mod.add(1.5, 2.25) == 3.75
    assert math.isnan(mod.add(math.inf, -math.inf))
    assert mod.add(math.inf, 1.0) == math.inf
    assert mod.is_nan(math.nan) is True and mod.is_nan(1.0) is False


def test_numpy_c_api_is_usable(tmp_path):
    source = extension_source("wbt_numpy", NUMPY_FUNCTIONS, NUMPY_METHODS,
                              init="import_array();")
    mod = load_module(compile_module(source, "wbt_numpy", out_dir=tmp_path), "wbt_numpy")
    x = np.arange(12.0).reshape(3, 4)
    assert mod.total(x) == x.sum()
    assert mod.total(x[:, ::2].astype(np.float32)) == x[:, ::2].sum()  # strided, cast


def test_syntax_error_gives_compile_error_with_message_and_source_line(tmp_path):
    source = extension_source("wbt_broken", "static int oops(void) { return 1 }\n", "")
    with pytest.raises(CompileError) as info:
        compile_module(source, "wbt_broken", out_dir=tmp_path)
    err = info.value
    text = str(err)
    assert "error" in text and "wbt_broken" in text
    assert ">>" in text and "return 1 }" in text  # the blamed source line, numbered
    assert err.source_path is not None and err.source_path.exists()
    assert str(err.source_path) in text
    assert err.stderr and err.command


def test_missing_compiler_is_a_clear_error(monkeypatch, tmp_path):
    monkeypatch.setenv("CC", str(tmp_path / "no-such-cc"))
    assert not has_compiler()
    with pytest.raises(CompilerUnavailableError, match="CC"):
        compile_module(extension_source("wbt_never", "", ""), "wbt_never", out_dir=tmp_path)


def test_module_name_must_be_an_identifier(tmp_path):
    with pytest.raises(ValueError, match="C identifier"):
        compile_module("", "not-a-name", out_dir=tmp_path)


def test_loading_with_the_wrong_module_name_names_the_init_function(tmp_path):
    so = compile_module("int wbt_nothing(void) { return 0; }\n", "wbt_noinit", out_dir=tmp_path)
    with pytest.raises(ImportError, match="PyInit_wbt_noinit"):
        load_module(so, "wbt_noinit")


@pytest.mark.skipif(platform.machine().lower() not in ("x86_64", "amd64"),
                    reason="AVX-512 is an x86-64 instruction set")
def test_the_avx512_switch_is_a_default_flag_so_both_kinds_of_module_coexist(monkeypatch):
    from workbench.core.link.c.cache import ModuleCache
    from workbench.core.link.c.compiler import AVX512_ENV, targets_avx512

    source = extension_source("wbc_isa", "", "")
    keys, prints = {}, {}
    for choice in ("auto", "off"):
        monkeypatch.setenv(AVX512_ENV, choice)
        prints[choice] = compiler_info().fingerprint
        keys[choice] = ModuleCache("unused").key(("isa",), source, "wbc_isa", version=(1,))
    assert "-mno-avx512f" in compiler_info().default_flags and not targets_avx512()
    assert prints["auto"] != prints["off"] and keys["auto"] != keys["off"]


def test_a_bad_avx512_switch_names_the_variable_and_its_values(monkeypatch):
    from workbench.core.link.c.compiler import AVX512_ENV

    monkeypatch.setenv(AVX512_ENV, "avx2")
    with pytest.raises(ValueError, match=r"WORKBENCH_C_AVX512 must be one of auto, off; "
                                         r"got 'avx2'"):
        compiler_info()
