"""onnxruntime's Python API over idem: ``idem.InferenceSession`` and its companions.

Code written against ``onnxruntime`` runs unchanged for the calls listed in docs/python.md
(``sess.run(None, {"x": a})``, ``get_inputs()[0].name``, ``get_modelmeta()``, ...). Differences
that remain are deliberate and documented there: idem runs on the caller's thread, on the CPU,
bit-exactly, and refuses what it cannot do instead of ignoring it.
"""

import enum
import os
import warnings

from . import _idem

CPU_PROVIDER = "CPUExecutionProvider"


def get_available_providers():
    """``["CPUExecutionProvider"]``: idem runs on the CPU only."""
    return [CPU_PROVIDER]


def get_device():
    """``"CPU"``, as onnxruntime's CPU build reports."""
    return "CPU"


class GraphOptimizationLevel(enum.IntEnum):
    """onnxruntime's levels. ``ORT_DISABLE_ALL`` turns off idem's plan-time rewrites (Identity
    elimination, constant folding); every other level keeps them. Outputs are the same values at
    every level (idem's rewrites never change a result's bits)."""

    ORT_DISABLE_ALL = 0
    ORT_ENABLE_BASIC = 1
    ORT_ENABLE_EXTENDED = 2
    ORT_ENABLE_LAYOUT = 3
    ORT_ENABLE_ALL = 99


class ExecutionMode(enum.IntEnum):
    """onnxruntime's execution modes. idem runs the nodes of a run in order on the caller's
    thread either way; results do not depend on the mode."""

    ORT_SEQUENTIAL = 0
    ORT_PARALLEL = 1


# Session config entries (SessionOptions.add_session_config_entry) that cannot change what a run
# computes on idem, which runs on the caller's thread, never spins, and has no arena, pre-packing
# or ORT-format models: key -> accepted values (None: any). Any other entry is refused when the
# session is created, naming it (it could change results). The same list as the Node.js package.
NO_EFFECT_CONFIG = {
    "session.intra_op.allow_spinning": ("0", "1"),
    "session.inter_op.allow_spinning": ("0", "1"),
    "session.force_spinning_stop": ("0", "1"),
    "session.disable_prepacking": ("0", "1"),
    "session.use_env_allocators": ("0", "1"),
    "session.use_ort_model_bytes_directly": ("0", "1"),
    "session.use_ort_model_bytes_for_initializers": ("0", "1"),
    "session.use_device_allocator_for_initializers": ("0", "1"),
    "session.dynamic_block_base": None,
    "session.intra_op_thread_affinities": None,
    "session.set_denormal_as_zero": ("0",),
    "session.load_model_format": ("ONNX",),
    "session.save_model_format": ("ONNX",),
}


def _checked_int(name, value, low=None, high=None):
    if isinstance(value, bool) or not isinstance(value, int):
        try:
            import numpy
            if isinstance(value, numpy.integer):
                value = int(value)
            else:
                raise TypeError
        except TypeError:
            raise _idem_error(_idem.InvalidArgument, "SessionOptions.%s must be an int, got %s" %
                              (name, type(value).__name__)) from None
    if (low is not None and value < low) or (high is not None and value > high):
        bounds = ("in [%d, %d]" % (low, high) if high is not None else ">= %d" % low)
        raise _idem_error(_idem.InvalidArgument, "SessionOptions.%s must be %s, got %d" %
                          (name, bounds, value))
    return value


def _checked_bool(name, value):
    if not isinstance(value, (bool, int)) or (isinstance(value, int) and value not in (0, 1)):
        raise _idem_error(_idem.InvalidArgument, "SessionOptions.%s must be a bool, got %r" %
                          (name, value))
    return bool(value)


def _checked_enum(cls, name, value):
    try:
        return cls(value)
    except (ValueError, TypeError):
        raise _idem_error(_idem.InvalidArgument, "SessionOptions.%s must be one of %s, got %r" %
                          (name, ", ".join("%s.%s" % (cls.__name__, m.name) for m in cls),
                           value)) from None


def _checked_str(name, value):
    if not isinstance(value, str):
        raise _idem_error(_idem.InvalidArgument, "SessionOptions.%s must be a str, got %s" %
                          (name, type(value).__name__))
    return value


