"""Models given as bytes are loaded in place: initializer outputs are views of the model's bytes,
which the package keeps alive for as long as any value refers to them."""
import gc
import unittest

import numpy as np
from onnx import TensorProto, helper, numpy_helper

import idem


def initializer_model(values):
    w = numpy_helper.from_array(values, "w")
    graph = helper.make_graph([helper.make_node("Identity", ["w"], ["y"])], "g", [],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, values.shape)],
                              initializer=[w])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    return model.SerializeToString()


class LoadingTest(unittest.TestCase):
    def test_outputs_outlive_session_and_bytes(self):
        values = np.arange(4096, dtype=np.float32)
        data = initializer_model(values)
        session = idem.Session(data)
        (y,) = session.run({})
        self.assertIn("bytes in place", session.describe())
        del session, data
        gc.collect()
        np.testing.assert_array_equal(y, values)

    def test_mutable_buffers_are_copied(self):
        values = np.arange(16, dtype=np.float32)
        data = bytearray(initializer_model(values))
        session = idem.Session(data)
        data[:] = b"\0" * len(data)  # changing the caller's buffer does not change the model
        (y,) = session.run({})
        np.testing.assert_array_equal(y, values)


if __name__ == "__main__":
    unittest.main()
