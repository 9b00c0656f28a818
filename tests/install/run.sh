#!/usr/bin/env bash
# The install test (ctest `install_consumer`): installs BUILD_DIR into a fresh prefix under
# WORK_DIR, checks the installed layout and exports, then builds and runs tests/install's two
# consumers (C on c_api.h, C++ on idem.h) through find_package(idem) and through pkg-config.
#
# usage: run.sh BUILD_DIR SOURCE_DIR WORK_DIR PYTHON(ON|OFF) [FLAGS...]
# FLAGS go to every compile and link (the sanitizer build passes its -fsanitize flags).
# env: CC, CXX pick the compilers.
set -euo pipefail
build=$1 src=$2 work=$3 python=$4
shift 4
flags="$*"
CC=${CC:-cc} CXX=${CXX:-c++}
rm -rf "$work"
mkdir -p "$work"
prefix=$work/prefix
model=$src/tests/data/seed/test_cc_identity_opt/model.onnx

echo "== cmake --install into $prefix"
cmake --install "$build" --prefix "$prefix" >/dev/null
libdir=$(dirname "$(find "$prefix" -name 'libidem.so*' -o -name libidem.a | head -1)")
for f in include/idem/idem.h include/idem/c_api.h include/idem/export.h include/idem/session_proto.h \
         bin/idem share/doc/idem/LICENSE; do
  [ -e "$prefix/$f" ] || { echo "missing from the install: $f"; exit 1; }
done
for f in cmake/idem/idemConfig.cmake cmake/idem/idemConfigVersion.cmake cmake/idem/idemTargets.cmake \
         pkgconfig/idem.pc; do
  [ -e "$libdir/$f" ] || { echo "missing from the install: ${libdir#$prefix/}/$f"; exit 1; }
done
[ -z "$(find "$prefix/include" -name '*.h' -path '*src*')" ] || { echo "src/ headers installed"; exit 1; }
if [ -e "$libdir/libidem.so" ]; then
  bash "$src/tests/check_exports.sh" "$libdir/libidem.so" "$prefix/include"
fi
"$prefix/bin/idem" run "$(dirname "$model")" | grep -F 'res float[1,5] = [[1, 2, 3, 4, 5]]'
if [ "$python" = ON ]; then
  pydir=$prefix/lib/python3/dist-packages
  [ -e "$pydir/idem/__init__.py" ] || { echo "python package not installed in $pydir"; exit 1; }
  (cd "$work" && PYTHONPATH=$pydir /usr/bin/python3 -c "
import numpy as np, idem, sys
assert idem.__file__.startswith('$pydir'), idem.__file__
out = idem.Session('$model').run({'x': np.arange(1, 6, dtype=np.float32)})
assert out[0].tolist() == [[1, 2, 3, 4, 5]], out
print('python: installed package runs the model')")
fi

echo "== consumer via find_package(idem)"
cmake -S "$src/tests/install" -B "$work/cmake" -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_PREFIX_PATH="$prefix" -DCMAKE_C_COMPILER="$CC" -DCMAKE_CXX_COMPILER="$CXX" \
  -DCMAKE_C_FLAGS="$flags" -DCMAKE_CXX_FLAGS="$flags" >/dev/null
cmake --build "$work/cmake" >/dev/null
"$work/cmake/consumer_c" "$model"
"$work/cmake/consumer_cxx" "$model"

echo "== consumer via pkg-config"
export PKG_CONFIG_PATH=$libdir/pkgconfig
static=""
[ -e "$libdir/libidem.so" ] || static=--static  # libidem.a: also link its private dependencies
[ "$(pkg-config --modversion idem)" = "$(sed -n 's/^Version: //p' "$libdir/pkgconfig/idem.pc")" ]
# shellcheck disable=SC2046,SC2086
$CC $flags -std=c99 -o "$work/pc_c" "$src/tests/install/consumer.c" $(pkg-config $static --cflags --libs idem)
# shellcheck disable=SC2046,SC2086
$CXX $flags -std=c++20 -o "$work/pc_cxx" "$src/tests/install/consumer.cc" \
  $(pkg-config $static --cflags --libs idem)
LD_LIBRARY_PATH=$(pkg-config --variable=libdir idem) "$work/pc_c" "$model"
LD_LIBRARY_PATH=$(pkg-config --variable=libdir idem) "$work/pc_cxx" "$model"
echo "install_consumer: OK"
