/* The C API from C (C99): every function of idem/c_api.h, its ownership rules and its errors.
 *
 * usage: capi_test DATA_DIR [--threads]
 *   DATA_DIR holds capi/kinds.onnx, capi/loop.onnx and seed/test_cc_identity_opt/.
 *   --threads: only the concurrency check (one session and one set of values shared by 4 threads;
 *   ctest `CApiConcurrency`, also run under TSan by scripts/sanitize.sh thread).
 * Prints each failed check and exits 1 if any failed. Runs in the normal suite and under
 * ASan+UBSan (scripts/sanitize.sh), which also catches leaks and double releases. */
#define _POSIX_C_SOURCE 200809L
#include <limits.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "idem/c_api.h"

static int g_checks = 0;
static int g_failures = 0;

#define CHECK(cond)                                                            \
  do {                                                                         \
    ++g_checks;                                                                \
    if (!(cond)) {                                                             \
      fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond); \
      ++g_failures;                                                            \
    }                                                                          \
  } while (0)

/* A call that must succeed; the test cannot go on without it. */
#define MUST(expr)                                                                     \
  do {                                                                                 \
    idem_status_t* must_status_ = (expr);                                              \
    ++g_checks;                                                                        \
    if (must_status_ != NULL) {                                                        \
      fprintf(stderr, "%s:%d: %s failed: code %d: %s\n", __FILE__, __LINE__, #expr,    \
              (int)idem_status_code(must_status_), idem_status_message(must_status_)); \
      idem_status_release(must_status_);                                               \
      exit(1);                                                                         \
    }                                                                                  \
  } while (0)

/* A call that must fail with `code` and a message containing `fragment`. */
#define EXPECT_ERROR(expr, code, fragment) expect_error((expr), (code), (fragment), #expr, __LINE__)

static void expect_error(idem_status_t* status, idem_status_code_t code, const char* fragment,
                         const char* expr, int line) {
  ++g_checks;
  if (status == NULL) {
    fprintf(stderr, "%s:%d: %s succeeded, expected code %d\n", __FILE__, line, expr, (int)code);
    ++g_failures;
    return;
  }
  if (idem_status_code(status) != code || strstr(idem_status_message(status), fragment) == NULL) {
    fprintf(stderr, "%s:%d: %s: got code %d \"%s\", expected code %d containing \"%s\"\n", __FILE__,
            line, expr, (int)idem_status_code(status), idem_status_message(status), (int)code,
            fragment);
    ++g_failures;
  }
  idem_status_release(status);
}

/* Counts release_fn calls per buffer. */
typedef struct {
  int calls;
  const void* last_data;
} release_counter_t;

static void count_release(void* ctx, const void* data) {
  release_counter_t* counter = (release_counter_t*)ctx;
  counter->calls++;
  counter->last_data = data;
}

static char g_path[4096];
static const char* data_path(const char* dir, const char* rel) {
  snprintf(g_path, sizeof(g_path), "%s/%s", dir, rel);
  return g_path;
}

static void* read_file(const char* path, size_t* size) {
  FILE* f = fopen(path, "rb");
  void* bytes;
  long n;
  if (f == NULL) return NULL;
  fseek(f, 0, SEEK_END);
  n = ftell(f);
  fseek(f, 0, SEEK_SET);
  bytes = malloc((size_t)n);
  if (bytes != NULL && fread(bytes, 1, (size_t)n, f) != (size_t)n) {
    free(bytes);
    bytes = NULL;
  }
  fclose(f);
  *size = (size_t)n;
  return bytes;
}

static void test_version_and_status(void) {
  const char* version = idem_version();
  CHECK(version != NULL && strcmp(version, IDEM_EXPECTED_VERSION) == 0);
  CHECK(idem_status_code(NULL) == IDEM_OK);
  CHECK(strcmp(idem_status_message(NULL), "") == 0);
  idem_status_release(NULL); /* no-op */
}

static void test_options(const char* dir) {
  idem_session_options_t* options = NULL;
  idem_session_t* session = NULL;
  uint64_t value = 0;

  MUST(idem_session_options_create(&options));
  MUST(idem_session_options_get_limit(options, IDEM_LIMIT_MAX_NODES, &value));
  CHECK(value == 1000000); /* idem::Limits default */
  MUST(idem_session_options_get_limit(options, IDEM_LIMIT_MAX_TYPE_DEPTH, &value));
  CHECK(value == 8);
  MUST(idem_session_options_set_limit(options, IDEM_LIMIT_MAX_SEQUENCE_LENGTH, 7));
  MUST(idem_session_options_get_limit(options, IDEM_LIMIT_MAX_SEQUENCE_LENGTH, &value));
  CHECK(value == 7);
  EXPECT_ERROR(
      idem_session_options_set_limit(options, IDEM_LIMIT_MAX_TYPE_DEPTH, (uint64_t)INT_MAX + 1),
      IDEM_INVALID_ARGUMENT, "at most");
  EXPECT_ERROR(idem_session_options_set_limit(options, 99, 1), IDEM_INVALID_ARGUMENT,
               "unknown limit 99");
  EXPECT_ERROR(idem_session_options_get_limit(options, 99, &value), IDEM_INVALID_ARGUMENT,
               "unknown limit 99");
  EXPECT_ERROR(idem_session_options_get_limit(options, IDEM_LIMIT_MAX_NODES, NULL),
               IDEM_INVALID_ARGUMENT, "out_value is NULL");
  MUST(idem_session_options_set_external_data_mode(options, IDEM_EXTERNAL_DATA_COPY));
  EXPECT_ERROR(idem_session_options_set_external_data_mode(options, 7), IDEM_INVALID_ARGUMENT,
               "unknown mode 7");
  MUST(idem_session_options_set_allow_external_hard_links(options, 1));
  MUST(idem_session_options_set_eliminate_identity(options, 0));
  MUST(idem_session_options_set_intra_op_threads(options, 2));
  MUST(idem_session_options_set_reference_kernels(options, 1));
  MUST(idem_session_options_set_reference_kernels(options, 0));
  EXPECT_ERROR(idem_session_options_set_intra_op_threads(options, 0), IDEM_INVALID_ARGUMENT,
               "threads is 0; it must be in [1, 1024]");
  EXPECT_ERROR(idem_session_options_set_intra_op_threads(options, 1025), IDEM_INVALID_ARGUMENT,
               "threads is 1025");
  EXPECT_ERROR(idem_session_options_set_intra_op_threads(NULL, 1), IDEM_INVALID_ARGUMENT,
               "options is NULL");
  EXPECT_ERROR(idem_session_options_set_reference_kernels(NULL, 1), IDEM_INVALID_ARGUMENT,
               "options is NULL");
  EXPECT_ERROR(idem_session_options_set_limit(NULL, IDEM_LIMIT_MAX_NODES, 1), IDEM_INVALID_ARGUMENT,
               "options is NULL");
  EXPECT_ERROR(idem_session_options_set_eliminate_identity(NULL, 1), IDEM_INVALID_ARGUMENT,
               "options is NULL");
  EXPECT_ERROR(idem_session_options_set_allow_external_hard_links(NULL, 1), IDEM_INVALID_ARGUMENT,
               "options is NULL");
  EXPECT_ERROR(idem_session_options_set_external_data_mode(NULL, IDEM_EXTERNAL_DATA_MAP),
               IDEM_INVALID_ARGUMENT, "options is NULL");
  EXPECT_ERROR(idem_session_options_create(NULL), IDEM_INVALID_ARGUMENT, "out_options is NULL");

  /* The limits reach the loader: kinds.onnx has 4 nodes. */
  MUST(idem_session_options_set_limit(options, IDEM_LIMIT_MAX_NODES, 3));
  EXPECT_ERROR(idem_session_create(data_path(dir, "capi/kinds.onnx"), options, &session),
               IDEM_RESOURCE_EXHAUSTED, "max_nodes 3");
  CHECK(session == NULL);
  MUST(idem_session_options_set_limit(options, IDEM_LIMIT_MAX_NODES, 4));
  MUST(idem_session_create(data_path(dir, "capi/kinds.onnx"), options, &session));
  /* A session copies its options: releasing them first is fine. */
  idem_session_options_release(options);
  idem_session_release(session);
  idem_session_options_release(NULL); /* no-op */
}

