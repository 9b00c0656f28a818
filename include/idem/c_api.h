/* The C API of idem: load an ONNX model once, run it many times, from any language with a C FFI.
 *
 * C99; compiles as C and as C++; no C++ type crosses it. Everything lives in libidem (link
 * `idem::idem` after find_package(idem), or `pkg-config --cflags --libs idem`).
 *
 * Conventions (the same for every function unless its comment says otherwise):
 *  - Errors. A fallible function returns an idem_status_t*: NULL means success; otherwise a status
 *    object the caller owns and frees with idem_status_release(), holding a code (idem_status_code)
 *    and idem's message, which names the file, node, input and rule. On error, out-parameters are
 *    left unchanged unless documented otherwise.
 *  - No exception, abort or crash crosses this API: allocation failure returns
 *    IDEM_RESOURCE_EXHAUSTED (if even the status cannot be allocated, a static status is
 *    returned, which idem_status_release() accepts like any other).
 *  - Handles are opaque. A NULL handle, or a handle of another kind (e.g. a session passed where a
 *    value is expected), returns IDEM_INVALID_ARGUMENT. Handles that were released, or pointers
 *    that never were handles, are undefined behaviour, as with free().
 *  - Release functions accept NULL (no-op). Every handle an idem function hands out through an
 *    out-parameter is owned by the caller and released with the matching *_release().
 *  - Strings and arrays returned through `const` out-pointers are owned by the handle they were
 *    read from and stay valid until that handle is released.
 *  - Threads. Sessions and values are immutable once created: any number of threads may use the
 *    same session or value at once (run, query, derive new values). Releasing a handle must not
 *    race with other calls on that same handle. Options objects are plain mutable data: do not
 *    modify one from two threads at once. Run options are the exception: every idem_run_options_*
 *    function except release is thread-safe (atomics inside), so one thread may cancel a run that
 *    another thread is executing. Status objects belong to the thread that received them.
 *  - Element types are ONNX's TensorProto.DataType codes (idem_element_type_t).
 *  - Parameters that take one of this header's enum values are declared int32_t, so that any
 *    integer a caller passes is defined behaviour: an unknown value is IDEM_INVALID_ARGUMENT.
 */
#ifndef IDEM_C_API_H_
#define IDEM_C_API_H_

/* A C99 header (also compiled as C++): C headers and typedefs, not <cstddef> or `using`. */
/* NOLINTBEGIN(modernize-deprecated-headers,modernize-use-using) */

#include <stddef.h>
#include <stdint.h>

#include "idem/export.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Bumped when this header changes incompatibly (functions are only ever added otherwise). */
#define IDEM_C_API_VERSION 1

typedef struct idem_status_t idem_status_t;
typedef struct idem_session_options_t idem_session_options_t;
typedef struct idem_session_t idem_session_t;
typedef struct idem_value_t idem_value_t;
typedef struct idem_run_options_t idem_run_options_t;

/* Status codes, numbered as idem::StatusCode. */
typedef enum idem_status_code_t {
  IDEM_OK = 0,
  IDEM_INVALID_ARGUMENT = 1,   /* a caller-supplied value (feed, option, handle) is wrong */
  IDEM_INVALID_MODEL = 2,      /* the model file or graph breaks an ONNX rule */
  IDEM_UNSUPPORTED = 3,        /* valid ONNX that idem does not implement */
  IDEM_NOT_FOUND = 4,          /* a named thing (file, input, output) does not exist */
  IDEM_OUT_OF_RANGE = 5,       /* an index or a size is outside what is allowed */
  IDEM_RESOURCE_EXHAUSTED = 6, /* a configured limit was hit, or memory ran out */
  IDEM_IO_ERROR = 7,           /* the operating system refused a read */
  IDEM_RUNTIME_ERROR = 8,      /* an operator's run-time precondition failed */
  IDEM_INTERNAL = 9,           /* a bug in idem */
  IDEM_CANCELLED = 10,         /* the run was cancelled */
  IDEM_DEADLINE_EXCEEDED = 11  /* the run passed its deadline */
} idem_status_code_t;

