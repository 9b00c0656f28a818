#!/usr/bin/env python3
"""Python-side benchmark rows, reported next to idem_bench's C++ `tiny` row by summarize.py.

    python_tiny_run          idem.InferenceSession.run(None, {"x": x}) on the tiny model
                             (float[5] -> Identity -> y), the onnxruntime-style call
    python_tiny_run_session  idem.Session.run([x]) on the same model (the lower-level API)

Each row is the median over REPS repetitions of the mean time per call over a batch of calls
timed with time.perf_counter_ns. Prints JSON {row: ns}.

usage: PYTHONPATH=build/python /usr/bin/python3 bench/python_bench.py [--model tiny.onnx]
                                                                    [--reps 5] [--calls 200000]
Without --model the tiny model is built with onnx.helper (as idem_bench's FloatIdentity({5})).
"""
import argparse
import json
import statistics
import time

import numpy as np

import idem


def tiny_model_bytes():
    from onnx import TensorProto, helper
    t = helper.make_tensor_type_proto(TensorProto.FLOAT, [5])
    graph = helper.make_graph([helper.make_node("Identity", ["x"], ["y"])], "tiny",
                              [helper.make_value_info("x", t)], [helper.make_value_info("y", t)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)])
    model.ir_version = 10
    return model.SerializeToString()


def per_call_ns(fn, calls, reps):
    for _ in range(min(calls, 1000)):  # warm-up
        fn()
    samples = []
    for _ in range(reps):
        start = time.perf_counter_ns()
        for _ in range(calls):
            fn()
        samples.append((time.perf_counter_ns() - start) / calls)
    return statistics.median(samples)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model")
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--calls", type=int, default=200000)
    args = ap.parse_args()
    model = args.model if args.model else tiny_model_bytes()

    sess = idem.InferenceSession(model)
    name = sess.get_inputs()[0].name
    x = np.zeros(5, np.float32)
    feeds = {name: x}
    (y,) = sess.run(None, feeds)
    assert np.shares_memory(x, y)
    session = idem.Session(model)
    positional = [x]

    result = {
        "python_tiny_run": per_call_ns(lambda: sess.run(None, feeds), args.calls, args.reps),
        "python_tiny_run_session": per_call_ns(lambda: session.run(positional), args.calls,
                                               args.reps),
    }
    print(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