static void test_session_metadata(idem_session_t* session) {
  static const char* const kInputs[] = {"x", "s", "o", "t"};
  static const char* const kInputTypes[] = {"tensor(float)", "seq(tensor(float))",
                                            "optional(tensor(int64))", "tensor(string)"};
  static const char* const kOutputs[] = {"y", "s_out", "o_out", "t_out"};
  size_t count = 0, i;
  const char* text = NULL;

  MUST(idem_session_input_count(session, &count));
  CHECK(count == 4);
  MUST(idem_session_output_count(session, &count));
  CHECK(count == 4);
  for (i = 0; i < 4; ++i) {
    MUST(idem_session_input_name(session, i, &text));
    CHECK(strcmp(text, kInputs[i]) == 0);
    MUST(idem_session_input_type(session, i, &text));
    CHECK(strcmp(text, kInputTypes[i]) == 0);
    MUST(idem_session_output_name(session, i, &text));
    CHECK(strcmp(text, kOutputs[i]) == 0);
    MUST(idem_session_output_type(session, i, &text));
    CHECK(strcmp(text, kInputTypes[i]) == 0); /* Identity: same types */
  }
  EXPECT_ERROR(idem_session_input_name(session, 4, &text), IDEM_OUT_OF_RANGE, "input 4 of 4");
  EXPECT_ERROR(idem_session_output_name(session, 9, &text), IDEM_OUT_OF_RANGE, "output 9 of 4");
  EXPECT_ERROR(idem_session_input_type(session, 4, &text), IDEM_OUT_OF_RANGE, "input 4 of 4");
  EXPECT_ERROR(idem_session_output_type(session, 4, &text), IDEM_OUT_OF_RANGE, "output 4 of 4");
  EXPECT_ERROR(idem_session_input_count(NULL, &count), IDEM_INVALID_ARGUMENT, "session is NULL");
  EXPECT_ERROR(idem_session_output_count(session, NULL), IDEM_INVALID_ARGUMENT,
               "out_count is NULL");
}

/* Builds the four feeds of kinds.onnx. x borrows `x_data` with a release callback. */
typedef struct {
  idem_value_t* x;
  idem_value_t* seq;
  idem_value_t* opt;
  idem_value_t* str;
  idem_value_t* empty_opt;
} feeds_t;

static float g_x_data[6] = {1.0f, -0.0f, 3.5f, 4.0f, 5.0f, 6.0f};
static float g_a_data[2] = {7.0f, 8.0f};
static float g_b_data[3] = {9.0f, 10.0f, 11.0f};
static int64_t g_i_data[2] = {-1, INT64_MAX};

static void make_feeds(feeds_t* f, release_counter_t* x_counter) {
  const int64_t x_dims[2] = {2, 3};
  const int64_t a_dims[1] = {2};
  const int64_t b_dims[1] = {3};
  const int64_t i_dims[1] = {2};
  const int64_t s_dims[1] = {3};
  const char* const strings[3] = {"ab", "c\0d", ""};
  const size_t lengths[3] = {2, 3, 0};
  idem_value_t *a = NULL, *b = NULL, *i = NULL;
  const idem_value_t* elements[2];

  MUST(idem_value_create_tensor(IDEM_ELEMENT_FLOAT, x_dims, 2, g_x_data, sizeof(g_x_data),
                                count_release, x_counter, &f->x));
  MUST(idem_value_create_tensor(IDEM_ELEMENT_FLOAT, a_dims, 1, g_a_data, sizeof(g_a_data), NULL,
                                NULL, &a));
  MUST(idem_value_create_tensor(IDEM_ELEMENT_FLOAT, b_dims, 1, g_b_data, sizeof(g_b_data), NULL,
                                NULL, &b));
  elements[0] = a;
  elements[1] = b;
  MUST(idem_value_create_sequence(IDEM_ELEMENT_FLOAT, elements, 2, &f->seq));
  MUST(idem_value_create_tensor(IDEM_ELEMENT_INT64, i_dims, 1, g_i_data, sizeof(g_i_data), NULL,
                                NULL, &i));
  MUST(idem_value_create_optional(i, &f->opt));
  MUST(idem_value_create_string_tensor(s_dims, 1, strings, lengths, 3, &f->str));
  MUST(idem_value_create_empty_optional(IDEM_VALUE_TENSOR, IDEM_ELEMENT_INT64, &f->empty_opt));
  /* The sequence and the optional hold their own references. */
  idem_value_release(a);
  idem_value_release(b);
  idem_value_release(i);
}

static void release_feeds(feeds_t* f) {
  idem_value_release(f->x);
  idem_value_release(f->seq);
  idem_value_release(f->opt);
  idem_value_release(f->str);
  idem_value_release(f->empty_opt);
}