/* ONNX TensorProto.DataType codes. */
typedef enum idem_element_type_t {
  IDEM_ELEMENT_UNDEFINED = 0,
  IDEM_ELEMENT_FLOAT = 1,
  IDEM_ELEMENT_UINT8 = 2,
  IDEM_ELEMENT_INT8 = 3,
  IDEM_ELEMENT_UINT16 = 4,
  IDEM_ELEMENT_INT16 = 5,
  IDEM_ELEMENT_INT32 = 6,
  IDEM_ELEMENT_INT64 = 7,
  IDEM_ELEMENT_STRING = 8,
  IDEM_ELEMENT_BOOL = 9,
  IDEM_ELEMENT_FLOAT16 = 10,
  IDEM_ELEMENT_DOUBLE = 11,
  IDEM_ELEMENT_UINT32 = 12,
  IDEM_ELEMENT_UINT64 = 13,
  IDEM_ELEMENT_COMPLEX64 = 14,
  IDEM_ELEMENT_COMPLEX128 = 15,
  IDEM_ELEMENT_BFLOAT16 = 16,
  IDEM_ELEMENT_FLOAT8E4M3FN = 17,
  IDEM_ELEMENT_FLOAT8E4M3FNUZ = 18,
  IDEM_ELEMENT_FLOAT8E5M2 = 19,
  IDEM_ELEMENT_FLOAT8E5M2FNUZ = 20,
  IDEM_ELEMENT_UINT4 = 21,
  IDEM_ELEMENT_INT4 = 22,
  IDEM_ELEMENT_FLOAT4E2M1 = 23,
  IDEM_ELEMENT_FLOAT8E8M0 = 24,
  IDEM_ELEMENT_UINT2 = 25,
  IDEM_ELEMENT_INT2 = 26
} idem_element_type_t;

typedef enum idem_value_kind_t {
  IDEM_VALUE_TENSOR = 0,
  IDEM_VALUE_SEQUENCE = 1,
  IDEM_VALUE_OPTIONAL = 2
} idem_value_kind_t;

/* ---- Version ------------------------------------------------------------------------------ */

/* The library's version, "MAJOR.MINOR.PATCH" (static storage; never fails; any thread). */
IDEM_API const char* idem_version(void);

/* ---- Status ------------------------------------------------------------------------------- */

/* The code of `status`: IDEM_OK for NULL (success), IDEM_INVALID_ARGUMENT for a handle that is not
 * a status. */
IDEM_API idem_status_code_t idem_status_code(const idem_status_t* status);

/* idem's message (NUL-terminated, owned by `status`): "" for NULL, a fixed text for a handle that
 * is not a status. */
IDEM_API const char* idem_status_message(const idem_status_t* status);

/* Frees `status`. NULL and the static out-of-memory status are accepted. */
IDEM_API void idem_status_release(idem_status_t* status);

/* ---- Session options ---------------------------------------------------------------------- */

/* Limits (idem::Limits): what a hostile model may cost. See README "Limits" for the defaults. */
typedef enum idem_limit_t {
  IDEM_LIMIT_MAX_MODEL_BYTES = 0,
  IDEM_LIMIT_MAX_TENSOR_BYTES = 1,
  IDEM_LIMIT_MAX_ELEMENTS = 2,
  IDEM_LIMIT_MAX_TYPE_DEPTH = 3, /* at most INT32_MAX */
  IDEM_LIMIT_MAX_NODES = 4,
  IDEM_LIMIT_MAX_VALUES = 5,
  IDEM_LIMIT_MAX_SEQUENCE_LENGTH = 6,
  IDEM_LIMIT_MAX_GRAPH_DEPTH = 7, /* at most INT32_MAX */
  IDEM_LIMIT_MAX_RUN_BYTES = 8
} idem_limit_t;