# name: (default, checker). Checked when set, as onnxruntime's typed properties are; an attribute
# that is not listed here (a typo) is an AttributeError, as there.
_SESSION_OPTION_FIELDS = {
    "graph_optimization_level": (GraphOptimizationLevel.ORT_ENABLE_ALL,
                                 lambda n, v: _checked_enum(GraphOptimizationLevel, n, v)),
    "execution_mode": (ExecutionMode.ORT_SEQUENTIAL,
                       lambda n, v: _checked_enum(ExecutionMode, n, v)),
    "intra_op_num_threads": (0, lambda n, v: _checked_int(n, v, 0, 1 << 16)),
    "inter_op_num_threads": (0, lambda n, v: _checked_int(n, v, 0, 1 << 16)),
    "enable_cpu_mem_arena": (True, _checked_bool),
    "enable_mem_pattern": (True, _checked_bool),
    "enable_mem_reuse": (True, _checked_bool),
    "use_deterministic_compute": (False, _checked_bool),
    "log_severity_level": (-1, lambda n, v: _checked_int(n, v, -1, 4)),
    "log_verbosity_level": (0, lambda n, v: _checked_int(n, v, 0)),
    "logid": ("", _checked_str),
    "enable_profiling": (False, _checked_bool),
    "profile_file_prefix": ("onnxruntime_profile_", _checked_str),
    "optimized_model_filepath": ("", _checked_str),
}


class SessionOptions:
    """Options for :class:`InferenceSession`, with onnxruntime's attributes (checked when set:
    a wrong type or range is an :class:`idem.InvalidArgument`, an unknown attribute an
    ``AttributeError``).

    onnxruntime attributes and what idem does with them (docs/python.md has the full table):
        graph_optimization_level: a :class:`GraphOptimizationLevel`; ``ORT_DISABLE_ALL`` turns
            off Identity elimination and constant folding, the other levels keep them. Results
            are identical either way.
        intra_op_num_threads, inter_op_num_threads (ints >= 0), execution_mode
            (:class:`ExecutionMode`), enable_cpu_mem_arena, enable_mem_pattern, enable_mem_reuse,
            use_deterministic_compute, log_severity_level (-1..4), log_verbosity_level, logid,
            profile_file_prefix: accepted, no effect on results: idem runs each call on the
            caller's thread, never spins, has no arena, is always deterministic and does not log.
        add_session_config_entry(key, value): the entries in ``NO_EFFECT_CONFIG`` (spinning,
            pre-packing, allocators, model format ``ONNX``) are accepted; any other entry makes
            :class:`InferenceSession` raise :class:`idem.NotImplemented` naming it.
        enable_profiling, optimized_model_filepath, free dimension overrides, initializers and
            custom op libraries: unsupported (:class:`idem.NotImplemented`).

    idem attributes:
        limits: ``{name: int}`` overriding idem's limits (see :func:`idem.default_limits`), e.g.
            ``{"max_tensor_bytes": 1 << 30}``.
        external_data: ``"map"`` (default; mapped read-only, the files must stay unchanged while
            outputs refer to them) or ``"copy"`` (copied at load, values stable whatever happens
            to the files).
        allow_external_hard_links: accept external-data files with more than one hard link.
    """

    __slots__ = tuple("_" + n for n in _SESSION_OPTION_FIELDS) + (
        "limits", "external_data", "allow_external_hard_links", "_config")

    def __init__(self):
        for name, (default, _) in _SESSION_OPTION_FIELDS.items():
            object.__setattr__(self, "_" + name, default)
        self.limits = {}
        self.external_data = "map"
        self.allow_external_hard_links = False
        self._config = {}

    def add_session_config_entry(self, key, value):
        """Stores a config entry (checked against ``NO_EFFECT_CONFIG`` when a session is made)."""
        self._config[_checked_str("add_session_config_entry key", key)] = _checked_str(
            "add_session_config_entry value", value)

    def get_session_config_entry(self, key):
        """The value stored for ``key``; an unknown key is an :class:`idem.InvalidArgument`
        (onnxruntime raises too)."""
        try:
            return self._config[key]
        except (KeyError, TypeError):
            raise _idem_error(_idem.InvalidArgument,
                              "SessionOptions: no config entry %r" % (key,)) from None

    def add_free_dimension_override_by_name(self, dim_name, dim_value):
        raise _idem_error(_idem.NotImplemented, "free dimension overrides are not supported: "
                          "idem takes symbolic dims from the feeds", "UNSUPPORTED")

    def add_free_dimension_override_by_denotation(self, dim_denotation, dim_value):
        self.add_free_dimension_override_by_name(dim_denotation, dim_value)

    def add_initializer(self, name, ortvalue):
        raise _idem_error(_idem.NotImplemented, "SessionOptions.add_initializer is not supported: "
                          "feed the value by name to override an initializer", "UNSUPPORTED")

    def add_external_initializers(self, names, ortvalues):
        self.add_initializer(names, ortvalues)

    def register_custom_ops_library(self, library_path):
        raise _idem_error(_idem.NotImplemented, "custom operator libraries are not supported",
                          "UNSUPPORTED")

    def _check(self):
        """Refuses what idem cannot honour (called by InferenceSession)."""
        if self._enable_profiling:
            raise _idem_error(_idem.NotImplemented, "profiling is not supported "
                              "(SessionOptions.enable_profiling)", "UNSUPPORTED")
        if self._optimized_model_filepath:
            raise _idem_error(_idem.NotImplemented,
                              "optimized_model_filepath is not supported (idem does not "
                              "rewrite models)", "UNSUPPORTED")
        for key, value in self._config.items():
            if key not in NO_EFFECT_CONFIG:
                raise _idem_error(
                    _idem.NotImplemented,
                    "session config entry '%s' is not supported by idem (it could change "
                    "results); accepted: %s" % (key, ", ".join(NO_EFFECT_CONFIG)), "UNSUPPORTED")
            allowed = NO_EFFECT_CONFIG[key]
            if allowed is not None and value not in allowed:
                raise _idem_error(
                    _idem.NotImplemented,
                    "session config entry '%s' = '%s' is not supported by idem (accepted: %s)" %
                    (key, value, ", ".join("'%s'" % a for a in allowed)), "UNSUPPORTED")


