#!/usr/bin/env bash
# The package test (ctest `debian_package`): builds the Debian package with CPack from BUILD_DIR
# into OUT_DIR and inspects it with dpkg-deb: name, architecture, Depends computed by
# dpkg-shlibdeps (libprotobuf, libonnx, libc...), and the files (libidem.so.SOVERSION, headers, CMake
# and pkg-config files, the idem executable, the license).
#
# usage: check_deb.sh BUILD_DIR OUT_DIR VERSION SOVERSION
set -euo pipefail
build=$1 out=$2 version=$3 soversion=$4
rm -rf "$out"
mkdir -p "$out"
(cd "$build" && cpack -G DEB -B "$out" >"$out/cpack.log" 2>&1) || { cat "$out/cpack.log"; exit 1; }
arch=$(dpkg --print-architecture)
deb=$out/idem_${version}_${arch}.deb
[ -f "$deb" ] || { echo "no $deb; made: $(ls "$out")"; exit 1; }

info=$(dpkg-deb -I "$deb")
echo "$info" | grep -E '^ (Package|Version|Architecture|Depends|Recommends):'
depends=$(echo "$info" | sed -n 's/^ Depends: //p')
for dep in libprotobuf libonnx libc6 libstdc++6; do
  grep -q "$dep" <<<"$depends" || { echo "Depends lacks $dep: $depends"; exit 1; }
done
grep -q "^ Package: idem$" <<<"$info"
grep -q "^ Version: $version$" <<<"$info"
grep -q "^ Architecture: $arch$" <<<"$info"

files=$(dpkg-deb -c "$deb" | awk '{print $6}')
for want in "/libidem\.so\.$soversion\$" "/libidem\.so\.$version\$" '^\./usr/include/idem/c_api\.h$' \
            '^\./usr/include/idem/idem\.h$' '/cmake/idem/idemConfig\.cmake$' \
            '/cmake/idem/idemTargets\.cmake$' '/pkgconfig/idem\.pc$' '^\./usr/bin/idem$' \
            '^\./usr/share/doc/idem/LICENSE$'; do
  grep -q -E "$want" <<<"$files" || { echo "package lacks $want"; echo "$files"; exit 1; }
done
if grep -E '/src/|\.cc$' <<<"$files"; then
  echo "package holds sources"
  exit 1
fi
echo "debian_package: $(basename "$deb") OK ($(wc -l <<<"$files") entries)"
