"""The generated kernel headers: each is current, and the layouts they restate agree with the Python
definitions they come from and with the hand-written kernels (which define none of their names)."""
from __future__ import annotations

import re
from dataclasses import fields
from typing import get_type_hints

import pytest

from cuzk.backend import base
from cuzk.backend.cuda import codegen, layout
from cuzk.r1cs.pce import PceMatrix


@pytest.mark.parametrize("header", sorted(codegen.HEADERS))
def test_generated_header_is_current(header: str) -> None:
    want = codegen.HEADERS[header]()
    assert (codegen.KERNELS / header).read_text() == want, "run: python -m cuzk.backend.cuda.codegen"


def test_matrix_arrays_are_the_template_matrix_fields() -> None:
    assert tuple(f.name for f in fields(PceMatrix)) == layout.MATRIX_ARRAYS
    assert tuple(get_type_hints(base.TemplateMatrix)) == layout.MATRIX_ARRAYS
    assert {name for name, _, _ in layout.WIDTHS} <= {*layout.MATRIX_ARRAYS, "wire_cols"}


def test_program_struct_is_one_word_per_field() -> None:
    per_matrix = len(layout.MATRIX_ARRAYS) + 1  # and widths
    n = len(layout.PROGRAM_MATRICES) * per_matrix + len(layout.PROGRAM_ARRAYS)
    assert layout.PROGRAM_STRUCT.itemsize == 8 * n and len(layout.PROGRAM_STRUCT.names) == n
    assert f"static_assert(sizeof(wp_program) == {8 * n}," in codegen.layout_header()


def test_step_record_fits_its_words() -> None:
    assert layout.REC_CIDS + 3 * layout.SHORT_TERMS <= layout.REC_WORDS and layout.REC_WORDS % 4 == 0


def test_hand_written_kernels_define_no_generated_name() -> None:
    generated = {}
    for rel, generate in codegen.HEADERS.items():
        generated.update(dict.fromkeys(re.findall(r"^(?:#define|struct) (\w+)", generate(), re.M), rel))
    for path in codegen.KERNELS.rglob("*.cu*"):
        rel = path.relative_to(codegen.KERNELS).as_posix()
        if rel in codegen.HEADERS:
            continue
        again = set(re.findall(r"^\s*(?:#define|struct) (\w+)", path.read_text(), re.M)) & set(generated)
        assert not again, f"kernels/{rel} defines {sorted(again)} of {sorted({generated[n] for n in again})}"