def _option_property(name, check):
    def get(self):
        return getattr(self, "_" + name)

    def set_(self, value):
        object.__setattr__(self, "_" + name, check(name, value))

    return property(get, set_)


for _name, (_default, _check) in _SESSION_OPTION_FIELDS.items():
    setattr(SessionOptions, _name, _option_property(_name, _check))
del _name, _default, _check


class RunOptions(_idem.RunOptions):
    """Per-call options for :meth:`InferenceSession.run`.

    Both are checked when a run starts, and handed to idem's run as ``idem::RunOptions`` (the
    flag by address, the timeout as a deadline) when the C++ library has the Run overloads that
    take them: control flow checks them on every Loop/Scan iteration.

    Attributes:
        terminate (bool): set (from any thread) to stop runs that use these options; a run that
            starts with it set fails with :class:`idem.Fail` (code ``CANCELLED``).
        timeout (float or None): seconds a run may take; a run that starts with no time left
            (``timeout <= 0``) fails with :class:`idem.Fail` (code ``DEADLINE_EXCEEDED``).
        log_severity_level, log_verbosity_level, logid, only_execute_path_to_fetches: accepted
            and ignored (onnxruntime's).
    """

    def __init__(self):
        super().__init__()
        self.log_severity_level = 2
        self.log_verbosity_level = 0
        self.logid = ""
        self.only_execute_path_to_fetches = False
        self._config = {}

    def add_run_config_entry(self, key, value):
        self._config[str(key)] = str(value)

    def get_run_config_entry(self, key):
        return self._config[str(key)]


class NodeArg:
    """An input or output as onnxruntime describes it.

    Attributes:
        name (str): the value's name (UTF-8, undecodable bytes kept with surrogateescape).
        type (str): ``"tensor(float)"``, ``"seq(tensor(int64))"``, ``"optional(tensor(float))"``.
        shape (list): per dim an ``int`` (fixed), ``str`` (symbolic) or ``None`` (unknown);
            for ``optional(tensor(...))`` the tensor's; ``[]`` for scalars, for tensors of
            unknown rank, and for sequences (as onnxruntime reports them).
    """

    __slots__ = ("name", "type", "shape")

    def __init__(self, name, type, shape):  # noqa: A002 (onnxruntime's attribute name)
        self.name = name
        self.type = type
        self.shape = shape

    def __repr__(self):
        return "NodeArg(name=%r, type=%r, shape=%r)" % (self.name, self.type, self.shape)

    def __eq__(self, other):
        if not isinstance(other, NodeArg):
            return NotImplemented
        return (self.name, self.type, self.shape) == (other.name, other.type, other.shape)

    __hash__ = None


def _node_arg(info):
    # onnxruntime's NodeArg::Shape(): the shape of a tensor or of an optional's tensor; nothing
    # for sequences, optional sequences, or a tensor whose rank is unknown.
    has_shape = info.type.startswith(("tensor(", "optional(tensor("))
    shape = info.shape if has_shape and info.shape is not None else []
    return NodeArg(info.name, info.type, list(shape))


class ModelMetadata:
    """The model's descriptive fields, named as onnxruntime names them.

    Attributes: producer_name, graph_name, domain, description (the model's doc_string),
    graph_description (the graph's doc_string), version (model_version, int),
    custom_metadata_map (dict of metadata_props; a repeated key keeps its last value),
    producer_version (an idem addition).
    """

    def __init__(self, fields):
        self.producer_name = fields["producer_name"]
        self.producer_version = fields["producer_version"]
        self.graph_name = fields["graph_name"]
        self.domain = fields["domain"]
        self.description = fields["doc_string"]
        self.graph_description = fields["graph_doc_string"]
        self.version = fields["model_version"]
        self.custom_metadata_map = dict(fields["metadata_props"])

    def __repr__(self):
        return ("ModelMetadata(producer_name=%r, graph_name=%r, domain=%r, version=%r)" %
                (self.producer_name, self.graph_name, self.domain, self.version))


