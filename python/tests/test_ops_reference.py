"""Randomized differential tests of the sequence operators against NumPy formulations of the ONNX
spec (ConcatFromSequence = concatenate/stack, SplitToSequence = array_split by sizes, SequenceAt /
Insert / Erase = list indexing)."""
import unittest

import numpy as np
from onnx import TensorProto, helper

import idem

RNG = np.random.default_rng(1234)


def seq_type(elem):
    return helper.make_sequence_type_proto(helper.make_tensor_type_proto(elem, None))


def model(nodes, inputs, outputs, opset=16):
    graph = helper.make_graph(nodes, "g", inputs, outputs)
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 8
    return idem.Session(m.SerializeToString())


def random_shape(rank, low=0, high=4):
    return tuple(int(d) for d in RNG.integers(low, high, size=rank))


class ConcatFromSequenceReference(unittest.TestCase):
    def test_matches_numpy(self):
        for _ in range(200):
            rank = int(RNG.integers(1, 4))
            new_axis = int(RNG.integers(0, 2))
            n = int(RNG.integers(1, 4))
            if new_axis:
                shape = random_shape(rank)
                parts = [RNG.standard_normal(shape).astype(np.float32) for _ in range(n)]
                axis = int(RNG.integers(-rank - 1, rank + 1))
                expected = np.stack(parts, axis=axis)
            else:
                axis = int(RNG.integers(-rank, rank))
                base = list(random_shape(rank))
                parts = []
                for _ in range(n):
                    base[axis] = int(RNG.integers(0, 4))
                    parts.append(RNG.standard_normal(base).astype(np.float32))
                expected = np.concatenate(parts, axis=axis)
            s = model([helper.make_node("ConcatFromSequence", ["s"], ["y"], axis=axis,
                                        new_axis=new_axis)],
                      [helper.make_value_info("s", seq_type(TensorProto.FLOAT))],
                      [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], opset=11)
            (got,) = s.run([parts])
            self.assertEqual(got.shape, expected.shape, (axis, new_axis, [p.shape for p in parts]))
            self.assertEqual(got.tobytes(), expected.tobytes())


class SplitToSequenceReference(unittest.TestCase):
    def test_matches_numpy(self):
        for _ in range(200):
            rank = int(RNG.integers(1, 4))
            shape = random_shape(rank, 1, 6)
            x = RNG.standard_normal(shape).astype(np.float32)
            axis = int(RNG.integers(-rank, rank))
            dim = shape[axis]
            mode = int(RNG.integers(0, 3))
            keepdims = int(RNG.integers(0, 2))
            inputs = [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(shape))]
            feeds = [x]
            if mode == 0:  # no split: chunks of 1, keepdims applies
                node = helper.make_node("SplitToSequence", ["x"], ["s"], axis=axis,
                                        keepdims=keepdims)
                expected = [np.take(x, [i], axis=axis) for i in range(dim)]
                if not keepdims:
                    expected = [np.squeeze(e, axis=axis) for e in expected]
            elif mode == 1:  # scalar split: equal chunks, the last may be smaller
                k = int(RNG.integers(1, dim + 2))
                node = helper.make_node("SplitToSequence", ["x", "k"], ["s"], axis=axis)
                inputs.append(helper.make_tensor_value_info("k", TensorProto.INT64, []))
                feeds.append(np.array(k, dtype=np.int64))
                expected = np.split(x, list(range(k, dim, k)), axis=axis)
            else:  # 1-D split summing to dim, zeros allowed
                cuts = sorted(int(c) for c in RNG.integers(0, dim + 1, size=int(RNG.integers(0, 3))))
                sizes = np.diff([0, *cuts, dim]).astype(np.int32)
                node = helper.make_node("SplitToSequence", ["x", "k"], ["s"], axis=axis)
                inputs.append(helper.make_tensor_value_info("k", TensorProto.INT32, [len(sizes)]))
                feeds.append(sizes)
                expected = np.split(x, np.cumsum(sizes)[:-1], axis=axis)
            s = model([node], inputs, [helper.make_value_info("s", seq_type(TensorProto.FLOAT))],
                      opset=11)
            (got,) = s.run(feeds)
            self.assertEqual(len(got), len(expected), (shape, axis, mode))
            for g, e in zip(got, expected):
                self.assertEqual(g.shape, e.shape, (shape, axis, mode, keepdims))
                self.assertEqual(g.tobytes(), e.tobytes())


class PositionReference(unittest.TestCase):
    def test_at_insert_erase_match_list_semantics(self):
        st = seq_type(TensorProto.INT64)
        pos = helper.make_tensor_value_info("p", TensorProto.INT64, [])
        t = helper.make_tensor_value_info("t", TensorProto.INT64, None)
        at = model([helper.make_node("SequenceAt", ["s", "p"], ["y"])],
                   [helper.make_value_info("s", st), pos],
                   [helper.make_tensor_value_info("y", TensorProto.INT64, None)], opset=11)
        ins = model([helper.make_node("SequenceInsert", ["s", "t", "p"], ["y"])],
                    [helper.make_value_info("s", st), t, pos], [helper.make_value_info("y", st)],
                    opset=11)
        era = model([helper.make_node("SequenceErase", ["s", "p"], ["y"])],
                    [helper.make_value_info("s", st), pos], [helper.make_value_info("y", st)],
                    opset=11)
        for n in range(0, 5):
            seq = [np.array([i], dtype=np.int64) for i in range(n)]
            new = np.array([99], dtype=np.int64)
            for p in range(-n - 2, n + 2):
                p_arr = np.array(p, dtype=np.int64)
                if -n <= p < n:
                    self.assertEqual(at.run([seq, p_arr])[0].tolist(), seq[p].tolist())
                    expected = seq[:p] + seq[p + 1:] if p != -1 else seq[:-1]
                    got = era.run([seq, p_arr])[0]
                    self.assertEqual([g.tolist() for g in got], [e.tolist() for e in expected])
                else:
                    with self.assertRaises(idem.Error):
                        at.run([seq, p_arr])
                    with self.assertRaises(idem.Error):
                        era.run([seq, p_arr])
                if -n <= p <= n:
                    index = p if p >= 0 else p + n
                    expected = seq[:index] + [new] + seq[index:]
                    got = ins.run([seq, new, p_arr])[0]
                    self.assertEqual([g.tolist() for g in got], [e.tolist() for e in expected])
                else:
                    with self.assertRaises(idem.Error):
                        ins.run([seq, new, p_arr])


if __name__ == "__main__":
    unittest.main()
