"""idem: a bit-exact, zero-copy ONNX runtime (Python bindings).

Quick start (the onnxruntime API)::

    import numpy as np
    import idem

    sess = idem.InferenceSession("model.onnx")   # or bytes; providers=["CPUExecutionProvider"]
    name = sess.get_inputs()[0].name
    (y,) = sess.run(None, {name: np.ones((1, 5), np.float32)})

The lower-level API::

    session = idem.Session("model.onnx")          # or serialized bytes, or an onnx.ModelProto
    print(session.inputs)                          # [ValueInfo(name='x', type='tensor(float)', shape=[1, 5])]
    (y,) = session.run({"x": np.ones((1, 5), np.float32)})
    y = session.run([np.ones((1, 5), np.float32)])[0]   # same, feeds in input order
    outputs = session.run_dict({"x": ...})              # {"y": array(...)}

Value mapping (inputs are converted against the type the model declares for them):

========================================  ==============================================
ONNX type                                 Python
========================================  ==============================================
tensor(float, double, float16, int*,      ``numpy.ndarray`` of the matching dtype. Outputs
uint*, bool, complex64, complex128)       are read-only arrays that share idem's memory.
tensor(string)                            ``numpy.ndarray`` of dtype object holding
                                          ``bytes`` (Session outputs) or ``str``
                                          (InferenceSession outputs, decoded from UTF-8 with
                                          ``surrogateescape`` so any bytes round-trip).
                                          Inputs may hold ``bytes`` or ``str`` (encoded as
                                          UTF-8 with ``surrogateescape``); 'S'/'U' arrays
                                          and plain lists are accepted too.
tensor(bfloat16, float8*, float8e8m0,     :class:`RawTensor` (packed little-endian bytes),
int4, uint4, float4e2m1, int2, uint2)     both as input and output: numpy lacks these.
seq(tensor(T))                            ``list`` of the tensor mapping above (a tuple is
                                          accepted as input).
optional(T)                               ``None`` for an empty optional, otherwise T's
                                          mapping. Inputs declared optional accept either;
                                          other inputs refuse ``None``.
========================================  ==============================================

Numpy arrays fed to a tensor input keep their dtype: a float64 array fed to a tensor(float)
input is an error reported by idem, not a silent cast. Plain Python scalars and lists are
converted to the declared dtype (within the same kind: ints to floats yes, floats to ints no).

Zero copy: a C-contiguous, aligned, native-endian numpy array is fed without copying, and an
output that is the same value (e.g. through Identity) is returned as a read-only view of the
*same memory* (``np.shares_memory(out, x)`` is True). Other arrays are copied once
(``np.ascontiguousarray``). Because outputs may alias inputs, modifying an input array after
``run`` also changes the outputs that alias it; copy the output (``out.copy()``) if you need to.
Output arrays stay valid after the Session is gone.

Errors: every failure raises an :class:`Error` (a subclass of both ``RuntimeError`` and
``ValueError``) whose message is idem's, naming the model, node, input and rule involved, and
whose ``code`` attribute is the status code name (e.g. ``'INVALID_MODEL'``). The class is one of
onnxruntime's names, all subclasses of :class:`Error`: :class:`InvalidArgument` (a wrong feed,
name, option or model source), :class:`InvalidGraph` (the model breaks an ONNX rule),
:class:`NotImplemented` (valid ONNX idem lacks), :class:`NoSuchFile` (the model file cannot be
found or read) and :class:`Fail` (anything else: limits, run-time preconditions, cancellation).
Python errors met while converting arguments (a ``TypeError`` from a wrong argument, a
``ValueError`` from numpy, a ``UnicodeError``) are raised as :class:`InvalidArgument` with the
original as ``__cause__``.

Threads: ``Session.run`` releases the GIL while the model runs; one Session may be run from
several threads at once.
"""

import builtins as _builtins
import os as _os

from . import _idem