def _check_providers(providers, provider_options):
    """onnxruntime's rule on a CPU-only build: a provider that is not available is dropped with a
    warning (onnxruntime's words) and the session runs on the CPU; a bare string or options for
    the CPU provider are refused (idem's CPU provider takes no options)."""
    if providers is None:
        return
    if isinstance(providers, (str, bytes)) or not hasattr(providers, "__iter__"):
        raise _idem_error(_idem.InvalidArgument,
                          "providers must be a list, e.g. ['CPUExecutionProvider'], got %r" %
                          (providers,))
    providers = list(providers)
    if provider_options is not None and len(provider_options) != len(providers):
        raise _idem_error(_idem.InvalidArgument,
                          "'providers' and 'provider_options' should be the same length if both "
                          "are given.")
    for k, p in enumerate(providers):
        if isinstance(p, tuple) and len(p) == 2:
            name, options = p
        else:
            name, options = p, (provider_options[k] if provider_options is not None else None)
        if not isinstance(name, str):
            raise _idem_error(_idem.InvalidArgument,
                              "Only string values for 'providers' are supported, got %r" % (name,))
        if name != CPU_PROVIDER:
            warnings.warn("Specified provider '%s' is not in available provider names."
                          "Available providers: '%s'" % (name, CPU_PROVIDER))
            continue
        if options:
            raise _idem_error(_idem.InvalidArgument,
                              "provider options %r for CPUExecutionProvider are not supported" %
                              (options,))


def _idem_error(cls, message, code="INVALID_ARGUMENT"):
    err = cls(message)
    err.code = code
    return err


# numpy dtype -> ONNX type string, for OrtValue.data_type() and onnxruntime's feed messages.
_DTYPE_TYPE = {
    "float32": "tensor(float)", "float64": "tensor(double)", "float16": "tensor(float16)",
    "int8": "tensor(int8)", "int16": "tensor(int16)", "int32": "tensor(int32)",
    "int64": "tensor(int64)", "uint8": "tensor(uint8)", "uint16": "tensor(uint16)",
    "uint32": "tensor(uint32)", "uint64": "tensor(uint64)", "bool": "tensor(bool)",
    "complex64": "tensor(complex64)", "complex128": "tensor(complex128)",
}


def _value_type(value):
    """The ONNX type string of a feed, or None when it is not a plain tensor."""
    import numpy
    if isinstance(value, OrtValue):
        value = value._value
    if isinstance(value, numpy.ndarray):
        if value.dtype.kind in "OSU":
            return "tensor(string)"
        return _DTYPE_TYPE.get(value.dtype.name)
    return None


def _ort_feed_message(inputs, overridable, input_feed):
    """onnxruntime's message for a tensor feed it would refuse (element type, rank, fixed dims),
    in its order and words (clients parse them, e.g. a window size from "Got: 24 Expected: 16"),
    or None. Other mistakes (missing, unknown or twice-fed names) keep idem's message, which
    names the inputs."""
    import numpy
    known = {i.name: i for i in list(inputs) + list(overridable)}
    for name, value in input_feed.items():
        if isinstance(name, bytes):
            name = name.decode("utf-8", "surrogateescape")
        arg = known.get(name) if isinstance(name, str) else None
        if arg is None or not arg.type.startswith("tensor("):
            continue
        actual = _value_type(value)
        if actual is None:
            continue
        if actual != arg.type:
            return "Unexpected input data type. Actual: (%s) , expected: (%s)" % (actual,
                                                                                 arg.type)
        shape = numpy.shape(value._value if isinstance(value, OrtValue) else value)
        if not arg.shape:
            continue  # a declared scalar (or unknown rank) is not checked
        if len(shape) != len(arg.shape):
            return ("Invalid rank for input: %s Got: %d Expected: %d Please fix either the "
                    "inputs/outputs or the model." % (name, len(shape), len(arg.shape)))
        bad = "".join(" index: %d Got: %d Expected: %d\n" % (d, got, want)
                      for d, (got, want) in enumerate(zip(shape, arg.shape))
                      if isinstance(want, int) and got != want)
        if bad:
            return ("Got invalid dimensions for input: %s for the following indices\n%s Please "
                    "fix either the inputs/outputs or the model." % (name, bad))
    return None


