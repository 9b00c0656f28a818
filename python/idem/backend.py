"""idem as an ``onnx.backend`` (``onnx.backend.base.Backend``).

    import idem.backend
    rep = idem.backend.prepare(model)            # an onnx.ModelProto (or bytes / a path)
    outputs = rep.run([x])                       # positional, in graph-input order
    outputs = idem.backend.run_node(node, [x])   # one NodeProto on its own

Outputs are onnx's ``namedtupledict`` (index or name). Only the CPU device exists.
:func:`is_compatible` tells whether idem implements every operator a model uses (at the model's
opset), from :func:`idem.supported_operators`.
"""

import numpy as np
import onnx
from onnx import helper
from onnx.backend.base import Backend, BackendRep, Device, DeviceType, namedtupledict

from . import Error, InferenceSession, InvalidArgument, supported_operators


def _default_opset(model):
    for opset in model.opset_import:
        if opset.domain in ("", "ai.onnx"):
            return opset.version
    return None


def unsupported_operators(model):
    """The ``(domain, op_type, opset)`` a model uses that idem lacks at the model's opsets, sorted.

    Walks nodes of the main graph and of every subgraph attribute (iteratively: the nesting depth
    is the file's to choose).
    """
    opsets = {("" if o.domain == "ai.onnx" else o.domain): o.version for o in model.opset_import}
    since = {}
    for domain, op, version in supported_operators():
        since.setdefault((domain, op), []).append(version)
    missing = set()
    graphs = [model.graph]
    while graphs:
        graph = graphs.pop()
        for node in graph.node:
            domain = "" if node.domain == "ai.onnx" else node.domain
            opset = opsets.get(domain)
            versions = since.get((domain, node.op_type), [])
            if opset is None or not any(v <= opset for v in versions):
                missing.add((domain, node.op_type, opset))
            for attribute in node.attribute:
                if attribute.type == onnx.AttributeProto.GRAPH:
                    graphs.append(attribute.g)
                elif attribute.type == onnx.AttributeProto.GRAPHS:
                    graphs.extend(attribute.graphs)
    return sorted(missing, key=lambda t: (t[0], t[1], t[2] or 0))


class IdemBackendRep(BackendRep):
    """A prepared model: :meth:`run` takes inputs positionally (graph order) or by name."""

    def __init__(self, session):
        self._session = session
        self._input_names = [i.name for i in session.get_inputs()]
        self._output_names = [o.name for o in session.get_outputs()]

    @property
    def session(self):
        """The underlying :class:`idem.InferenceSession`."""
        return self._session

    def run(self, inputs, **kwargs):
        if kwargs:
            raise InvalidArgument("unexpected keyword arguments: %s" % ", ".join(sorted(kwargs)))
        if isinstance(inputs, dict):
            feeds = dict(inputs)
        else:
            if isinstance(inputs, np.ndarray):
                inputs = [inputs]
            inputs = list(inputs)
            if len(inputs) != len(self._input_names):
                raise InvalidArgument("expected %d inputs (%s), got %d" % (
                    len(self._input_names), ", ".join(map(repr, self._input_names)), len(inputs)))
            feeds = dict(zip(self._input_names, inputs))
        outputs = self._session.run(None, feeds)
        return namedtupledict("Outputs", self._output_names)(*outputs)