/* How external data is brought in (idem::ExternalDataMode). */
typedef enum idem_external_data_mode_t {
  IDEM_EXTERNAL_DATA_MAP = 0, /* mapped read-only (default); the file must stay unchanged */
  IDEM_EXTERNAL_DATA_COPY = 1 /* copied at load */
} idem_external_data_mode_t;

/* Creates options holding the defaults (idem::SessionOptions{}). The caller releases them; a
 * session copies its options at creation, so they may be released or reused right after. */
IDEM_API idem_status_t* idem_session_options_create(idem_session_options_t** out_options);
IDEM_API void idem_session_options_release(idem_session_options_t* options);

/* Sets one limit. An unknown `limit` or a value out of the field's range: IDEM_INVALID_ARGUMENT. */
IDEM_API idem_status_t* idem_session_options_set_limit(idem_session_options_t* options,
                                                       int32_t limit, uint64_t value);
/* Reads one limit (defaults included). */
IDEM_API idem_status_t* idem_session_options_get_limit(const idem_session_options_t* options,
                                                       int32_t limit, uint64_t* out_value);
/* Non-zero (default): Identity nodes are erased from the plan; zero: they run (still no copy). */
IDEM_API idem_status_t* idem_session_options_set_eliminate_identity(idem_session_options_t* options,
                                                                    int enabled);
IDEM_API idem_status_t* idem_session_options_set_external_data_mode(idem_session_options_t* options,
                                                                    int32_t mode);
/* Non-zero: accept external-data files with more than one hard link (default: refused). */
IDEM_API idem_status_t* idem_session_options_set_allow_external_hard_links(
    idem_session_options_t* options, int allowed);
/* Threads one product may be split over, the calling thread included (idem::SessionOptions::
 * intra_op_threads; default 1). The session's workers sleep between products, never spin; results
 * are the same bits for every count. Outside [1, 1024]: IDEM_INVALID_ARGUMENT. */
IDEM_API idem_status_t* idem_session_options_set_intra_op_threads(idem_session_options_t* options,
                                                                  int32_t threads);
/* Non-zero: every operator runs its reference kernel (idem::SessionOptions::reference_kernels, the
 * fast kernels' oracle); zero (default): the fast kernels. */
IDEM_API idem_status_t* idem_session_options_set_reference_kernels(idem_session_options_t* options,
                                                                   int enabled);

/* ---- Sessions ----------------------------------------------------------------------------- */

/* Loads, validates and plans the .onnx file at `path` (NUL-terminated); external data resolves
 * inside its folder. `options` may be NULL for the defaults. On success *out_session is a new
 * session the caller releases. */
IDEM_API idem_status_t* idem_session_create(const char* path, const idem_session_options_t* options,
                                            idem_session_t** out_session);

/* As idem_session_create from a serialized ModelProto (`bytes`, `size`; copied as needed, so the
 * caller may free them on return). External data resolves against `base_dir`; NULL or "" refuses
 * external data. */
IDEM_API idem_status_t* idem_session_create_from_bytes(const void* bytes, size_t size,
                                                       const char* base_dir,
                                                       const idem_session_options_t* options,
                                                       idem_session_t** out_session);

/* Frees the session. Values it returned stay valid (they hold their own references). */
IDEM_API void idem_session_release(idem_session_t* session);

/* Graph inputs to feed (those without an initializer), in graph order, and graph outputs. */
IDEM_API idem_status_t* idem_session_input_count(const idem_session_t* session, size_t* out_count);
IDEM_API idem_status_t* idem_session_output_count(const idem_session_t* session, size_t* out_count);
/* Name of input/output `index` (IDEM_OUT_OF_RANGE past the count); owned by the session. */
IDEM_API idem_status_t* idem_session_input_name(const idem_session_t* session, size_t index,
                                                const char** out_name);
IDEM_API idem_status_t* idem_session_output_name(const idem_session_t* session, size_t index,
                                                 const char** out_name);
/* Declared type in ONNX notation, without shape: "tensor(float)", "seq(tensor(int64))",
 * "optional(seq(tensor(string)))" (kind prefix, then the element type's ONNX name). Owned by the
 * session. */