class OrtValue:
    """onnxruntime's ``OrtValue`` on the CPU: a handle on a numpy array (tensor), a list
    (sequence) or None (an empty optional). Made from numpy without a copy
    (:meth:`ortvalue_from_numpy`) or returned by :meth:`IOBinding.get_outputs` and
    :meth:`InferenceSession.run_with_ort_values`; fed back as an input without a copy either.
    """

    __slots__ = ("_value",)

    def __init__(self, value):
        self._value = value

    @staticmethod
    def ortvalue_from_numpy(numpy_obj, device_type="cpu", device_id=0, vendor_id=-1):
        """An OrtValue over ``numpy_obj`` (no copy: keep the array unchanged while it is used)."""
        import numpy
        _check_device(device_type, device_id)
        if not isinstance(numpy_obj, numpy.ndarray):
            raise _idem_error(_idem.InvalidArgument, "ortvalue_from_numpy takes a numpy array, "
                              "got %s" % type(numpy_obj).__name__)
        return OrtValue(numpy_obj)

    @staticmethod
    def ortvalue_from_shape_and_type(shape, element_type, device_type="cpu", device_id=0,
                                     vendor_id=-1):
        """A zero-filled tensor of ``shape`` and numpy ``element_type`` (e.g. ``numpy.float32``)."""
        import numpy
        _check_device(device_type, device_id)
        try:
            return OrtValue(numpy.zeros(tuple(int(d) for d in shape), dtype=element_type))
        except (TypeError, ValueError) as e:
            raise _idem_error(_idem.InvalidArgument, "ortvalue_from_shape_and_type: %s" % e) from e

    def numpy(self):
        """The tensor as a numpy array (the same memory: outputs are read-only views)."""
        if not self.is_tensor():
            raise _idem_error(_idem.InvalidArgument, "numpy() is only for tensors; this OrtValue "
                              "holds %s" % type(self._value).__name__)
        return self._value

    def update_inplace(self, np_arr):
        """Copies ``np_arr`` (same shape and dtype) into this tensor's memory."""
        import numpy
        if not self.is_tensor() or not self._value.flags.writeable:
            raise _idem_error(_idem.InvalidArgument, "update_inplace: this OrtValue is read-only "
                              "(an output of idem); make one with ortvalue_from_numpy")
        src = numpy.asarray(np_arr)
        if src.shape != self._value.shape or src.dtype != self._value.dtype:
            raise _idem_error(_idem.InvalidArgument,
                              "update_inplace: got %s%s, this OrtValue is %s%s" %
                              (src.dtype, list(src.shape), self._value.dtype,
                               list(self._value.shape)))
        numpy.copyto(self._value, src)

    def is_tensor(self):
        import numpy
        return isinstance(self._value, numpy.ndarray)

    def is_tensor_sequence(self):
        return isinstance(self._value, list)

    def is_sparse_tensor(self):
        return False

    def has_value(self):
        return self._value is not None

    def shape(self):
        return list(self._value.shape) if self.is_tensor() else []

    def data_type(self):
        if self.is_tensor():
            return _value_type(self._value)
        if self.is_tensor_sequence():
            inner = _value_type(self._value[0]) if self._value else None
            return "seq(%s)" % inner if inner else "seq(tensor(undefined))"
        return "optional(undefined)"

    def element_type(self):
        """The numpy scalar type of the elements (as onnxruntime returns it)."""
        if not self.is_tensor():
            raise _idem_error(_idem.InvalidArgument, "element_type() is only for tensors")
        return self._value.dtype.type

    def device_name(self):
        return "cpu"

    def data_ptr(self):
        if not self.is_tensor():
            raise _idem_error(_idem.InvalidArgument, "data_ptr() is only for tensors")
        return self._value.__array_interface__["data"][0]

    def __repr__(self):
        return "OrtValue(%r)" % (self._value,)


def _check_device(device_type, device_id):
    if not isinstance(device_type, str) or device_type.lower() != "cpu" or device_id != 0:
        raise _idem_error(_idem.InvalidArgument,
                          "device %r %r is not available: idem runs on the CPU only "
                          "(device_type='cpu', device_id=0)" % (device_type, device_id))


