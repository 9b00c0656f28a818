"""onnxruntime's Python API over idem: ``idem.InferenceSession`` and its companions.

Code written against ``onnxruntime`` runs unchanged for the calls listed in python/README.md
(``sess.run(None, {"x": a})``, ``get_inputs()[0].name``, ``get_modelmeta()``, ...). Differences
that remain are deliberate and documented there: idem runs on the caller's thread, on the CPU,
bit-exactly, and refuses what it cannot do instead of ignoring it.
"""

import enum
import os

from . import _idem

CPU_PROVIDER = "CPUExecutionProvider"


def get_available_providers():
    """``["CPUExecutionProvider"]``: idem runs on the CPU only."""
    return [CPU_PROVIDER]


def get_device():
    """``"CPU"``, as onnxruntime's CPU build reports."""
    return "CPU"


class GraphOptimizationLevel(enum.IntEnum):
    """onnxruntime's levels. idem's only graph rewrite is removing Identity nodes (outputs then
    alias inputs); every level but ``ORT_DISABLE_ALL`` enables it."""

    ORT_DISABLE_ALL = 0
    ORT_ENABLE_BASIC = 1
    ORT_ENABLE_EXTENDED = 2
    ORT_ENABLE_ALL = 99


class SessionOptions:
    """Options for :class:`InferenceSession`.

    onnxruntime attributes:
        graph_optimization_level: a :class:`GraphOptimizationLevel`; ``ORT_DISABLE_ALL`` keeps
            Identity nodes in the plan (they then run as steps; their outputs are still the
            same values, so zero copy holds either way).
        intra_op_num_threads, inter_op_num_threads, execution_mode, log_severity_level,
        log_verbosity_level, logid: accepted and ignored (idem runs each call on the caller's
            thread and does not log).
        enable_profiling, optimized_model_filepath: unsupported; setting them makes
            :class:`InferenceSession` raise :class:`idem.NotImplemented`.

    idem attributes:
        limits: ``{name: int}`` overriding idem's limits (see :func:`idem.default_limits`), e.g.
            ``{"max_tensor_bytes": 1 << 30}``.
        external_data: ``"map"`` (default; mapped read-only, the files must stay unchanged while
            outputs refer to them) or ``"copy"`` (copied at load, values stable whatever happens
            to the files).
        allow_external_hard_links: accept external-data files with more than one hard link.
    """

    def __init__(self):
        self.graph_optimization_level = GraphOptimizationLevel.ORT_ENABLE_ALL
        self.intra_op_num_threads = 0
        self.inter_op_num_threads = 0
        self.execution_mode = 0
        self.log_severity_level = 2
        self.log_verbosity_level = 0
        self.logid = ""
        self.enable_profiling = False
        self.optimized_model_filepath = ""
        self.limits = {}
        self.external_data = "map"
        self.allow_external_hard_links = False
        self._config = {}

    def add_session_config_entry(self, key, value):
        """Stored for :meth:`get_session_config_entry`; idem reads no entries."""
        self._config[str(key)] = str(value)

    def get_session_config_entry(self, key):
        return self._config[str(key)]


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
    """Accepts None or a list naming only the CPU provider (as strings or (name, options))."""
    if providers is None:
        return
    if isinstance(providers, (str, bytes)):
        raise _idem_error(_idem.InvalidArgument,
                          "providers must be a list, e.g. ['CPUExecutionProvider'], got %r" %
                          (providers,))
    for p in providers:
        name, options = (p[0], p[1]) if isinstance(p, tuple) and len(p) == 2 else (p, None)
        if name != CPU_PROVIDER:
            raise _idem_error(_idem.InvalidArgument,
                              "provider %r is not available: idem runs on the CPU only "
                              "(providers=['CPUExecutionProvider'])" % (name,))
        if options:
            raise _idem_error(_idem.InvalidArgument,
                              "provider options %r for CPUExecutionProvider are not supported" %
                              (options,))
    for options in provider_options or ():
        if options:
            raise _idem_error(_idem.InvalidArgument,
                              "provider options %r are not supported" % (options,))


def _idem_error(cls, message, code="INVALID_ARGUMENT"):
    err = cls(message)
    err.code = code
    return err


class InferenceSession:
    """A model loaded, validated and planned once; onnxruntime's ``InferenceSession`` API.

    Args:
        path_or_bytes: a path (``str`` or ``os.PathLike``) to a ``.onnx`` file, the serialized
            model (``bytes``, ``bytearray``, ``memoryview``), or an ``onnx.ModelProto``.
        sess_options: a :class:`SessionOptions` (None: defaults).
        providers: None or a list naming only ``"CPUExecutionProvider"`` (as a string or a
            ``(name, {})`` tuple); any other provider is an error, not a silent fallback.
        provider_options: None or a list of empty dicts.

    Raises:
        idem.Error: (subclasses) the model cannot be found or read, breaks an ONNX rule, or uses
            something idem lacks; an option is invalid.
    """

    def __init__(self, path_or_bytes, sess_options=None, providers=None, provider_options=None,
                 **kwargs):
        from . import Session, _foreign_error, Error
        try:
            if kwargs:
                raise _idem_error(_idem.InvalidArgument,
                                  "unexpected keyword arguments: %s" % ", ".join(sorted(kwargs)))
            _check_providers(providers, provider_options)
            options = sess_options if sess_options is not None else SessionOptions()
            if not isinstance(options, SessionOptions):
                raise _idem_error(_idem.InvalidArgument,
                                  "sess_options must be an idem.SessionOptions, got %s" %
                                  type(options).__name__)
            if options.enable_profiling:
                raise _idem_error(_idem.NotImplemented, "profiling is not supported",
                                  "UNSUPPORTED")
            if options.optimized_model_filepath:
                raise _idem_error(_idem.NotImplemented,
                                  "optimized_model_filepath is not supported (idem does not "
                                  "rewrite models)", "UNSUPPORTED")
            level = int(options.graph_optimization_level)
            self._model_path = (os.fspath(path_or_bytes)
                                if isinstance(path_or_bytes, (str, os.PathLike)) else None)
            self._session = Session(
                path_or_bytes,
                eliminate_identity=level != GraphOptimizationLevel.ORT_DISABLE_ALL,
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
        """Accepts the CPU provider only (nothing to change)."""
        _check_providers(providers, provider_options)

    def run(self, output_names, input_feed, run_options=None):
        """Runs the model.

        Args:
            output_names: names of the outputs to return, in the order wanted, or None or ``[]``
                (every output, in :meth:`get_outputs` order). An unknown name is an error.
            input_feed: ``{input name: value}`` (``str`` or ``bytes`` names) for every input of
                :meth:`get_inputs`, plus any of :meth:`get_overridable_initializers`. Values as in
                the module docstring (numpy arrays are used without copying when C-contiguous).
            run_options: a :class:`RunOptions` or None.

        Returns:
            list of outputs: numpy arrays (read-only views of idem's memory; string tensors are
            object arrays of ``str``), lists for sequences, None for empty optionals.

        Raises:
            idem.Error: (subclasses) a feed is missing, unknown or of the wrong type, an output
                name is unknown, or an operator failed.
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
            # As onnxruntime: an empty list means every output too.
            return self._session.run(input_feed, output_names or None, True, run_options)
        except _idem.Error:
            raise
        except Exception as e:
            from . import _foreign_error
            raise _foreign_error(e) from e

    def end_profiling(self):
        raise _idem_error(_idem.NotImplemented, "profiling is not supported", "UNSUPPORTED")

    def __repr__(self):
        return "idem.InferenceSession(inputs=%r, outputs=%r)" % (self._inputs, self._outputs)