IDEM_API idem_status_t* idem_session_input_type(const idem_session_t* session, size_t index,
                                                const char** out_type);
IDEM_API idem_status_t* idem_session_output_type(const idem_session_t* session, size_t index,
                                                 const char** out_type);

/* Runs the model. `inputs` holds n_inputs values in input order (n_inputs must equal the input
 * count); the run does not take them over (the caller still releases its handles). `outputs` has
 * room for n_outputs handles (must equal the output count); on success each is a new value the
 * caller releases (it may share memory with an input: Identity copies nothing). On error every
 * outputs[i] is set to NULL. Thread-safe: many threads may run one session at once. */
IDEM_API idem_status_t* idem_session_run(const idem_session_t* session,
                                         const idem_value_t* const* inputs, size_t n_inputs,
                                         idem_value_t** outputs, size_t n_outputs);

/* Declared shape of tensor input/output `index`. On success *out_rank is the declared rank, or -1
 * when the model declares no shape (rank unknown). When 0 < capacity < rank the call fails with
 * IDEM_OUT_OF_RANGE and writes nothing; otherwise dims_out[0..rank) receive the dims: the size for
 * a fixed dim, -1 for a symbolic dim (name: idem_session_input_dim_name) or an unknown one.
 * capacity 0 (dims_out may then be NULL) queries the rank alone. Inputs/outputs that are not
 * tensors (sequences, optionals): IDEM_INVALID_ARGUMENT. Reads only immutable session data:
 * thread-safe like every session query. */
IDEM_API idem_status_t* idem_session_input_shape(const idem_session_t* session, size_t index,
                                                 int64_t* dims_out, size_t capacity,
                                                 int64_t* out_rank);
IDEM_API idem_status_t* idem_session_output_shape(const idem_session_t* session, size_t index,
                                                  int64_t* dims_out, size_t capacity,
                                                  int64_t* out_rank);
/* The symbolic name of dim `dim` of tensor input/output `index` ("N" in float[N,3]), NUL-terminated
 * and owned by the session; NULL when that dim is fixed or unknown. IDEM_OUT_OF_RANGE when `dim` is
 * not below the declared rank (or the shape is undeclared); IDEM_INVALID_ARGUMENT for non-tensors.
 */
IDEM_API idem_status_t* idem_session_input_dim_name(const idem_session_t* session, size_t index,
                                                    size_t dim, const char** out_name);
IDEM_API idem_status_t* idem_session_output_dim_name(const idem_session_t* session, size_t index,
                                                     size_t dim, const char** out_name);

/* ---- Run options -------------------------------------------------------------------------- */

/* Per-run options (idem::RunOptions): a cancellation flag and a timeout. They are checked at every
 * iteration of a Loop, Scan or SequenceMap node; a run is stopped only there (a model without such
 * nodes always runs to completion). One options object may serve any number of runs, at once or
 * one after another. Thread-safety: every function below except release may be called from any
 * thread at any time, including while runs use the options (the state is atomic); release must not
 * race with other calls on the same options nor with runs using them. */
IDEM_API idem_status_t* idem_run_options_create(idem_run_options_t** out_run_options);
IDEM_API void idem_run_options_release(idem_run_options_t* run_options);

/* Sets the cancel flag: every run using these options, in progress or started later, fails with
 * IDEM_CANCELLED at its next Loop/Scan/SequenceMap iteration (runs then set every output to NULL).
 * The flag stays set until idem_run_options_reset_cancel. */
IDEM_API idem_status_t* idem_run_options_cancel(idem_run_options_t* run_options);
IDEM_API idem_status_t* idem_run_options_reset_cancel(idem_run_options_t* run_options);