static void test_value_accessors(const feeds_t* f) {
  idem_value_kind_t kind;
  int32_t element_type = 0;
  size_t rank = 0, size = 0, length = 0;
  const int64_t* dims = NULL;
  const void* data = NULL;
  const char* bytes = NULL;
  int has = -1;
  idem_value_t* element = NULL;

  MUST(idem_value_kind(f->x, &kind));
  CHECK(kind == IDEM_VALUE_TENSOR);
  MUST(idem_tensor_element_type(f->x, &element_type));
  CHECK(element_type == IDEM_ELEMENT_FLOAT);
  MUST(idem_tensor_rank(f->x, &rank));
  CHECK(rank == 2);
  MUST(idem_tensor_dims(f->x, &dims));
  CHECK(dims[0] == 2 && dims[1] == 3);
  MUST(idem_tensor_data(f->x, &data));
  CHECK(data == (const void*)g_x_data); /* borrowed, not copied */
  MUST(idem_tensor_byte_size(f->x, &size));
  CHECK(size == sizeof(g_x_data));

  MUST(idem_value_kind(f->seq, &kind));
  CHECK(kind == IDEM_VALUE_SEQUENCE);
  MUST(idem_sequence_length(f->seq, &length));
  CHECK(length == 2);
  MUST(idem_sequence_at(f->seq, 1, &element));
  MUST(idem_tensor_data(element, &data));
  CHECK(data == (const void*)g_b_data);
  idem_value_release(element);
  EXPECT_ERROR(idem_sequence_at(f->seq, 2, &element), IDEM_OUT_OF_RANGE,
               "position 2 of a sequence of 2");

  MUST(idem_value_kind(f->opt, &kind));
  CHECK(kind == IDEM_VALUE_OPTIONAL);
  MUST(idem_optional_has_value(f->opt, &has));
  CHECK(has == 1);
  MUST(idem_optional_value(f->opt, &element));
  MUST(idem_tensor_data(element, &data));
  CHECK(data == (const void*)g_i_data);
  idem_value_release(element);
  MUST(idem_optional_has_value(f->empty_opt, &has));
  CHECK(has == 0);
  EXPECT_ERROR(idem_optional_value(f->empty_opt, &element), IDEM_INVALID_ARGUMENT,
               "optional(tensor(int64))) is empty");

  MUST(idem_tensor_element_type(f->str, &element_type));
  CHECK(element_type == IDEM_ELEMENT_STRING);
  MUST(idem_tensor_string(f->str, 1, &bytes, &length));
  CHECK(length == 3 && memcmp(bytes, "c\0d", 3) == 0); /* NUL survives */
  MUST(idem_tensor_string(f->str, 2, &bytes, &length));
  CHECK(length == 0);
  MUST(idem_tensor_byte_size(f->str, &size));
  CHECK(size == 0);
  EXPECT_ERROR(idem_tensor_string(f->str, 3, &bytes, &length), IDEM_OUT_OF_RANGE, "string 3 of 3");
  EXPECT_ERROR(idem_tensor_data(f->str, &data), IDEM_INVALID_ARGUMENT, "idem_tensor_string");
  EXPECT_ERROR(idem_tensor_string(f->x, 0, &bytes, &length), IDEM_INVALID_ARGUMENT,
               "not a string tensor");

  /* Accessors of the wrong kind. */
  EXPECT_ERROR(idem_tensor_rank(f->seq, &rank), IDEM_INVALID_ARGUMENT,
               "seq(tensor(float)), not a tensor");
  EXPECT_ERROR(idem_tensor_element_type(f->opt, &element_type), IDEM_INVALID_ARGUMENT,
               "not a tensor");
  EXPECT_ERROR(idem_tensor_dims(f->seq, &dims), IDEM_INVALID_ARGUMENT, "not a tensor");
  EXPECT_ERROR(idem_tensor_byte_size(f->seq, &size), IDEM_INVALID_ARGUMENT, "not a tensor");
  EXPECT_ERROR(idem_sequence_length(f->x, &length), IDEM_INVALID_ARGUMENT, "not a sequence");
  EXPECT_ERROR(idem_sequence_at(f->opt, 0, &element), IDEM_INVALID_ARGUMENT, "not a sequence");
  EXPECT_ERROR(idem_optional_has_value(f->x, &has), IDEM_INVALID_ARGUMENT, "not an optional");
  EXPECT_ERROR(idem_optional_value(f->seq, &element), IDEM_INVALID_ARGUMENT, "not an optional");
  EXPECT_ERROR(idem_value_kind(NULL, &kind), IDEM_INVALID_ARGUMENT, "value is NULL");
  EXPECT_ERROR(idem_value_kind(f->x, NULL), IDEM_INVALID_ARGUMENT, "out_kind is NULL");
}

static void test_value_errors(void) {
  const int64_t dims[2] = {2, 3};
  const int64_t negative[1] = {-1};
  const int64_t four[1] = {3};
  float data[6] = {0};
  uint8_t int4[2] = {0x21, 0x03}; /* three int4 elements fit two bytes */
  release_counter_t counter = {0, NULL};
  idem_value_t *v = NULL, *seq = NULL, *opt = NULL;
  const idem_value_t* elements[1];
  const char* strings[1] = {"x"};
  size_t lengths[1] = {1};

  /* A wrong size fails, and the data is released before the call returns. */
  EXPECT_ERROR(
      idem_value_create_tensor(IDEM_ELEMENT_FLOAT, dims, 2, data, 20, count_release, &counter, &v),
      IDEM_INVALID_ARGUMENT, "24");
  CHECK(counter.calls == 1 && counter.last_data == (const void*)data);
  EXPECT_ERROR(idem_value_create_tensor(99, dims, 2, data, 24, count_release, &counter, &v),
               IDEM_INVALID_ARGUMENT, "unknown element type 99");
  CHECK(counter.calls == 2);
  EXPECT_ERROR(idem_value_create_tensor(IDEM_ELEMENT_FLOAT, dims, 2, data, 24, count_release,
                                        &counter, NULL),
               IDEM_INVALID_ARGUMENT, "out_value is NULL");
  CHECK(counter.calls == 3);
  CHECK(v == NULL);
  EXPECT_ERROR(idem_value_create_tensor(IDEM_ELEMENT_STRING, dims, 2, data, 24, NULL, NULL, &v),
               IDEM_INVALID_ARGUMENT, "idem_value_create_string_tensor");
  EXPECT_ERROR(idem_value_create_tensor(IDEM_ELEMENT_FLOAT, negative, 1, data, 0, NULL, NULL, &v),
               IDEM_INVALID_ARGUMENT, "-1");
  EXPECT_ERROR(idem_value_create_tensor(IDEM_ELEMENT_FLOAT, NULL, 2, data, 24, NULL, NULL, &v),
               IDEM_INVALID_ARGUMENT, "dims is NULL");
  EXPECT_ERROR(idem_value_create_tensor(IDEM_ELEMENT_FLOAT, dims, 2, NULL, 24, NULL, NULL, &v),
               IDEM_INVALID_ARGUMENT, "data is NULL");
  EXPECT_ERROR(idem_value_create_string_tensor(dims, 2, strings, lengths, 1, &v),
               IDEM_INVALID_ARGUMENT, "6");
  EXPECT_ERROR(idem_value_create_string_tensor(dims, 2, NULL, lengths, 1, &v),
               IDEM_INVALID_ARGUMENT, "strings is NULL");
  /* A C++ exception inside an entry point (here std::length_error from reserving more strings
   * than a vector can hold, thrown before anything is allocated) comes back as a status. */
  EXPECT_ERROR(idem_value_create_string_tensor(dims, 2, strings, lengths, SIZE_MAX / 2, &v),
               IDEM_RESOURCE_EXHAUSTED, "out of memory");
  EXPECT_ERROR(idem_value_create_empty_optional(IDEM_VALUE_OPTIONAL, IDEM_ELEMENT_FLOAT, &v),
               IDEM_INVALID_ARGUMENT, "tensor or a sequence");
  EXPECT_ERROR(idem_value_create_empty_optional(IDEM_VALUE_TENSOR, 0, &v), IDEM_INVALID_ARGUMENT,
               "unknown element type 0");
  EXPECT_ERROR(idem_value_create_optional(NULL, &v), IDEM_INVALID_ARGUMENT, "element is NULL");
  EXPECT_ERROR(idem_value_create_sequence(IDEM_ELEMENT_FLOAT, NULL, 1, &v), IDEM_INVALID_ARGUMENT,
               "tensors is NULL with count 1");
  EXPECT_ERROR(idem_value_create_sequence(-3, NULL, 0, &v), IDEM_INVALID_ARGUMENT,
               "unknown element type -3");
  CHECK(v == NULL);

  /* Sub-byte packing: three int4 elements in two bytes. */
  MUST(idem_value_create_tensor(IDEM_ELEMENT_INT4, four, 1, int4, 2, NULL, NULL, &v));
  /* A sequence's elements must all have its element type and be tensors. */
  elements[0] = v;
  EXPECT_ERROR(idem_value_create_sequence(IDEM_ELEMENT_FLOAT, elements, 1, &seq),
               IDEM_INVALID_ARGUMENT, "int4");
  MUST(idem_value_create_sequence(IDEM_ELEMENT_INT4, elements, 1, &seq));
  idem_value_release(v); /* the sequence keeps the tensor alive */
  v = NULL;
  elements[0] = seq;
  EXPECT_ERROR(idem_value_create_sequence(IDEM_ELEMENT_INT4, elements, 1, &opt),
               IDEM_INVALID_ARGUMENT, "");
  /* An empty sequence is typed by its element type; an optional may hold a sequence but not an
   * optional. */
  idem_value_release(seq);
  MUST(idem_value_create_sequence(IDEM_ELEMENT_DOUBLE, NULL, 0, &seq));
  MUST(idem_value_create_optional(seq, &opt));
  elements[0] = opt;
  EXPECT_ERROR(idem_value_create_optional(opt, &v), IDEM_INVALID_ARGUMENT, "");
  MUST(idem_value_create_empty_optional(IDEM_VALUE_SEQUENCE, IDEM_ELEMENT_DOUBLE, &v));
  idem_value_release(seq);
  idem_value_release(opt);
  idem_value_release(v);
  idem_value_release(NULL); /* no-op */
}