def _as_buffer(name, buffer, element_type, shape):
    """A numpy array of ``element_type`` and ``shape`` over ``buffer`` (an object with the buffer
    protocol: numpy array, memoryview, bytearray), checked to be exactly that size. A raw integer
    address is refused: idem cannot check what it points to."""
    import numpy
    if isinstance(buffer, int):
        raise _idem_error(
            _idem.InvalidArgument,
            "'%s': buffer_ptr is a raw address, which idem does not accept (it cannot check what "
            "the address points to); pass the numpy array itself (bind_cpu_input, or "
            "buffer_ptr=array)" % name)
    try:
        dtype = numpy.dtype(element_type)
        dims = tuple(int(d) for d in shape)
        if isinstance(buffer, numpy.ndarray):
            array = buffer
        else:
            array = numpy.frombuffer(memoryview(buffer).cast("B"), numpy.uint8)
    except (TypeError, ValueError) as e:
        raise _idem_error(_idem.InvalidArgument, "'%s': %s" % (name, e)) from e
    count = 1
    for d in dims:
        if d < 0:
            raise _idem_error(_idem.InvalidArgument, "'%s': negative dim in %s" % (name, dims))
        count *= d
    if not array.flags.c_contiguous or array.nbytes != count * dtype.itemsize:
        raise _idem_error(_idem.InvalidArgument,
                          "'%s': the buffer holds %d bytes%s; %s%s needs %d contiguous bytes" %
                          (name, array.nbytes, "" if array.flags.c_contiguous else
                           " (not contiguous)", dtype, list(dims), count * dtype.itemsize))
    if array.dtype == dtype and array.shape == dims:
        return array
    return array.reshape(-1).view(numpy.uint8).view(dtype).reshape(dims)


class IOBinding:
    """onnxruntime's I/O binding on the CPU: inputs bound once and reused, outputs bound to be
    returned as OrtValues or written into a caller's buffer.

    Streaming state in place: bind an output (e.g. Silero's ``stateN``) with no buffer, then bind
    :meth:`get_outputs`' OrtValue as the next run's input (``bind_ortvalue_input("state", ...)``):
    the state moves from run to run without a copy. Or bind the same numpy array as the input and
    as the output's buffer: each run reads it, then the new state is copied into it once.
    """

    def __init__(self, session):
        if not isinstance(session, InferenceSession):
            raise _idem_error(_idem.InvalidArgument, "IOBinding takes an idem.InferenceSession")
        self._session = session
        self._inputs = {}
        self._outputs = {}  # name -> None (allocated by idem) or a numpy array to write into
        self._results = []

    def bind_cpu_input(self, name, arr_on_cpu):
        """Binds a numpy array (used without a copy) to input ``name``."""
        self._inputs[self._input_name(name)] = arr_on_cpu

    def bind_input(self, name, device_type, device_id, element_type, shape, buffer_ptr):
        """onnxruntime's raw binding: ``buffer_ptr`` must be an object with the buffer protocol
        (a numpy array, memoryview, bytearray) holding exactly ``shape`` x ``element_type``."""
        _check_device(device_type, device_id)
        self._inputs[self._input_name(name)] = _as_buffer(name, buffer_ptr, element_type, shape)

    def bind_ortvalue_input(self, name, ortvalue):
        if not isinstance(ortvalue, OrtValue):
            raise _idem_error(_idem.InvalidArgument, "bind_ortvalue_input takes an OrtValue")
        self._inputs[self._input_name(name)] = ortvalue._value

    def bind_output(self, name, device_type="cpu", device_id=0, element_type=None, shape=None,
                    buffer_ptr=None):
        """Binds output ``name``: without a buffer, idem's result is returned by
        :meth:`get_outputs`; with ``element_type``, ``shape`` and ``buffer_ptr`` (a numpy array or
        another buffer-protocol object), each run writes the output into that memory (its type
        and shape must then match)."""
        _check_device(device_type, device_id)
        self._output_name(name)
        if element_type is None or shape is None or buffer_ptr is None:
            self._outputs[name] = None
        else:
            self._outputs[name] = _as_buffer(name, buffer_ptr, element_type, shape)

    def bind_ortvalue_output(self, name, ortvalue):
        """Binds output ``name`` to an OrtValue's memory (made by ``ortvalue_from_numpy`` or
        ``ortvalue_from_shape_and_type``): each run writes the output into it."""
        if not isinstance(ortvalue, OrtValue) or not ortvalue.is_tensor():
            raise _idem_error(_idem.InvalidArgument, "bind_ortvalue_output takes a tensor OrtValue")
        self._output_name(name)
        self._outputs[name] = ortvalue._value

    def synchronize_inputs(self):
        pass

    def synchronize_outputs(self):
        pass

    def get_outputs(self):
        """The bound outputs of the last run, in binding order, as OrtValues."""
        return [OrtValue(v) for v in self._results]

    def get_outputs_as_ortvaluevector(self):
        return self.get_outputs()

    def copy_outputs_to_cpu(self):
        """The bound outputs of the last run as numpy arrays (copies, writable)."""
        import numpy
        out = []
        for v in self._results:
            out.append(numpy.array(v, copy=True) if isinstance(v, numpy.ndarray) else v)
        return out

    def clear_binding_inputs(self):
        self._inputs = {}

    def clear_binding_outputs(self):
        self._outputs = {}
        self._results = []

    def _input_name(self, name):
        s = self._session
        if not any(i.name == name for i in s._inputs + s._overridable):
            raise _idem_error(_idem.InvalidArgument, "Invalid input name: %s" % (name,))
        return name

    def _output_name(self, name):
        if not any(o.name == name for o in self._session._outputs):
            raise _idem_error(_idem.InvalidArgument, "Invalid output name: %s" % (name,))
        return name

    def _run(self, run_options):
        import numpy
        names = list(self._outputs)
        results = self._session.run(names, self._inputs, run_options) if names else []
        for k, name in enumerate(names):
            target = self._outputs[name]
            if target is None:
                continue
            got = results[k]
            if not isinstance(got, numpy.ndarray) or got.dtype != target.dtype or \
                    got.shape != target.shape:
                raise _idem_error(
                    _idem.InvalidArgument,
                    "output '%s' is %s%s; the buffer bound to it is %s%s" %
                    (name, getattr(got, "dtype", type(got).__name__),
                     list(getattr(got, "shape", [])), target.dtype, list(target.shape)))
            numpy.copyto(target, got)
            results[k] = target
        self._results = results