/* A relative timeout: each run using these options gets the deadline "start of that run plus
 * timeout_ns" on the monotonic clock (std::chrono::steady_clock, CLOCK_MONOTONIC) and fails with
 * IDEM_DEADLINE_EXCEEDED at the first Loop/Scan/SequenceMap iteration past it. Relative, not
 * absolute, so one options object can be reused for many runs. 0 expires at the first check; huge
 * values saturate (no overflow). Default: no deadline; clear_timeout restores that. Changing the
 * timeout does not affect runs already started. */
IDEM_API idem_status_t* idem_run_options_set_timeout_ns(idem_run_options_t* run_options,
                                                        uint64_t timeout_ns);
IDEM_API idem_status_t* idem_run_options_clear_timeout(idem_run_options_t* run_options);

/* idem_session_run with run options (NULL run_options: the defaults, i.e. idem_session_run). On
 * cancellation or timeout the status is IDEM_CANCELLED / IDEM_DEADLINE_EXCEEDED naming the node,
 * and every outputs[i] is NULL. */
IDEM_API idem_status_t* idem_session_run_with_options(const idem_session_t* session,
                                                      const idem_run_options_t* run_options,
                                                      const idem_value_t* const* inputs,
                                                      size_t n_inputs, idem_value_t** outputs,
                                                      size_t n_outputs);

/* A caller-owned destination for idem_session_run_into. */
typedef struct idem_output_buffer_t {
  void* data;           /* in: where the output's packed bytes go */
  size_t capacity;      /* in: bytes available at data */
  int64_t* dims;        /* in: room for the output's dims (may be NULL when dims_capacity is 0) */
  size_t dims_capacity; /* in: entries available at dims */
  size_t byte_size;     /* out: bytes written at data */
  size_t rank;          /* out: the output's rank (dims[0..rank) written) */
  int32_t element_type; /* out: the output's element type (ONNX code) */
} idem_output_buffer_t;

/* Runs the model and copies each output into caller memory (the one place idem copies an
 * Identity's bytes). Every output must be a non-string tensor that fits its buffer (capacity and
 * dims_capacity), else an error names it. Every output is checked before any is written, so after
 * an error nothing has been written (neither data nor the out fields). Same threading rules as
 * idem_session_run. */
IDEM_API idem_status_t* idem_session_run_into(const idem_session_t* session,
                                              const idem_value_t* const* inputs, size_t n_inputs,
                                              idem_output_buffer_t* outputs, size_t n_outputs);

/* idem_session_run_into with run options (NULL run_options: idem_session_run_into). On
 * cancellation or timeout the status is IDEM_CANCELLED / IDEM_DEADLINE_EXCEEDED naming the node,
 * and nothing has been written to the output buffers. */
IDEM_API idem_status_t* idem_session_run_into_with_options(const idem_session_t* session,
                                                           const idem_run_options_t* run_options,
                                                           const idem_value_t* const* inputs,
                                                           size_t n_inputs,
                                                           idem_output_buffer_t* outputs,
                                                           size_t n_outputs);

/* ---- Values ------------------------------------------------------------------------------- */

/* Called once with (release_ctx, data) when idem no longer needs borrowed tensor data. It may run
 * on any thread that releases the last value referring to the data. */
typedef void (*idem_release_fn)(void* release_ctx, const void* data);

/* A tensor of `element_type` (not IDEM_ELEMENT_STRING: see below) with `rank` dims (each >= 0)
 * over `data`, which must hold exactly the packed size: product(dims) elements, 4-bit types two
 * per byte and 2-bit types four per byte, low bits first, rounded up to whole bytes.
 * The data is borrowed, not copied, and must stay unchanged while idem uses it:
 *  - release_fn != NULL: ownership of the data passes to idem at the call, whatever its result:
 *    release_fn(release_ctx, data) is called exactly once, when the last value referring to the
 *    data (this one, sequences and optionals holding it, run outputs sharing it) is released, or
 *    before this function returns if it fails.
 *  - release_fn == NULL: the caller keeps the data alive and unchanged until every value derived
 *    from it has been released. */