static void test_run(idem_session_t* session, int eliminate_identity) {
  feeds_t f;
  release_counter_t x_counter = {0, NULL};
  idem_value_t* outputs[4] = {NULL, NULL, NULL, NULL};
  const idem_value_t* inputs[4];
  const void* data = NULL;
  const char* bytes = NULL;
  size_t length = 0, i;
  int has = -1;
  idem_value_t* element = NULL;

  make_feeds(&f, &x_counter);
  test_value_accessors(&f);
  inputs[0] = f.x;
  inputs[1] = f.seq;
  inputs[2] = f.opt;
  inputs[3] = f.str;
  MUST(idem_session_run(session, inputs, 4, outputs, 4));
  /* Identity copies nothing, whether its node was erased or ran. */
  MUST(idem_tensor_data(outputs[0], &data));
  CHECK(data == (const void*)g_x_data);
  MUST(idem_sequence_length(outputs[1], &length));
  CHECK(length == 2);
  MUST(idem_sequence_at(outputs[1], 0, &element));
  MUST(idem_tensor_data(element, &data));
  CHECK(data == (const void*)g_a_data);
  idem_value_release(element);
  MUST(idem_optional_has_value(outputs[2], &has));
  CHECK(has == 1);
  MUST(idem_tensor_string(outputs[3], 1, &bytes, &length));
  CHECK(length == 3 && memcmp(bytes, "c\0d", 3) == 0);

  /* Streaming state: an output handle is fed back as the next run's input as it is (no copy, the
   * pattern of Silero VAD's state); three runs later the bytes are still x's. */
  {
    idem_value_t* state = outputs[0];
    idem_value_t* next[4] = {NULL, NULL, NULL, NULL};
    int run, k;
    for (run = 0; run < 3; ++run) {
      inputs[0] = state;
      MUST(idem_session_run(session, inputs, 4, next, 4));
      MUST(idem_tensor_data(next[0], &data));
      CHECK(data == (const void*)g_x_data);
      if (state != outputs[0]) idem_value_release(state);
      state = next[0];
      for (k = 1; k < 4; ++k) idem_value_release(next[k]);
    }
    idem_value_release(state);
    inputs[0] = f.x;
  }

  /* x's data stays borrowed while an output shares it; released exactly once afterwards. */
  idem_value_release(f.x);
  f.x = NULL;
  CHECK(x_counter.calls == 0);
  for (i = 0; i < 4; ++i) idem_value_release(outputs[i]);
  CHECK(x_counter.calls == 1 && x_counter.last_data == (const void*)g_x_data);

  /* An empty optional feed gives an empty optional output. */
  {
    const int64_t dims[2] = {0, 3};
    idem_value_t* empty_x = NULL;
    MUST(idem_value_create_tensor(IDEM_ELEMENT_FLOAT, dims, 2, NULL, 0, NULL, NULL, &empty_x));
    inputs[0] = empty_x;
    inputs[2] = f.empty_opt;
    MUST(idem_session_run(session, inputs, 4, outputs, 4));
    MUST(idem_optional_has_value(outputs[2], &has));
    CHECK(has == 0);
    for (i = 0; i < 4; ++i) idem_value_release(outputs[i]);

    /* Errors: the outputs are all NULL afterwards. */
    outputs[0] = (idem_value_t*)inputs[0]; /* garbage the run must overwrite */
    EXPECT_ERROR(idem_session_run(session, inputs, 3, outputs, 4), IDEM_INVALID_ARGUMENT,
                 "expected 4 feeds (x, s, o, t), got 3");
    CHECK(outputs[0] == NULL && outputs[3] == NULL);
    EXPECT_ERROR(idem_session_run(session, inputs, 4, outputs, 3), IDEM_INVALID_ARGUMENT,
                 "room for 3 outputs, the model has 4");
    inputs[0] = f.seq; /* a sequence fed to x: float[N,3] */
    EXPECT_ERROR(idem_session_run(session, inputs, 4, outputs, 4), IDEM_INVALID_ARGUMENT, "'x'");
    inputs[0] = NULL;
    EXPECT_ERROR(idem_session_run(session, inputs, 4, outputs, 4), IDEM_INVALID_ARGUMENT,
                 "inputs[0] is NULL");
    EXPECT_ERROR(idem_session_run(session, NULL, 4, outputs, 4), IDEM_INVALID_ARGUMENT,
                 "inputs is NULL");
    EXPECT_ERROR(idem_session_run(session, inputs, 4, NULL, 4), IDEM_INVALID_ARGUMENT,
                 "outputs is NULL");
    inputs[0] = empty_x;
    /* run_into refuses non-tensor outputs without writing anything. */
    {
      idem_output_buffer_t buffers[4];
      int64_t y_dims[2] = {-7, -7};
      memset(buffers, 0, sizeof(buffers));
      buffers[0].dims = y_dims; /* y is float[0,3]: fits */
      buffers[0].dims_capacity = 2;
      EXPECT_ERROR(idem_session_run_into(session, inputs, 4, buffers, 4), IDEM_INVALID_ARGUMENT,
                   "output 's_out' is seq(tensor(float))");
      CHECK(buffers[0].rank == 0 && y_dims[0] == -7);
    }
    idem_value_release(empty_x);
  }
  release_feeds(&f);
  (void)eliminate_identity;
}

static void test_run_into(const char* dir) {
  idem_session_t* session = NULL;
  idem_value_t* x = NULL;
  const int64_t dims[1] = {5};
  float data[5] = {1, 2, 3, 4, 5};
  float out[5];
  int64_t out_dims[2];
  idem_output_buffer_t buffer;
  const idem_value_t* inputs[1];
  size_t i;

  MUST(idem_session_create(data_path(dir, "seed/test_cc_identity_opt/model.onnx"), NULL, &session));
  MUST(idem_value_create_tensor(IDEM_ELEMENT_FLOAT, dims, 1, data, sizeof(data), NULL, NULL, &x));
  inputs[0] = x;
  memset(&buffer, 0, sizeof(buffer));
  for (i = 0; i < 5; ++i) out[i] = -1.0f;
  buffer.data = out;
  buffer.capacity = sizeof(out) - 1; /* one byte short */
  buffer.dims = out_dims;
  buffer.dims_capacity = 2;
  EXPECT_ERROR(idem_session_run_into(session, inputs, 1, &buffer, 1), IDEM_OUT_OF_RANGE,
               "needs 20 bytes, buffer holds 19");
  CHECK(out[0] == -1.0f && buffer.byte_size == 0); /* untouched */
  buffer.capacity = sizeof(out);
  buffer.dims_capacity = 1;
  EXPECT_ERROR(idem_session_run_into(session, inputs, 1, &buffer, 1), IDEM_OUT_OF_RANGE,
               "has rank 2, dims holds 1");
  CHECK(out[0] == -1.0f);
  buffer.dims_capacity = 2;
  EXPECT_ERROR(idem_session_run_into(session, inputs, 1, &buffer, 2), IDEM_INVALID_ARGUMENT,
               "2 output buffers, the model has 1");
  MUST(idem_session_run_into(session, inputs, 1, &buffer, 1));
  CHECK(buffer.byte_size == 20 && buffer.rank == 2 && buffer.element_type == IDEM_ELEMENT_FLOAT);
  CHECK(out_dims[0] == 1 && out_dims[1] == 5);
  CHECK(memcmp(out, data, sizeof(data)) == 0);
  idem_value_release(x);
  idem_session_release(session);
}

