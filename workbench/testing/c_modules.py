"""Tiny C extension modules for testing the compiled-module cache."""

from __future__ import annotations


def constant_module(name: str, value: int) -> str:
    """The C source of a module `name` whose function `value()` returns `value`."""
    return f"""
#include <Python.h>
static PyObject* value(PyObject* self, PyObject* args) {{ return PyLong_FromLong({value}); }}
static PyMethodDef methods[] = {{{{"value", value, METH_NOARGS, NULL}}, {{NULL, NULL, 0, NULL}}}};
static struct PyModuleDef def = {{PyModuleDef_HEAD_INIT, "{name}", NULL, -1, methods}};
PyMODINIT_FUNC PyInit_{name}(void) {{ return PyModule_Create(&def); }}
"""