__all__ = ["Session", "Error", "RawTensor", "ValueInfo", "run_backend_test", "optimize"]

Error = _idem.Error
InvalidArgument = _idem.InvalidArgument
InvalidGraph = _idem.InvalidGraph
# onnxruntime's name. It shadows the builtin singleton in this module: comparison methods here
# must return _builtins.NotImplemented.
NotImplemented = _idem.NotImplemented  # noqa: A001
Fail = _idem.Fail
NoSuchFile = _idem.NoSuchFile
ValueInfo = _idem.ValueInfo


def _foreign_error(exc):
    """The idem error standing for a Python exception raised while converting arguments."""
    if isinstance(exc, MemoryError):
        err, code = Fail("MemoryError: %s" % (exc,)), "RESOURCE_EXHAUSTED"
    else:
        err, code = InvalidArgument("%s: %s" % (type(exc).__name__, exc)), "INVALID_ARGUMENT"
    err.code = code
    return err


def supported_operators():
    """Every operator version idem implements, as sorted ``(domain, op_type, since_version)``
    tuples (domain ``""`` is the default ONNX domain). A model may use an operator at opset ``v``
    when some listed version of it has ``since_version <= v``."""
    return [tuple(t) for t in _idem.supported_operators()]


def default_limits():
    """idem's default limits as ``{name: int}`` (see the README's limits table)."""
    return dict(_idem.default_limits())


# onnxruntime's API (imports nothing from this module at import time).
from ._inference_session import (  # noqa: E402
    ExecutionMode, GraphOptimizationLevel, InferenceSession, IOBinding, ModelMetadata, NodeArg,
    OrtValue, RunOptions, SessionOptions, get_all_providers, get_available_providers, get_device,
    set_default_logger_severity, set_default_logger_verbosity)

__version__ = _idem.__version__

__all__ += ["InvalidArgument", "InvalidGraph", "NotImplemented", "Fail", "NoSuchFile",
            "supported_operators", "default_limits", "InferenceSession", "SessionOptions",
            "RunOptions", "GraphOptimizationLevel", "ExecutionMode", "NodeArg", "ModelMetadata",
            "OrtValue", "IOBinding", "get_available_providers", "get_all_providers",
            "get_device", "set_default_logger_severity", "set_default_logger_verbosity"]


class RawTensor:
    """A tensor of an element type numpy has no dtype for.

    Attributes:
        element_type (str): ONNX type name as idem spells it: ``"bfloat16"``, ``"float8e4m3fn"``,
            ``"float8e4m3fnuz"``, ``"float8e5m2"``, ``"float8e5m2fnuz"``, ``"float8e8m0"``,
            ``"uint4"``, ``"int4"``, ``"float4e2m1"``, ``"uint2"``, ``"int2"``. (Any non-string
            ONNX type name such as ``"float"`` is accepted as input too.)
        shape (tuple of int): the tensor's dims.
        data (bytes): the elements packed little-endian, exactly as ONNX ``raw_data`` stores
            them: 16-bit for bfloat16, 8-bit for float8 types, two 4-bit elements per byte (low
            nibble first) for 4-bit types, four 2-bit elements per byte (low bits first) for 2-bit
            types. ``len(data)`` must be exactly the packed size.

    Outputs of these types are returned as RawTensor; feed them the same way. When fed, ``data``
    (if ``bytes``) is used without copying.
    """

    __slots__ = ("element_type", "shape", "data")

    def __init__(self, element_type, shape, data):
        try:
            self.element_type = str(element_type)
            self.shape = tuple(int(d) for d in shape)
            self.data = bytes(data) if not isinstance(data, bytes) else data
        except Exception as e:
            raise _foreign_error(e) from e

    def __eq__(self, other):
        if not isinstance(other, RawTensor):
            return _builtins.NotImplemented
        return (self.element_type, self.shape, self.data) == (
            other.element_type, other.shape, other.data)

    def __hash__(self):
        return hash((self.element_type, self.shape, self.data))

    def __repr__(self):
        return "RawTensor(element_type=%r, shape=%r, data=%r)" % (
            self.element_type, self.shape, self.data)


