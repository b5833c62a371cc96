"""Graph files hold random draws: a constant generator state saved as its bit generator's
state, a stream's generator as a graph input."""

from __future__ import annotations

import json

import numpy as np
import pytest
import workbench.tensor as wt

import workbench as wb
from workbench import io as graph_io


@pytest.mark.parametrize("bits", ["PCG64", "MT19937", "Philox", "SFC64"])
def test_a_constant_generator_round_trips_with_its_state(bits):
    x = wt.dvector("x")
    rng = np.random.Generator(getattr(np.random, bits)(5))
    y = x + wb.random.normal(0.0, 1.0, size=(3,), rng=rng)
    document = json.loads(json.dumps(graph_io.to_document(y, inputs=[x])))
    loaded = graph_io.from_document(document)
    got = wb.function(loaded.inputs, loaded.outputs[0])(np.zeros(3))
    np.testing.assert_array_equal(got, wb.function([x], y)(np.zeros(3)))


def test_a_stream_generator_is_an_input_of_the_loaded_graph():
    x = wt.dvector("x")
    y = x * wb.random.RandomStream(0).uniform(size=(3,))
    loaded = graph_io.from_document(graph_io.to_document(y))
    assert [str(v.type) for v in loaded.inputs] == ["TensorType(float64, (?,))",
                                                    "RandomGeneratorType"]
    f = wb.function(loaded.inputs, loaded.outputs[0])
    np.testing.assert_array_equal(f(np.ones(3), np.random.default_rng(1)),
                                  np.random.default_rng(1).uniform(size=3))


def test_an_unknown_bit_generator_is_refused_with_its_place():
    x = wt.dvector("x")
    y = x + wb.random.normal(size=(3,), rng=np.random.default_rng(0))
    document = graph_io.to_document(y, inputs=[x])
    text = json.dumps(document).replace('"PCG64"', '"Evil"')
    with pytest.raises(graph_io.GraphFileError, match="unknown bit generator 'Evil'"):
        graph_io.from_document(json.loads(text))