class InferenceSession:
    """A model loaded, validated and planned once; onnxruntime's ``InferenceSession`` API.

    Args:
        path_or_bytes: a path (``str`` or ``os.PathLike``) to a ``.onnx`` file, the serialized
            model (``bytes``, ``bytearray``, ``memoryview``), or an ``onnx.ModelProto``.
        sess_options: a :class:`SessionOptions` (None: defaults).
        providers: None or a list of providers; ``"CPUExecutionProvider"`` (as a string or a
            ``(name, {})`` tuple) is the one idem has: any other is dropped with onnxruntime's
            warning, as a CPU-only onnxruntime does.
        provider_options: None or a list of empty dicts, one per provider.

    Raises:
        idem.Error: (subclasses) the model cannot be found or read, breaks an ONNX rule, or uses
            something idem lacks; an option is invalid or cannot be honoured.
    """

    def __init__(self, path_or_bytes, sess_options=None, providers=None, provider_options=None,
                 **kwargs):
        from . import Session, _foreign_error, Error
        try:
            # onnxruntime's names of its own graph optimizers: nothing to disable here (idem's
            # rewrites never change a result).
            kwargs.pop("disabled_optimizers", None)
            if kwargs:
                raise _idem_error(_idem.InvalidArgument,
                                  "unexpected keyword arguments: %s" % ", ".join(sorted(kwargs)))
            _check_providers(providers, provider_options)
            options = sess_options if sess_options is not None else SessionOptions()
            if not isinstance(options, SessionOptions):
                raise _idem_error(_idem.InvalidArgument,
                                  "sess_options must be an idem.SessionOptions, got %s" %
                                  type(options).__name__)
            options._check()
            rewrites = options.graph_optimization_level != GraphOptimizationLevel.ORT_DISABLE_ALL
            self._model_path = (os.fspath(path_or_bytes)
                                if isinstance(path_or_bytes, (str, os.PathLike)) else None)
            self._session = Session(
                path_or_bytes, eliminate_identity=rewrites, fold_constants=rewrites,
                limits=options.limits, external_data=options.external_data,
                allow_external_hard_links=options.allow_external_hard_links)._session
        except Error:
            raise
        except Exception as e:
            raise _foreign_error(e) from e
        self._sess_options = options
        self._inputs = [_node_arg(i) for i in self._session.inputs]
        self._outputs = [_node_arg(i) for i in self._session.outputs]
        self._overridable = [_node_arg(i) for i in self._session.overridable_inputs]
        # Inputs declared as scalars: onnxruntime does not check their shape, so clients feed
        # them as one-element arrays (np.array([16000])); idem takes such a feed as the scalar.
        self._scalar_inputs = tuple(
            info.name for info in list(self._session.inputs) +
            list(self._session.overridable_inputs)
            if info.type.startswith("tensor(") and info.shape is not None and not info.shape)

    def get_inputs(self):
        """Inputs that must be fed, in graph order: list of :class:`NodeArg`."""
        return list(self._inputs)

    def get_outputs(self):
        """Outputs in graph order: list of :class:`NodeArg`."""
        return list(self._outputs)

    def get_overridable_initializers(self):
        """Graph inputs with an initializer (may be fed to override it): list of NodeArg."""
        return list(self._overridable)

    def get_modelmeta(self):
        """The model's :class:`ModelMetadata`."""
        return ModelMetadata(self._session.metadata)

    def get_providers(self):
        return [CPU_PROVIDER]

    def get_provider_options(self):
        return {CPU_PROVIDER: {}}

    def get_session_options(self):
        return self._sess_options

    def set_providers(self, providers=None, provider_options=None):
        """As onnxruntime: unavailable providers are dropped with a warning (nothing changes)."""
        _check_providers(providers, provider_options)

    def disable_fallback(self):
        pass

    def enable_fallback(self):
        pass

    def run(self, output_names, input_feed, run_options=None):
        """Runs the model.

        Args:
            output_names: names of the outputs to return, in the order wanted, or None or ``[]``
                (every output, in :meth:`get_outputs` order). An unknown name is an error.
            input_feed: ``{input name: value}`` (``str`` or ``bytes`` names) for every input of
                :meth:`get_inputs`, plus any of :meth:`get_overridable_initializers`. Values as in
                the module docstring (numpy arrays are used without copying when C-contiguous).
                An input the model declares as a scalar also takes a
                one-element array of any rank (onnxruntime does not check scalars' shapes).
            run_options: a :class:`RunOptions` or None.

        Returns:
            list of outputs: numpy arrays (read-only views of idem's memory; string tensors are
            object arrays of ``str``), lists for sequences, None for empty optionals.

        Raises:
            idem.Error: (subclasses) a feed is missing, unknown or of the wrong type, an output
                name is unknown, or an operator failed. A feed onnxruntime refuses is reported in
                onnxruntime's words ("Got invalid dimensions for input: x for the following
                indices\n index: 1 Got: 24 Expected: 16\n ..."), idem's message as the cause.
        """
        try:
            if not isinstance(input_feed, dict):
                raise _idem_error(_idem.InvalidArgument,
                                  "input_feed must be a dict {input name: value}, got %s" %
                                  type(input_feed).__name__)
            if run_options is not None and not isinstance(run_options, _idem.RunOptions):
                raise _idem_error(_idem.InvalidArgument,
                                  "run_options must be an idem.RunOptions, got %s" %
                                  type(run_options).__name__)
            feeds = input_feed
            if self._scalar_inputs:
                feeds = self._scalars(feeds)
            # As onnxruntime: an empty list means every output too.
            try:
                return self._session.run(feeds, output_names or None, True, run_options)
            except _idem.InvalidArgument as e:
                message = _ort_feed_message(self._inputs, self._overridable, feeds)
                if message is None:
                    raise
                raise _idem_error(_idem.InvalidArgument, message, e.code) from e
        except _idem.Error:
            raise
        except Exception as e:
            from . import _foreign_error
            raise _foreign_error(e) from e

    def _scalars(self, feeds):
        import numpy
        changed = None
        for name in self._scalar_inputs:
            value = feeds.get(name)
            if type(value) is numpy.ndarray and value.ndim and value.size == 1:
                if changed is None:
                    changed = dict(feeds)
                changed[name] = value.reshape(())
        return feeds if changed is None else changed

    def run_with_ort_values(self, output_names, input_dict_ort_values, run_options=None):
        """As :meth:`run` with :class:`OrtValue` feeds; returns a list of OrtValues."""
        if not isinstance(input_dict_ort_values, dict):
            raise _idem_error(_idem.InvalidArgument, "input_dict_ort_values must be a dict "
                              "{input name: OrtValue}")
        feeds = {k: (v._value if isinstance(v, OrtValue) else v)
                 for k, v in input_dict_ort_values.items()}
        return [OrtValue(v) for v in self.run(output_names, feeds, run_options)]

    def io_binding(self):
        """A new :class:`IOBinding` for this session."""
        return IOBinding(self)

    def run_with_iobinding(self, iobinding, run_options=None):
        """Runs with the inputs bound to ``iobinding``; its bound outputs receive the results."""
        if not isinstance(iobinding, IOBinding) or iobinding._session is not self:
            raise _idem_error(_idem.InvalidArgument,
                              "run_with_iobinding takes an IOBinding made by this session's "
                              "io_binding()")
        iobinding._run(run_options)

    def end_profiling(self):
        raise _idem_error(_idem.NotImplemented, "profiling is not supported", "UNSUPPORTED")

    def get_profiling_start_time_ns(self):
        return 0

    def __repr__(self):
        return "idem.InferenceSession(inputs=%r, outputs=%r)" % (self._inputs, self._outputs)


def set_default_logger_severity(severity):
    """Accepted (0..4), no effect: idem does not log."""
    _checked_int("logger severity", severity, 0, 4)


def set_default_logger_verbosity(verbosity):
    """Accepted, no effect: idem does not log."""
    _checked_int("logger verbosity", verbosity, 0)


def get_all_providers():
    return [CPU_PROVIDER]
