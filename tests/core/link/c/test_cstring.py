"""The one C string escaper: whatever the text, the C literal stands for its bytes."""

from __future__ import annotations

import random

import pytest

from workbench.core.link.c import compile_module, has_compiler, load_module
from workbench.core.link.c.cstring import c_string_literal, label_bytes

pytestmark = pytest.mark.skipif(not has_compiler(), reason="no C compiler on this machine")

NASTY = ['");}system("touch PWNED");{printf("', "%s%s%s%n", "a\nb\r\tc", "??/", "??=",
         "\\", '"', "*/ /*", "\0x", "é ü 漢字 🙂", "\ud800 lone surrogate", "\x7f\x80\xff",
         "\\x41", "0\\1234", ""]


def texts(n: int, seed: int) -> list[str]:
    rng = random.Random(seed)
    out = list(NASTY)
    for k in range(n):
        raw = bytes(rng.randrange(256) for _ in range(rng.randrange(0, 30)))
        out.append(raw.decode("latin-1") if k % 2 else raw.decode("utf-8", "surrogateescape"))
    return out


def test_literals_compile_to_exactly_the_bytes_of_their_text(tmp_path):
    strings = texts(500, 3)
    literals = ",\n".join(c_string_literal(t) for t in strings)
    source = f"""
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <string.h>
static const char *const wb_texts[] = {{{literals}}};
static PyObject *all_texts(PyObject *self, PyObject *unused) {{
    const Py_ssize_t n = sizeof(wb_texts) / sizeof(wb_texts[0]);
    PyObject *out = PyTuple_New(n);
    for (Py_ssize_t k = 0; out && k < n; k++)
        PyTuple_SET_ITEM(out, k, PyBytes_FromString(wb_texts[k]));
    return out;
}}
static PyMethodDef methods[] = {{{{"all_texts", all_texts, METH_NOARGS, ""}},
                                {{NULL, NULL, 0, NULL}}}};
static struct PyModuleDef def = {{PyModuleDef_HEAD_INIT, "wbt_cstring", NULL, -1, methods}};
PyMODINIT_FUNC PyInit_wbt_cstring(void) {{ return PyModule_Create(&def); }}
"""
    module = load_module(compile_module(source, "wbt_cstring", out_dir=tmp_path), "wbt_cstring")
    assert list(module.all_texts()) == [label_bytes(t) for t in strings]


def test_a_literal_is_one_line_of_plain_ascii_without_trigraphs():
    for text in texts(200, 5):
        literal = c_string_literal(text)
        assert literal.isascii() and literal.isprintable()
        assert "?" not in literal
        assert literal[0] == literal[-1] == '"' and '"' not in literal[1:-1]


def test_label_bytes_keep_nul_and_surrogates_visible():
    assert label_bytes("a\0b") == b"a\\0b"
    assert label_bytes("x\ud800") == b"x\\ud800"
    assert label_bytes("é") == "é".encode()
