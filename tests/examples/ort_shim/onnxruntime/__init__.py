"""A stand-in ``onnxruntime`` Python package for the tests, backed by ONNX Runtime 1.30 itself
(its Node.js build, through tests/models/ort_server.js: there is no onnxruntime wheel here), so
that example and client code written for ``import onnxruntime`` runs unchanged on ONNX Runtime and
its results can be compared with the same code on idem.

Covers what the examples and the client tests call: ``SessionOptions`` (its attributes passed to
ONNX Runtime as onnxruntime-node's session options), ``InferenceSession(path, sess_options,
providers)``, ``get_inputs()``/``get_outputs()`` (ONNX Runtime's own metadata, in the Python API's
form: 'tensor(float)', None for an unknown dim), ``get_providers()``, ``run(output_names, feeds)``
with the Python API's feed checks, ``get_available_providers()``.

Needs IDEM_ORT_NODE_MODULES (a node_modules folder holding onnxruntime-node 1.30) and node.
"""
import atexit
import base64
import enum
import json
import os
import subprocess
import warnings

import numpy as np

__version__ = "1.30.0"
_HERE = os.path.dirname(os.path.abspath(__file__))
_SERVER = os.path.join(_HERE, "..", "..", "..", "models", "ort_server.js")
_ORT_TYPES = {np.dtype(np.float32): "float32", np.dtype(np.float64): "float64",
              np.dtype(np.int64): "int64", np.dtype(np.int32): "int32",
              np.dtype(np.int16): "int16", np.dtype(np.int8): "int8",
              np.dtype(np.uint8): "uint8", np.dtype(np.uint16): "uint16",
              np.dtype(np.float16): "float16", np.dtype(np.bool_): "bool"}
_NUMPY_TYPES = {v: k for k, v in _ORT_TYPES.items()}
_ONNX_NAMES = {"float32": "float", "float64": "double"}


class _Server:
    proc = None

    @classmethod
    def ask(cls, request):
        if cls.proc is None:
            modules = os.environ.get("IDEM_ORT_NODE_MODULES")
            if not modules or not os.path.isdir(os.path.join(modules, "onnxruntime-node")):
                raise ImportError("the onnxruntime shim needs IDEM_ORT_NODE_MODULES (a "
                                  "node_modules folder with onnxruntime-node 1.30)")
            cls.proc = subprocess.Popen(["node", _SERVER], stdin=subprocess.PIPE,
                                        stdout=subprocess.PIPE, text=True, bufsize=1 << 20,
                                        env=dict(os.environ, NODE_PATH=modules))
            atexit.register(cls.close)
        cls.proc.stdin.write(json.dumps(request) + "\n")
        cls.proc.stdin.flush()
        line = cls.proc.stdout.readline()
        if not line:
            raise RuntimeError("the ONNX Runtime server died (exit %s)" % cls.proc.wait())
        reply = json.loads(line)
        if "error" in reply:
            raise RuntimeError("[ONNXRuntimeError] : %s" % reply["error"])
        return reply

    @classmethod
    def close(cls):
        if cls.proc is not None:
            cls.proc.stdin.close()
            cls.proc.wait(timeout=30)
            cls.proc = None


class GraphOptimizationLevel(enum.IntEnum):
    ORT_DISABLE_ALL = 0
    ORT_ENABLE_BASIC = 1
    ORT_ENABLE_EXTENDED = 2
    ORT_ENABLE_LAYOUT = 3
    ORT_ENABLE_ALL = 99


class ExecutionMode(enum.IntEnum):
    ORT_SEQUENTIAL = 0
    ORT_PARALLEL = 1


_LEVELS = {0: "disabled", 1: "basic", 2: "extended", 3: "layout", 99: "all"}