static void test_create_errors(const char* dir) {
  idem_session_t* session = NULL;
  size_t size = 0;
  void* bytes;
  const char garbage[4] = {'\x0a', '\x7f', 'x', 'y'};

  EXPECT_ERROR(idem_session_create(data_path(dir, "capi/missing.onnx"), NULL, &session),
               IDEM_NOT_FOUND, "missing.onnx");
  EXPECT_ERROR(idem_session_create(NULL, NULL, &session), IDEM_INVALID_ARGUMENT, "path is NULL");
  EXPECT_ERROR(idem_session_create(data_path(dir, "capi/kinds.onnx"), NULL, NULL),
               IDEM_INVALID_ARGUMENT, "out_session is NULL");
  EXPECT_ERROR(idem_session_create_from_bytes(garbage, sizeof(garbage), NULL, NULL, &session),
               IDEM_INVALID_MODEL, "");
  EXPECT_ERROR(idem_session_create_from_bytes(NULL, 10, NULL, NULL, &session),
               IDEM_INVALID_ARGUMENT, "bytes is NULL");
  CHECK(session == NULL);

  /* From bytes: the buffer may be freed right after creation. */
  bytes = read_file(data_path(dir, "capi/kinds.onnx"), &size);
  CHECK(bytes != NULL);
  if (bytes == NULL) return;
  MUST(idem_session_create_from_bytes(bytes, size, NULL, NULL, &session));
  memset(bytes, 0, size);
  free(bytes);
  test_session_metadata(session);
  test_run(session, 1);
  idem_session_release(session);
  idem_session_release(NULL); /* no-op */
}

/* A handle of one kind passed where another is expected: an error, never a crash or a free. */
static void test_wrong_handles(idem_session_t* session) {
  idem_value_t* value = NULL;
  idem_session_options_t* options = NULL;
  const int64_t dims[1] = {1};
  float one = 1.0f;
  size_t count = 0;
  idem_value_kind_t kind;
  idem_value_t* outputs[4];
  idem_session_t* other = NULL;

  MUST(
      idem_value_create_tensor(IDEM_ELEMENT_FLOAT, dims, 1, &one, sizeof(one), NULL, NULL, &value));
  MUST(idem_session_options_create(&options));
  EXPECT_ERROR(idem_value_kind((const idem_value_t*)session, &kind), IDEM_INVALID_ARGUMENT,
               "value is not a valid handle");
  EXPECT_ERROR(idem_session_input_count((const idem_session_t*)value, &count),
               IDEM_INVALID_ARGUMENT, "session is not a valid handle");
  EXPECT_ERROR(idem_session_run((const idem_session_t*)options, NULL, 0, outputs, 4),
               IDEM_INVALID_ARGUMENT, "session is not a valid handle");
  EXPECT_ERROR(idem_session_options_set_eliminate_identity((idem_session_options_t*)value, 0),
               IDEM_INVALID_ARGUMENT, "options is not a valid handle");
  EXPECT_ERROR(idem_session_create("x.onnx", (const idem_session_options_t*)value, &other),
               IDEM_INVALID_ARGUMENT, "options is not a valid handle");
  CHECK(idem_status_code((const idem_status_t*)value) == IDEM_INVALID_ARGUMENT);
  CHECK(strstr(idem_status_message((const idem_status_t*)value), "not a status") != NULL);
  /* Releasing through the wrong function leaves the handle alone. */
  idem_status_release((idem_status_t*)value);
  idem_session_release((idem_session_t*)value);
  idem_session_options_release((idem_session_options_t*)value);
  idem_value_release((idem_value_t*)session);
  MUST(idem_value_kind(value, &kind));
  MUST(idem_session_input_count(session, &count));
  CHECK(kind == IDEM_VALUE_TENSOR && count == 4);
  idem_value_release(value);
  idem_session_options_release(options);
}

/* ---- Run options (cancel, timeout) and shape queries, on capi/loop.onnx: a Loop that stops only
 * when its `cond` input is false, or when the run is cancelled or passes its deadline. */

typedef struct {
  idem_value_t* inputs[3]; /* cond bool[], v float[2,1,3], w float[] */
  unsigned char cond;
  float v[6];
  float w;
} loop_feeds_t;

static void make_loop_feeds(loop_feeds_t* f, int cond) {
  const int64_t v_dims[3] = {2, 1, 3};
  int i;
  f->cond = (unsigned char)(cond != 0);
  for (i = 0; i < 6; ++i) f->v[i] = (float)i + 0.5f;
  f->w = 7.0f;
  MUST(
      idem_value_create_tensor(IDEM_ELEMENT_BOOL, NULL, 0, &f->cond, 1, NULL, NULL, &f->inputs[0]));
  MUST(idem_value_create_tensor(IDEM_ELEMENT_FLOAT, v_dims, 3, f->v, sizeof(f->v), NULL, NULL,
                                &f->inputs[1]));
  MUST(idem_value_create_tensor(IDEM_ELEMENT_FLOAT, NULL, 0, &f->w, sizeof(f->w), NULL, NULL,
                                &f->inputs[2]));
}

static void release_loop_feeds(loop_feeds_t* f) {
  int i;
  for (i = 0; i < 3; ++i) idem_value_release(f->inputs[i]);
}

typedef struct {
  idem_run_options_t* run_options;
  long delay_ms;
} canceller_arg_t;

static void sleep_ms(long ms) {
  struct timespec ts;
  ts.tv_sec = ms / 1000;
  ts.tv_nsec = (ms % 1000) * 1000000L;
  nanosleep(&ts, NULL);
}

static void* cancel_later(void* p) {
  canceller_arg_t* arg = (canceller_arg_t*)p;
  idem_status_t* status;
  sleep_ms(arg->delay_ms);
  status = idem_run_options_cancel(arg->run_options);
  if (status != NULL) {
    fprintf(stderr, "idem_run_options_cancel failed: %s\n", idem_status_message(status));
    idem_status_release(status);
    return (void*)1;
  }
  return NULL;
}

