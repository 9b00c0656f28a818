/* Installed-tree consumer, C: loads MODEL (x: float[5] -> res: float[1,5]), runs it on 1..5 and
 * checks the result. Exit 0 on success. */
#include <stdio.h>
#include <string.h>

#include "idem/c_api.h"

static int fail(idem_status_t* status) {
  fprintf(stderr, "error: %s\n", idem_status_message(status));
  idem_status_release(status);
  return 1;
}

int main(int argc, char** argv) {
  idem_session_t* session = NULL;
  idem_value_t* x = NULL;
  idem_value_t* res = NULL;
  idem_status_t* status;
  const float data[5] = {1, 2, 3, 4, 5};
  const int64_t dims[1] = {5};
  const int64_t* res_dims = NULL;
  const void* res_data = NULL;
  size_t rank = 0;
  const char* name = NULL;
  const idem_value_t* inputs[1];
  if (argc != 2) return 2;

  if ((status = idem_session_create(argv[1], NULL, &session))) return fail(status);
  if ((status = idem_value_create_tensor(IDEM_ELEMENT_FLOAT, dims, 1, data, sizeof(data), NULL,
                                         NULL, &x))) {
    return fail(status);
  }
  inputs[0] = x;
  if ((status = idem_session_run(session, inputs, 1, &res, 1))) return fail(status);
  if ((status = idem_session_output_name(session, 0, &name))) return fail(status);
  if ((status = idem_tensor_rank(res, &rank))) return fail(status);
  if ((status = idem_tensor_dims(res, &res_dims))) return fail(status);
  if ((status = idem_tensor_data(res, &res_data))) return fail(status);
  if (rank != 2 || res_dims[0] != 1 || res_dims[1] != 5 || memcmp(res_data, data, 20) != 0) {
    fprintf(stderr, "error: unexpected result\n");
    return 1;
  }
  printf("c: idem %s: %s float[1,5] = [%g, %g, %g, %g, %g]\n", idem_version(), name,
         ((const float*)res_data)[0], ((const float*)res_data)[1], ((const float*)res_data)[2],
         ((const float*)res_data)[3], ((const float*)res_data)[4]);
  idem_value_release(res);
  idem_value_release(x);
  idem_session_release(session);
  return 0;
}