class SessionOptions:
    def __init__(self):
        self.graph_optimization_level = GraphOptimizationLevel.ORT_ENABLE_ALL
        self.execution_mode = ExecutionMode.ORT_SEQUENTIAL
        self.intra_op_num_threads = 0
        self.inter_op_num_threads = 0
        self.enable_cpu_mem_arena = True
        self.enable_mem_pattern = True
        self.log_severity_level = -1
        self._config = {}

    def add_session_config_entry(self, key, value):
        self._config[key] = value

    def get_session_config_entry(self, key):
        return self._config[key]

    def _node_options(self):
        options = {"executionProviders": ["cpu"],
                   "graphOptimizationLevel": _LEVELS[int(self.graph_optimization_level)],
                   "executionMode": ("sequential", "parallel")[int(self.execution_mode)],
                   "intraOpNumThreads": int(self.intra_op_num_threads),
                   "interOpNumThreads": int(self.inter_op_num_threads),
                   "enableCpuMemArena": bool(self.enable_cpu_mem_arena),
                   "enableMemPattern": bool(self.enable_mem_pattern),
                   # The Python default (-1) leaves ONNX Runtime's default, warnings.
                   "logSeverityLevel": (int(self.log_severity_level)
                                        if self.log_severity_level >= 0 else 2)}
        if self._config:
            options["extra"] = extra = {}
            for key, value in self._config.items():
                *path, last = key.split(".")
                node = extra
                for p in path:
                    node = node.setdefault(p, {})
                node[last] = value
        return options


class RunOptions:
    def __init__(self):
        self.log_severity_level = 2
        self.terminate = False


class NodeArg:
    def __init__(self, name, type, shape):  # noqa: A002 (onnxruntime's attribute)
        self.name, self.type, self.shape = name, type, shape

    def __repr__(self):
        return "NodeArg(name=%r, type=%r, shape=%r)" % (self.name, self.type, self.shape)


def _node_arg(meta):
    if not meta.get("isTensor", True):
        return NodeArg(meta["name"], "(non-tensor)", [])
    element = _ONNX_NAMES.get(meta["type"], meta["type"])
    return NodeArg(meta["name"], "tensor(%s)" % element,
                   [None if d == "" else d for d in meta.get("shape", [])])


def get_available_providers():
    return ["CPUExecutionProvider"]


def get_device():
    return "CPU"


class InferenceSession:
    def __init__(self, path_or_bytes, sess_options=None, providers=None, provider_options=None,
                 **kwargs):
        if not isinstance(path_or_bytes, (str, os.PathLike)):
            raise TypeError("the onnxruntime shim loads models from paths only")
        for p in providers or []:
            name = p[0] if isinstance(p, tuple) else p
            if name != "CPUExecutionProvider":
                warnings.warn("Specified provider '%s' is not in available provider names."
                              "Available providers: 'CPUExecutionProvider'" % name)
        self._path = os.path.abspath(os.fspath(path_or_bytes))
        self._options = (sess_options or SessionOptions())._node_options()
        reply = _Server.ask({"load": self._path, "options": self._options})
        self._inputs = [_node_arg(m) for m in reply["inputMetadata"]]
        self._outputs = [_node_arg(m) for m in reply["outputMetadata"]]

    def get_inputs(self):
        return list(self._inputs)

    def get_outputs(self):
        return list(self._outputs)

    def get_providers(self):
        return ["CPUExecutionProvider"]

    def run(self, output_names, input_feed, run_options=None):
        # The Python API's own checks (onnxruntime-node ignores unknown feeds; Python does not).
        missing = [i.name for i in self._inputs if i.name not in input_feed]
        if missing:
            raise ValueError("Required inputs (%s) are missing from input feed (%s)." %
                             (missing, list(input_feed)))
        known = {i.name for i in self._inputs}
        specs = []
        for name, value in input_feed.items():
            if name not in known:
                raise RuntimeError("[ONNXRuntimeError] : 2 : INVALID_ARGUMENT : Invalid input "
                                   "name: %s" % name)
            array = np.ascontiguousarray(value)
            specs.append({"name": name, "type": _ORT_TYPES[array.dtype],
                          "dims": list(array.shape),
                          "b64": base64.b64encode(array.tobytes()).decode()})
        reply = _Server.ask({"run": self._path, "options": self._options, "feeds": specs})
        outputs = {}
        for o in reply["outputs"]:
            data = np.frombuffer(base64.b64decode(o["b64"]), _NUMPY_TYPES[o["type"]])
            outputs[o["name"]] = data.reshape(o["dims"]).copy()
        names = output_names or [o.name for o in self._outputs]
        return [outputs[n] for n in names]
