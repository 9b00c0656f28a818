#!/usr/bin/env bash
# usage: check_exports.sh LIBIDEM_SO [INCLUDE_DIR]
# The shared library exports idem's API and nothing else: every defined dynamic symbol is in
# namespace idem (the C++ API) or starts with idem_ (the C API); none is protobuf's or libonnx's.
# With INCLUDE_DIR, also checks that the public headers mark what must be exported: every
# function declared at namespace scope carries IDEM_API (or is inline/template), and every class
# defined there too (with hidden visibility, an unmarked one links in-tree but not for users).
set -euo pipefail
lib=$1
include_dir=${2:-}
if [ -n "$include_dir" ]; then
  unmarked=$(grep -nP '^(?!IDEM_API|inline|template|static|constexpr|using|namespace|class|struct|enum|typedef|#|//|/\*| |\}|extern|\*)[A-Za-z_][\w:<>,\s]*[\s*&]\w+\(' \
               "$include_dir"/idem/*.h || true)
  unmarked+=$'\n'$(grep -nP '^class (?!IDEM_API)\w+[^;]*$' "$include_dir"/idem/*.h || true)
  if [ -n "${unmarked//$'\n'/}" ]; then
    echo "public declarations without IDEM_API (idem/export.h):"
    echo "$unmarked"
    exit 1
  fi
fi
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