_idem._set_raw_tensor_class(RawTensor)


class Session:
    """An ONNX model loaded, validated and planned once, then run any number of times.

    Args:
        model: a path (``str`` or ``os.PathLike``) to a ``.onnx`` file (external data is resolved
            inside its folder), the serialized model as ``bytes``/``bytearray``/``memoryview``,
            or any object with ``SerializeToString()`` such as an ``onnx.ModelProto``.
        eliminate_identity: remove Identity nodes from the plan so outputs alias inputs (their
            types are still checked). Turn off only to measure or debug.
        base_dir: for models given as bytes, the folder external data is resolved in (empty:
            external data is refused).
        limits: ``{name: int}`` overriding idem's limits (names as in :func:`default_limits`).
        external_data: ``"map"`` (default: mapped read-only; the files must stay unchanged while
            outputs refer to them) or ``"copy"`` (copied at load).
        allow_external_hard_links: accept external-data files that have more than one hard link.
        fold_constants: compute at load every value the constants determine (off only to
            measure or debug; results are the same).

    Raises:
        Error: the model cannot be read, breaks an ONNX rule or uses something idem lacks
            (subclasses: see the module docstring).
    """

    def __init__(self, model, eliminate_identity=True, base_dir="", *, limits=None,
                 external_data="map", allow_external_hard_links=False, fold_constants=True):
        try:
            self._session = _idem.Session(
                model, eliminate_identity=eliminate_identity, fold_constants=fold_constants,
                base_dir=_os.fspath(base_dir),
                limits=dict(limits or {}), external_data=external_data,
                allow_external_hard_links=allow_external_hard_links)
        except Error:
            raise
        except Exception as e:
            raise _foreign_error(e) from e

    @property
    def inputs(self):
        """Inputs that must be fed, in order: list of ``ValueInfo(name, type, shape)``.

        ``type`` is an ONNX type string (``"tensor(float)"``, ``"seq(tensor(int64))"``,
        ``"optional(tensor(string))"``); ``shape`` is a list with an ``int`` (fixed), ``str``
        (symbolic) or ``None`` (unknown) per dim, or ``None`` when the rank is unknown. For
        sequence and optional types it is the shape of the contained tensor.
        """
        return self._session.inputs

    @property
    def overridable_inputs(self):
        """Inputs that have an initializer: may be fed by name (dict feeds) to override it."""
        return self._session.overridable_inputs

    @property
    def outputs(self):
        """Outputs in order: list of ``ValueInfo(name, type, shape)`` (see :attr:`inputs`)."""
        return self._session.outputs

    def run(self, feeds):
        """Runs the model and returns the outputs as a list in :attr:`outputs` order.

        Args:
            feeds: a dict ``{input name: value}`` (may also name :attr:`overridable_inputs`) or a
                list/tuple of values in :attr:`inputs` order. See the module docstring for how
                values map to ONNX types.

        Raises:
            Error: a feed is missing, unknown or of the wrong type, or an operator failed.
        """
        try:
            return self._session.run(feeds)
        except Error:
            raise
        except Exception as e:
            raise _foreign_error(e) from e

    def run_dict(self, feeds):
        """Like :meth:`run` but returns ``{output name: value}``."""
        try:
            return self._session.run_dict(feeds)
        except Error:
            raise
        except Exception as e:
            raise _foreign_error(e) from e

    @property
    def metadata(self):
        """The model's descriptive fields as a dict: producer_name, producer_version, domain,
        model_version, doc_string, graph_name, graph_doc_string, metadata_props (list of
        ``(key, value)``)."""
        return self._session.metadata

    @property
    def eliminate_identity(self):
        """Whether Identity nodes were removed from the plan (the ``eliminate_identity`` given)."""
        return self._session.eliminate_identity

    @property
    def fold_constants(self):
        """Whether constant folding ran at load (the ``fold_constants`` given)."""
        return self._session.fold_constants

    @property
    def limits(self):
        """The limits this session was created with, as ``{name: int}``."""
        return self._session.limits

    def describe(self):
        """Human-readable summary: IR version, opsets, typed inputs/outputs, nodes."""
        return self._session.describe()

    def __repr__(self):
        def fmt(infos):
            return ", ".join("%s: %s" % (i.name, i.type) for i in infos)
        return "idem.Session(inputs=[%s], outputs=[%s])" % (fmt(self.inputs), fmt(self.outputs))


