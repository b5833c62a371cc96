"""Text from Python in generated C: the one C string escaper.

Generated C never contains text it did not write itself, except through
`c_string_literal`: a literal that stands for exactly the UTF-8 bytes of the text,
whatever they are (quotes, backslashes, newlines, ``%``, trigraphs, invalid Unicode).
Names that come from users (an Op's label, a variable name) do not go into the source
at all: node functions receive them at run time (see codegen.node_labels) and print
them through ``%s``. A message's format string is always library text written with
its conversions; anything variable is an argument.

`include_guarded` is the one include guard for generated C text that several node
kinds share: a bundle (bundle.py) holding their kinds compiles it once.
"""

from __future__ import annotations

import functools
import hashlib
import re

__all__ = ["c_string_literal", "include_guarded", "label_bytes"]

# Every byte but printable ASCII less the three characters with a meaning inside a C
# literal: '"' ends it, '\\' escapes, '?' starts a trigraph ("??/" is a backslash).
_ESCAPED = re.compile(rb'[^\x20\x21\x23-\x3e\x40-\x5b\x5d-\x7e]')


def _octal(match: re.Match[bytes]) -> bytes:
    return b"\\%03o" % match[0][0]


@functools.lru_cache(maxsize=4096)
def c_string_literal(text: str) -> str:
    """`text` as a C string literal standing for exactly its UTF-8 bytes.

    Every byte outside printable ASCII (and ``"``, ``\\``, ``?``) becomes a three-digit
    octal escape, which cannot run into a following digit as a hex escape would. A
    NUL in the text is spelled ``\\0`` (two visible characters) so that it does not
    cut the string short. Used as data (a ``%s`` argument, PyErr_SetString's text) or,
    for library text only, as a format string. (Cached: code generation asks for the
    same library texts for every node.)
    """
    return '"' + _ESCAPED.sub(_octal, label_bytes(text)).decode("ascii") + '"'


def label_bytes(text: str) -> bytes:
    """`text` as the NUL-free UTF-8 bytes C receives (lone surrogates, which UTF-8
    cannot encode, and NULs are spelled as Python escapes)."""
    return text.replace("\0", "\\0").encode("utf-8", "backslashreplace")


def include_guarded(block: str, prefix: str = "WB_BLOCK_") -> str:
    """`block` under an include guard named `prefix` + the hash of its text: a
    translation unit holding it several times (a bundle of node kinds whose support
    code embeds it) compiles it once; different texts never share a guard."""
    guard = prefix + hashlib.sha256(block.encode()).hexdigest()[:16]
    return f"#ifndef {guard}\n#define {guard}\n{block}\n#endif"