static double now_seconds(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void test_run_options(const char* dir) {
  idem_session_t* session = NULL;
  idem_run_options_t* run_options = NULL;
  loop_feeds_t forever, once;
  idem_value_t* outputs[2] = {NULL, NULL};
  idem_value_t* sentinel = (idem_value_t*)&forever; /* any non-NULL pointer: must become NULL */
  canceller_arg_t arg;
  pthread_t thread;
  void* thread_result = NULL;
  const void* data = NULL;
  double start, elapsed;
  size_t count = 0;

  MUST(idem_session_create(data_path(dir, "capi/loop.onnx"), NULL, &session));
  make_loop_feeds(&forever, 1);
  make_loop_feeds(&once, 0);
  MUST(idem_run_options_create(&run_options));

  /* NULL run options are the defaults; a false condition runs zero iterations. */
  MUST(idem_session_run_with_options(session, NULL, (const idem_value_t* const*)once.inputs, 3,
                                     outputs, 2));
  MUST(idem_tensor_data(outputs[0], &data));
  CHECK(data != NULL && memcmp(data, once.v, sizeof(once.v)) == 0);
  idem_value_release(outputs[0]);
  idem_value_release(outputs[1]);
  MUST(idem_session_run_with_options(session, run_options, (const idem_value_t* const*)once.inputs,
                                     3, outputs, 2));
  idem_value_release(outputs[0]);
  idem_value_release(outputs[1]);

  /* Cancel from another thread stops a Loop whose condition never turns false. A 20 s timeout
   * guards this check against hanging: if cancel did not work, the code would be
   * IDEM_DEADLINE_EXCEEDED and the check fails. (Later checks without a timeout rely on cancel;
   * ctest's TIMEOUT bounds them.) */
  MUST(idem_run_options_set_timeout_ns(run_options, 20ull * 1000000000ull));
  arg.run_options = run_options;
  arg.delay_ms = 100;
  CHECK(pthread_create(&thread, NULL, cancel_later, &arg) == 0);
  outputs[0] = outputs[1] = sentinel;
  start = now_seconds();
  EXPECT_ERROR(idem_session_run_with_options(
                   session, run_options, (const idem_value_t* const*)forever.inputs, 3, outputs, 2),
               IDEM_CANCELLED, "cancelled");
  elapsed = now_seconds() - start;
  CHECK(pthread_join(thread, &thread_result) == 0 && thread_result == NULL);
  CHECK(outputs[0] == NULL && outputs[1] == NULL);
  CHECK(elapsed >= 0.09 && elapsed < 15.0); /* ran until the cancel, stopped before the 20 s */

  /* The flag stays set: the next run is cancelled at once; reset_cancel clears it. */
  EXPECT_ERROR(idem_session_run_with_options(
                   session, run_options, (const idem_value_t* const*)forever.inputs, 3, outputs, 2),
               IDEM_CANCELLED, "cancelled");
  MUST(idem_run_options_reset_cancel(run_options));
  MUST(idem_session_run_with_options(session, run_options, (const idem_value_t* const*)once.inputs,
                                     3, outputs, 2));
  idem_value_release(outputs[0]);
  idem_value_release(outputs[1]);

  /* Deadline: the timeout is relative to each run's start, so one options object serves runs one
   * after another. */
  MUST(idem_run_options_set_timeout_ns(run_options, 50ull * 1000000ull)); /* 50 ms */
  start = now_seconds();
  outputs[0] = outputs[1] = sentinel;
  EXPECT_ERROR(idem_session_run_with_options(
                   session, run_options, (const idem_value_t* const*)forever.inputs, 3, outputs, 2),
               IDEM_DEADLINE_EXCEEDED, "deadline");
  elapsed = now_seconds() - start;
  CHECK(outputs[0] == NULL && outputs[1] == NULL);
  CHECK(elapsed >= 0.045 && elapsed < 30.0);
  sleep_ms(60); /* past the first run's deadline: a second run gets its own 50 ms */
  start = now_seconds();
  EXPECT_ERROR(idem_session_run_with_options(
                   session, run_options, (const idem_value_t* const*)forever.inputs, 3, outputs, 2),
               IDEM_DEADLINE_EXCEEDED, "deadline");
  CHECK(now_seconds() - start >= 0.045);
  /* 0 expires at the first check. */
  MUST(idem_run_options_set_timeout_ns(run_options, 0));
  EXPECT_ERROR(idem_session_run_with_options(
                   session, run_options, (const idem_value_t* const*)forever.inputs, 3, outputs, 2),
               IDEM_DEADLINE_EXCEEDED, "node 'forever' (Loop-16): the run passed its deadline");
  /* UINT64_MAX saturates instead of wrapping into the past: a cancel, not the deadline, stops the
   * forever loop. */
  MUST(idem_run_options_set_timeout_ns(run_options, UINT64_MAX));
  arg.delay_ms = 20;
  CHECK(pthread_create(&thread, NULL, cancel_later, &arg) == 0);
  EXPECT_ERROR(idem_session_run_with_options(
                   session, run_options, (const idem_value_t* const*)forever.inputs, 3, outputs, 2),
               IDEM_CANCELLED, "cancelled");
  CHECK(pthread_join(thread, &thread_result) == 0 && thread_result == NULL);
  MUST(idem_run_options_reset_cancel(run_options));
  /* clear_timeout: no deadline again (a cleared 0 timeout must not fire: cancel stops the run). */
  MUST(idem_run_options_set_timeout_ns(run_options, 0));
  MUST(idem_run_options_clear_timeout(run_options));
  CHECK(pthread_create(&thread, NULL, cancel_later, &arg) == 0);
  EXPECT_ERROR(idem_session_run_with_options(
                   session, run_options, (const idem_value_t* const*)forever.inputs, 3, outputs, 2),
               IDEM_CANCELLED, "node 'forever' (Loop-16): the run was cancelled");
  CHECK(pthread_join(thread, &thread_result) == 0 && thread_result == NULL);
  MUST(idem_run_options_reset_cancel(run_options));
  MUST(idem_session_run_with_options(session, run_options, (const idem_value_t* const*)once.inputs,
                                     3, outputs, 2));
  idem_value_release(outputs[0]);
  idem_value_release(outputs[1]);

  /* run_into with options: the deadline stops the forever loop and nothing is written; a run that
   * ends writes its outputs. */
  {
    float v_out[6] = {0};
    float w_out = 0;
    int64_t v_dims[3] = {-1, -1, -1};
    idem_output_buffer_t buffers[2];
    memset(buffers, 0, sizeof(buffers));
    buffers[0].data = v_out;
    buffers[0].capacity = sizeof(v_out);
    buffers[0].dims = v_dims;
    buffers[0].dims_capacity = 3;
    buffers[0].byte_size = 12345;
    buffers[1].data = &w_out;
    buffers[1].capacity = sizeof(w_out);
    buffers[1].byte_size = 12345;
    MUST(idem_run_options_set_timeout_ns(run_options, 20ull * 1000000ull)); /* 20 ms */
    EXPECT_ERROR(
        idem_session_run_into_with_options(
            session, run_options, (const idem_value_t* const*)forever.inputs, 3, buffers, 2),
        IDEM_DEADLINE_EXCEEDED, "node 'forever' (Loop-16)");
    CHECK(buffers[0].byte_size == 12345 && buffers[1].byte_size == 12345 && v_dims[0] == -1);
    MUST(idem_session_run_into_with_options(
        session, run_options, (const idem_value_t* const*)once.inputs, 3, buffers, 2));
    CHECK(buffers[0].byte_size == sizeof(v_out) && buffers[0].rank == 3 && v_dims[0] == 2 &&
          v_dims[1] == 1 && v_dims[2] == 3);
    CHECK(memcmp(v_out, once.v, sizeof(v_out)) == 0 && w_out == once.w);
    /* NULL options are the defaults (idem_session_run_into). */
    memset(v_out, 0, sizeof(v_out));
    MUST(idem_session_run_into_with_options(session, NULL, (const idem_value_t* const*)once.inputs,
                                            3, buffers, 2));
    CHECK(memcmp(v_out, once.v, sizeof(v_out)) == 0);
    EXPECT_ERROR(
        idem_session_run_into_with_options(session, (const idem_run_options_t*)session,
                                           (const idem_value_t* const*)once.inputs, 3, buffers, 2),
        IDEM_INVALID_ARGUMENT, "run_options");
    MUST(idem_run_options_clear_timeout(run_options));
  }

  /* The usual run checks apply. */
  EXPECT_ERROR(idem_session_run_with_options(
                   session, run_options, (const idem_value_t* const*)once.inputs, 3, outputs, 1),
               IDEM_INVALID_ARGUMENT, "room for 1 outputs, the model has 2");
  EXPECT_ERROR(idem_session_run_with_options(session, run_options, NULL, 3, outputs, 2),
               IDEM_INVALID_ARGUMENT, "inputs is NULL");

  /* NULL and wrong handles for every run-options function. */
  EXPECT_ERROR(idem_run_options_create(NULL), IDEM_INVALID_ARGUMENT, "out_run_options is NULL");
  EXPECT_ERROR(idem_run_options_cancel(NULL), IDEM_INVALID_ARGUMENT, "run_options is NULL");
  EXPECT_ERROR(idem_run_options_reset_cancel(NULL), IDEM_INVALID_ARGUMENT, "run_options is NULL");
  EXPECT_ERROR(idem_run_options_set_timeout_ns(NULL, 1), IDEM_INVALID_ARGUMENT,
               "run_options is NULL");
  EXPECT_ERROR(idem_run_options_clear_timeout(NULL), IDEM_INVALID_ARGUMENT, "run_options is NULL");
  EXPECT_ERROR(idem_run_options_cancel((idem_run_options_t*)session), IDEM_INVALID_ARGUMENT,
               "run_options is not a valid handle");
  EXPECT_ERROR(idem_run_options_reset_cancel((idem_run_options_t*)session), IDEM_INVALID_ARGUMENT,
               "run_options is not a valid handle");
  EXPECT_ERROR(idem_run_options_set_timeout_ns((idem_run_options_t*)once.inputs[0], 1),
               IDEM_INVALID_ARGUMENT, "run_options is not a valid handle");
  EXPECT_ERROR(idem_run_options_clear_timeout((idem_run_options_t*)once.inputs[0]),
               IDEM_INVALID_ARGUMENT, "run_options is not a valid handle");
  EXPECT_ERROR(idem_session_run_with_options(
                   NULL, run_options, (const idem_value_t* const*)once.inputs, 3, outputs, 2),
               IDEM_INVALID_ARGUMENT, "session is NULL");
  EXPECT_ERROR(
      idem_session_run_with_options((const idem_session_t*)run_options, run_options,
                                    (const idem_value_t* const*)once.inputs, 3, outputs, 2),
      IDEM_INVALID_ARGUMENT, "session is not a valid handle");
  EXPECT_ERROR(
      idem_session_run_with_options(session, (const idem_run_options_t*)session,
                                    (const idem_value_t* const*)once.inputs, 3, outputs, 2),
      IDEM_INVALID_ARGUMENT, "run_options is not a valid handle");
  /* Releasing through the wrong function leaves the handle alone; release accepts NULL. */
  idem_run_options_release(NULL);
  idem_run_options_release((idem_run_options_t*)session);
  idem_session_release((idem_session_t*)run_options);
  MUST(idem_run_options_cancel(run_options));
  MUST(idem_session_input_count(session, &count));
  CHECK(count == 3);

  idem_run_options_release(run_options);
  release_loop_feeds(&forever);
  release_loop_feeds(&once);
  idem_session_release(session);
}

static void test_shapes(const char* dir) {
  idem_session_t* session = NULL;
  idem_session_t* kinds = NULL;
  idem_session_options_t* not_session = NULL;
  int64_t dims[4] = {99, 99, 99, 99};
  int64_t rank = 99;
  const char* name = "unset";

  MUST(idem_session_create(data_path(dir, "capi/loop.onnx"), NULL, &session));
  /* cond: bool[] — declared rank 0. */
  MUST(idem_session_input_shape(session, 0, dims, 4, &rank));
  CHECK(rank == 0 && dims[0] == 99);
  /* v: float[N,?,3] — symbolic, unknown, fixed. */
  MUST(idem_session_input_shape(session, 1, dims, 4, &rank));
  CHECK(rank == 3 && dims[0] == -1 && dims[1] == -1 && dims[2] == 3 && dims[3] == 99);
  MUST(idem_session_input_dim_name(session, 1, 0, &name));
  CHECK(name != NULL && strcmp(name, "N") == 0);
  name = "unset";
  MUST(idem_session_input_dim_name(session, 1, 1, &name));
  CHECK(name == NULL); /* unknown */
  name = "unset";
  MUST(idem_session_input_dim_name(session, 1, 2, &name));
  CHECK(name == NULL); /* fixed */
  EXPECT_ERROR(idem_session_input_dim_name(session, 1, 3, &name), IDEM_OUT_OF_RANGE,
               "dim 3 of rank 3");
  /* w: float without shape — rank -1, no dims written. */
  dims[0] = 99;
  MUST(idem_session_input_shape(session, 2, dims, 4, &rank));
  CHECK(rank == -1 && dims[0] == 99);
  EXPECT_ERROR(idem_session_input_dim_name(session, 2, 0, &name), IDEM_OUT_OF_RANGE,
               "undeclared shape");
  /* Outputs. */
  MUST(idem_session_output_shape(session, 0, dims, 3, &rank));
  CHECK(rank == 3 && dims[0] == -1 && dims[1] == -1 && dims[2] == 3);
  MUST(idem_session_output_dim_name(session, 0, 0, &name));
  CHECK(name != NULL && strcmp(name, "N") == 0);
  MUST(idem_session_output_shape(session, 1, dims, 3, &rank));
  CHECK(rank == -1);
  EXPECT_ERROR(idem_session_output_dim_name(session, 1, 0, &name), IDEM_OUT_OF_RANGE,
               "undeclared shape");
  /* Capacity: 0 queries the rank alone (dims_out may be NULL); too small fails, writes nothing. */
  rank = 99;
  MUST(idem_session_input_shape(session, 1, NULL, 0, &rank));
  CHECK(rank == 3);
  dims[0] = dims[1] = 99;
  rank = 99;
  EXPECT_ERROR(idem_session_input_shape(session, 1, dims, 2, &rank), IDEM_OUT_OF_RANGE,
               "rank 3, dims_out holds 2");
  CHECK(dims[0] == 99 && dims[1] == 99 && rank == 99);
  EXPECT_ERROR(idem_session_input_shape(session, 1, NULL, 3, &rank), IDEM_INVALID_ARGUMENT,
               "dims_out is NULL with capacity 3");
  /* Indexes, NULL outs and handles, for all four functions. */
  EXPECT_ERROR(idem_session_input_shape(session, 3, dims, 4, &rank), IDEM_OUT_OF_RANGE,
               "input 3 of 3");
  EXPECT_ERROR(idem_session_output_shape(session, 2, dims, 4, &rank), IDEM_OUT_OF_RANGE,
               "output 2 of 2");
  EXPECT_ERROR(idem_session_input_dim_name(session, 3, 0, &name), IDEM_OUT_OF_RANGE,
               "input 3 of 3");
  EXPECT_ERROR(idem_session_output_dim_name(session, 2, 0, &name), IDEM_OUT_OF_RANGE,
               "output 2 of 2");
  EXPECT_ERROR(idem_session_input_shape(session, 1, dims, 4, NULL), IDEM_INVALID_ARGUMENT,
               "out_rank is NULL");
  EXPECT_ERROR(idem_session_output_shape(session, 0, dims, 4, NULL), IDEM_INVALID_ARGUMENT,
               "out_rank is NULL");
  EXPECT_ERROR(idem_session_input_dim_name(session, 1, 0, NULL), IDEM_INVALID_ARGUMENT,
               "out_name is NULL");
  EXPECT_ERROR(idem_session_output_dim_name(session, 0, 0, NULL), IDEM_INVALID_ARGUMENT,
               "out_name is NULL");
  EXPECT_ERROR(idem_session_input_shape(NULL, 0, dims, 4, &rank), IDEM_INVALID_ARGUMENT,
               "session is NULL");
  EXPECT_ERROR(idem_session_output_shape(NULL, 0, dims, 4, &rank), IDEM_INVALID_ARGUMENT,
               "session is NULL");
  EXPECT_ERROR(idem_session_input_dim_name(NULL, 0, 0, &name), IDEM_INVALID_ARGUMENT,
               "session is NULL");
  EXPECT_ERROR(idem_session_output_dim_name(NULL, 0, 0, &name), IDEM_INVALID_ARGUMENT,
               "session is NULL");
  MUST(idem_session_options_create(&not_session));
  kinds = (idem_session_t*)not_session; /* a handle of another kind */
  EXPECT_ERROR(idem_session_input_shape(kinds, 0, dims, 4, &rank), IDEM_INVALID_ARGUMENT,
               "session is not a valid handle");
  EXPECT_ERROR(idem_session_output_shape(kinds, 0, dims, 4, &rank), IDEM_INVALID_ARGUMENT,
               "session is not a valid handle");
  EXPECT_ERROR(idem_session_input_dim_name(kinds, 0, 0, &name), IDEM_INVALID_ARGUMENT,
               "session is not a valid handle");
  EXPECT_ERROR(idem_session_output_dim_name(kinds, 0, 0, &name), IDEM_INVALID_ARGUMENT,
               "session is not a valid handle");
  idem_session_options_release(not_session);
  idem_session_release(session);

  /* kinds.onnx: x float[N,3] and t string[N] are tensors; s (sequence) and o (optional) are not. */
  MUST(idem_session_create(data_path(dir, "capi/kinds.onnx"), NULL, &kinds));
  MUST(idem_session_input_shape(kinds, 0, dims, 4, &rank));
  CHECK(rank == 2 && dims[0] == -1 && dims[1] == 3);
  MUST(idem_session_input_shape(kinds, 3, dims, 4, &rank));
  CHECK(rank == 1 && dims[0] == -1);
  MUST(idem_session_output_dim_name(kinds, 3, 0, &name));
  CHECK(name != NULL && strcmp(name, "N") == 0);
  EXPECT_ERROR(idem_session_input_shape(kinds, 1, dims, 4, &rank), IDEM_INVALID_ARGUMENT,
               "is seq(tensor(float)), not a tensor");
  EXPECT_ERROR(idem_session_output_shape(kinds, 2, dims, 4, &rank), IDEM_INVALID_ARGUMENT,
               "not a tensor");
  EXPECT_ERROR(idem_session_input_dim_name(kinds, 2, 0, &name), IDEM_INVALID_ARGUMENT,
               "not a tensor");
  idem_session_release(kinds);
}

/* ---- Threads: sessions and values are immutable, so one of each may be used from many threads. */

enum { kThreads = 4, kRunsPerThread = 2000 };

typedef struct {
  const idem_session_t* session;
  const feeds_t* feeds;
  int failures; /* per thread: the CHECK counters are not thread-safe */
} thread_arg_t;

static void* run_many(void* p) {
  thread_arg_t* arg = (thread_arg_t*)p;
  const idem_value_t* inputs[4];
  idem_value_t* outputs[4];
  int r, i;
  inputs[0] = arg->feeds->x;
  inputs[1] = arg->feeds->seq;
  inputs[2] = arg->feeds->opt;
  inputs[3] = arg->feeds->str;
  for (r = 0; r < kRunsPerThread; ++r) {
    const void* data = NULL;
    const char* bytes = NULL;
    const char* name = NULL;
    size_t length = 0;
    int has = 0;
    idem_value_t* wrapped = NULL;
    idem_status_t* status = idem_session_run(arg->session, inputs, 4, outputs, 4);
    if (status != NULL) {
      idem_status_release(status);
      ++arg->failures;
      continue;
    }
    /* Values derived concurrently from shared ones (reference counts from many threads). */
    status = idem_value_create_optional(outputs[0], &wrapped);
    if (status != NULL || idem_optional_has_value(wrapped, &has) != NULL || has != 1) {
      ++arg->failures;
    }
    idem_status_release(status);
    idem_value_release(wrapped);
    if (idem_tensor_data(outputs[0], &data) != NULL || data != (const void*)g_x_data) {
      ++arg->failures;
    }
    if (idem_sequence_length(outputs[1], &length) != NULL || length != 2) ++arg->failures;
    if (idem_optional_has_value(outputs[2], &has) != NULL || has != 1) ++arg->failures;
    if (idem_tensor_string(outputs[3], 1, &bytes, &length) != NULL || length != 3 ||
        memcmp(bytes, "c\0d", 3) != 0) {
      ++arg->failures;
    }
    if (idem_session_input_name(arg->session, 3, &name) != NULL || strcmp(name, "t") != 0) {
      ++arg->failures;
    }
    for (i = 0; i < 4; ++i) idem_value_release(outputs[i]);
  }
  return NULL;
}

static int test_threads(const char* dir) {
  idem_session_t* session = NULL;
  feeds_t f;
  release_counter_t x_counter = {0, NULL};
  pthread_t threads[kThreads];
  thread_arg_t args[kThreads];
  int t;
  MUST(idem_session_create(data_path(dir, "capi/kinds.onnx"), NULL, &session));
  make_feeds(&f, &x_counter);
  for (t = 0; t < kThreads; ++t) {
    args[t].session = session;
    args[t].feeds = &f;
    args[t].failures = 0;
    CHECK(pthread_create(&threads[t], NULL, run_many, &args[t]) == 0);
  }
  for (t = 0; t < kThreads; ++t) {
    CHECK(pthread_join(threads[t], NULL) == 0);
    CHECK(args[t].failures == 0);
  }
  idem_session_release(session);
  CHECK(x_counter.calls == 0); /* the feeds still hold x */
  release_feeds(&f);
  CHECK(x_counter.calls == 1);
  if (g_failures > 0) {
    fprintf(stderr, "capi_test --threads: %d of %d checks failed\n", g_failures, g_checks);
    return 1;
  }
  printf("capi_test --threads: %d threads x %d runs, %d checks passed\n", kThreads, kRunsPerThread,
         g_checks);
  return 0;
}

int main(int argc, char** argv) {
  idem_session_t* session = NULL;
  idem_session_options_t* options = NULL;
  const char* dir;
  if (argc == 3 && strcmp(argv[2], "--threads") == 0) return test_threads(argv[1]);
  if (argc != 2) {
    fprintf(stderr, "usage: %s DATA_DIR [--threads]\n", argv[0]);
    return 2;
  }
  dir = argv[1];
  test_version_and_status();
  test_options(dir);
  test_value_errors();
  test_create_errors(dir);
  test_run_into(dir);
  test_run_options(dir);
  test_shapes(dir);

  /* The Identity nodes kept (eliminate_identity off): still zero copy. */
  MUST(idem_session_options_create(&options));
  MUST(idem_session_options_set_eliminate_identity(options, 0));
  MUST(idem_session_create(data_path(dir, "capi/kinds.onnx"), options, &session));
  idem_session_options_release(options);
  test_session_metadata(session);
  test_run(session, 0);
  test_wrong_handles(session);
  idem_session_release(session);

  if (g_failures > 0) {
    fprintf(stderr, "capi_test: %d of %d checks failed\n", g_failures, g_checks);
    return 1;
  }
  printf("capi_test: %d checks passed\n", g_checks);
  return 0;
}