def run_backend_test(folder, skip_unsupported=False, rtol=None, atol=None):
    """Runs one ONNX backend-test folder (``model.onnx`` + ``test_data_set_N/``).

    Args:
        folder: the case folder.
        skip_unsupported: report a model using an operator idem lacks as ``"SKIP"`` instead of
            ``"FAIL"``.
        rtol, atol: as ``idem test --rtol/--atol``. Both ``None`` (the default): outputs are
            compared bit for bit. Otherwise float outputs (float, double, float16, bfloat16)
            match when ``|actual - expected| <= atol + rtol * |expected|`` (the missing one is
            0; a NaN matches any NaN, an infinity only itself); everything else stays exact.

    Returns:
        ``(outcome, reason)`` where outcome is ``"PASS"``, ``"FAIL"`` or ``"SKIP"`` and reason
        says why it failed or was skipped (empty on success).
    """
    try:
        return _idem.run_backend_test(_os.fspath(folder), skip_unsupported, rtol, atol)
    except Error:
        raise
    except Exception as e:
        raise _foreign_error(e) from e


# --- idem.optimize (issue 9) ---------------------------------------------------------------------
def optimize(model, out_path=None, in_place=False):
    """Removes every removable Identity node (see the README's `idem optimize` rule table).

    Args:
        model: serialized model bytes (bytes, bytearray, memoryview), an ``onnx.ModelProto``, or a
            path to a model file.
        out_path: with a path ``model``, write the result there atomically (refused when it is the
            input file unless ``in_place``; a model with external data must stay in its folder).
        in_place: allow ``out_path`` to be the input file.

    Returns:
        ``(result_bytes, report)``: result_bytes is None when written to ``out_path``; report is
        ``{"removed": int, "kept": int, "kept_nodes": [{"graph", "node", "index", "rule",
        "reason"}]}``. With nothing to remove the bytes are the input's, unchanged.
    """
    try:
        if isinstance(model, (bytes, bytearray, memoryview)) or hasattr(model, "SerializeToString"):
            if out_path is not None:
                err = InvalidArgument("idem.optimize: out_path needs a model path (its folder "
                                      "decides whether external data stays valid)")
                err.code = "INVALID_ARGUMENT"
                raise err
            data = (model.SerializeToString() if hasattr(model, "SerializeToString")
                    else bytes(model))
            return _idem._optimize_bytes(data)
        path = _os.fspath(model)
        if "\0" in (path if isinstance(path, str) else path.decode("latin-1")):
            err = InvalidArgument("the model path contains a NUL character (paths cannot "
                                  "contain NUL)")
            err.code = "INVALID_ARGUMENT"
            raise err
        if out_path is None:
            # Read by idem (a regular file of at most max_model_bytes, opened non-blocking): a
            # FIFO or /dev/zero given as the model is refused, never read forever.
            return _idem._optimize_path(_os.fsdecode(path))
        return None, _idem._optimize_file(_os.fsdecode(path), _os.fsdecode(_os.fspath(out_path)),
                                          in_place)
    except Error:
        raise
    except Exception as e:
        raise _foreign_error(e) from e