IDEM_API idem_status_t* idem_value_create_tensor(int32_t element_type, const int64_t* dims,
                                                 size_t rank, const void* data, size_t byte_size,
                                                 idem_release_fn release_fn, void* release_ctx,
                                                 idem_value_t** out_value);

/* A string tensor: `count` byte strings (strings[i] of lengths[i] bytes; any bytes, NUL included),
 * count == product(dims). The bytes are copied. */
IDEM_API idem_status_t* idem_value_create_string_tensor(const int64_t* dims, size_t rank,
                                                        const char* const* strings,
                                                        const size_t* lengths, size_t count,
                                                        idem_value_t** out_value);

/* A sequence of `count` tensors, each of `element_type` (which also types an empty sequence). The
 * sequence shares the tensors; the caller still releases its own handles. */
IDEM_API idem_status_t* idem_value_create_sequence(int32_t element_type,
                                                   const idem_value_t* const* tensors, size_t count,
                                                   idem_value_t** out_value);

/* An optional holding `element` (a tensor or a sequence; shared, not copied). */
IDEM_API idem_status_t* idem_value_create_optional(const idem_value_t* element,
                                                   idem_value_t** out_value);

/* An empty optional of type optional(tensor(element_type)) (element_kind IDEM_VALUE_TENSOR) or
 * optional(seq(tensor(element_type))) (IDEM_VALUE_SEQUENCE). */
IDEM_API idem_status_t* idem_value_create_empty_optional(int32_t element_kind, int32_t element_type,
                                                         idem_value_t** out_value);

/* Drops this handle; the data lives on while other values share it. */
IDEM_API void idem_value_release(idem_value_t* value);

IDEM_API idem_status_t* idem_value_kind(const idem_value_t* value, idem_value_kind_t* out_kind);

/* Tensor accessors: IDEM_INVALID_ARGUMENT when `value` is not a tensor. */
IDEM_API idem_status_t* idem_tensor_element_type(const idem_value_t* value,
                                                 int32_t* out_element_type);
IDEM_API idem_status_t* idem_tensor_rank(const idem_value_t* value, size_t* out_rank);
/* The rank dims (owned by the value; NULL or any pointer when the rank is 0). */
IDEM_API idem_status_t* idem_tensor_dims(const idem_value_t* value, const int64_t** out_dims);
/* The packed bytes (owned by the value, read-only; may be NULL when byte_size is 0). Not for
 * string tensors (IDEM_INVALID_ARGUMENT): use idem_tensor_string. */
IDEM_API idem_status_t* idem_tensor_data(const idem_value_t* value, const void** out_data);
/* Size of the packed bytes; 0 for string tensors. */
IDEM_API idem_status_t* idem_tensor_byte_size(const idem_value_t* value, size_t* out_byte_size);
/* String `index` (row-major) of a string tensor: its bytes (owned by the value, not
 * NUL-terminated in general) and length. */
IDEM_API idem_status_t* idem_tensor_string(const idem_value_t* value, size_t index,
                                           const char** out_data, size_t* out_length);

/* Sequence accessors: IDEM_INVALID_ARGUMENT when `value` is not a sequence. */
IDEM_API idem_status_t* idem_sequence_length(const idem_value_t* value, size_t* out_length);
/* Element `index` (IDEM_OUT_OF_RANGE past the length) as a new handle the caller releases. */
IDEM_API idem_status_t* idem_sequence_at(const idem_value_t* value, size_t index,
                                         idem_value_t** out_element);

/* Optional accessors: IDEM_INVALID_ARGUMENT when `value` is not an optional. */
IDEM_API idem_status_t* idem_optional_has_value(const idem_value_t* value, int* out_has_value);
/* The contained value as a new handle the caller releases; IDEM_INVALID_ARGUMENT when empty. */
IDEM_API idem_status_t* idem_optional_value(const idem_value_t* value, idem_value_t** out_element);

#ifdef __cplusplus
} /* extern "C" */
#endif

/* NOLINTEND(modernize-deprecated-headers,modernize-use-using) */

#endif /* IDEM_C_API_H_ */
