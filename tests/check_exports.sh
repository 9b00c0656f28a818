#!/usr/bin/env bash
# usage: check_exports.sh LIBIDEM_SO
# The shared library exports idem's API and nothing else: every defined dynamic symbol is in
# namespace idem (the C++ API) or starts with idem_ (the C API); none is protobuf's or libonnx's.
set -euo pipefail
lib=$1
syms=$(nm -D --defined-only "$lib" | c++filt | cut -d' ' -f3-)
foreign=$(grep -v -E '^(idem::|idem_|(typeinfo|typeinfo name|vtable) for idem::)' <<<"$syms" || true)
if [ -n "$foreign" ]; then
  echo "$lib exports symbols that are not idem's:"
  echo "$foreign" | head -20
  exit 1
fi
if grep -E '^(google|onnx)::|protobuf' <<<"$syms"; then
  echo "$lib exports protobuf / libonnx symbols"
  exit 1
fi
for f in idem_version idem_session_create idem_session_run idem_session_run_into \
         idem_value_create_tensor idem_status_release; do
  grep -qx "$f" <<<"$syms" || { echo "$lib does not export $f"; exit 1; }
done
grep -q '^idem::Session::Run(' <<<"$syms" || { echo "$lib does not export idem::Session::Run"; exit 1; }
echo "$lib: $(wc -l <<<"$syms") symbols exported, all idem's (C API: $(grep -c '^idem_' <<<"$syms"))"