class IdemBackend(Backend):
    """``onnx.backend.base.Backend`` running models with idem (CPU only, bit-exact)."""

    @classmethod
    def is_compatible(cls, model, device="CPU", **kwargs):
        return cls.supports_device(device) and not unsupported_operators(model)

    @classmethod
    def supports_device(cls, device):
        return Device(device).type == DeviceType.CPU

    @classmethod
    def prepare(cls, model, device="CPU", **kwargs):
        """Loads and plans `model` (an ``onnx.ModelProto``, serialized bytes or a path).

        Keyword arguments are :class:`idem.SessionOptions` attribute names (e.g.
        ``graph_optimization_level``, ``limits``)."""
        if not cls.supports_device(device):
            raise InvalidArgument("idem runs on the CPU only, not on %r" % (device,))
        from . import SessionOptions
        options = SessionOptions()
        for key, value in kwargs.items():
            if not hasattr(options, key):
                raise InvalidArgument("unknown session option %r" % (key,))
            setattr(options, key, value)
        if isinstance(model, onnx.ModelProto):
            model = model.SerializeToString()
        return IdemBackendRep(InferenceSession(model, sess_options=options))

    @classmethod
    def run_model(cls, model, inputs, device="CPU", **kwargs):
        return cls.prepare(model, device, **kwargs).run(inputs)

    @classmethod
    def run_node(cls, node, inputs, device="CPU", outputs_info=None, **kwargs):
        """Runs one node: builds a one-node model whose input types come from `inputs` (numpy
        arrays, or lists of arrays for sequences) and whose output types come from onnx's shape
        inference.

        Keyword arguments: ``opset_version`` (default: the newest opset onnx knows).
        """
        opset = kwargs.pop("opset_version", onnx.defs.onnx_opset_version())
        if not isinstance(inputs, (list, tuple)):
            inputs = [inputs]
        value_infos = []
        feeds = {}
        names = [n for n in node.input if n]
        if len(names) != len(inputs):
            raise InvalidArgument("node %r has %d inputs, %d were given" % (
                node.name or node.op_type, len(names), len(inputs)))
        for name, value in zip(names, inputs):
            value_infos.append(helper.make_value_info(name, _type_proto(value)))
            feeds[name] = value
        output_names = [n for n in node.output if n]
        graph = helper.make_graph([node], "run_node", value_infos, [])
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
        # Output types: onnx's shape inference (idem requires typed graph outputs). An output it
        # cannot type stays untyped and idem reports it.
        inferred = {}
        try:
            inferred = {v.name: v.type for v in
                        onnx.shape_inference.infer_shapes(model).graph.value_info}
        except Exception:  # noqa: BLE001 (inference is best effort; idem validates)
            pass
        outputs = [helper.make_value_info(n, inferred.get(n, onnx.TypeProto()))
                   for n in output_names]
        model.graph.output.extend(outputs)
        rep = cls.prepare(model, device, **kwargs)
        result = rep.session.run(None, feeds)
        return namedtupledict("Outputs", output_names)(*result)


_NP_TO_ONNX = {np.dtype(k): v for k, v in onnx.mapping.NP_TYPE_TO_TENSOR_TYPE.items()
               if np.dtype(k).kind not in "OUS"}


def _type_proto(value):
    """The ONNX type of a Python value fed to run_node (arrays, lists of arrays, None)."""
    if isinstance(value, (list, tuple)):
        if not value:
            raise InvalidArgument("run_node cannot type an empty sequence input")
        # The elements' common shape: a dim that differs between elements is unknown.
        arrays = [np.asarray(v) for v in value]
        ranks = {a.ndim for a in arrays}
        shape = None
        if len(ranks) == 1:
            shape = [dims[0] if len(set(dims)) == 1 else None
                     for dims in zip(*(a.shape for a in arrays))]
        element = _type_proto(arrays[0])
        element.tensor_type.ClearField("shape")
        if shape is not None:
            element = helper.make_tensor_type_proto(element.tensor_type.elem_type, shape)
        return helper.make_sequence_type_proto(element)
    array = np.asarray(value)
    if array.dtype.kind in "OUS":
        elem = onnx.TensorProto.STRING
    else:
        elem = _NP_TO_ONNX.get(array.dtype)
        if elem is None:
            raise InvalidArgument("numpy dtype %s has no ONNX type" % array.dtype)
    return helper.make_tensor_type_proto(elem, array.shape)


prepare = IdemBackend.prepare
run_model = IdemBackend.run_model
run_node = IdemBackend.run_node
supports_device = IdemBackend.supports_device
is_compatible = IdemBackend.is_compatible

__all__ = ["IdemBackend", "IdemBackendRep", "prepare", "run_model", "run_node",
           "supports_device", "is_compatible", "unsupported_operators", "Error"]
