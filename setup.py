"""Builds the idem Python package's native part (`idem._idem`) with the project's CMake build.

Used by `python3 -m pip install --no-build-isolation .` (metadata is in pyproject.toml). Offline:
the compiler, CMake, pybind11, protobuf and onnx come from the system (scripts/setup.sh).

Environment:
    IDEM_CMAKE_BUILD_DIR  an existing or new CMake build folder to build `_idem` in (default:
                          build-pip/cmake in the checkout); reusing a configured build tree makes
                          the install a copy.
    IDEM_CMAKE_ARGS       extra arguments for the CMake configure step.
    CMAKE_BUILD_PARALLEL_LEVEL  build jobs (CMake's own variable).
"""
import os
import shlex
import shutil
import subprocess
import sys
import sysconfig

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

ROOT = os.path.dirname(os.path.abspath(__file__))


class CMakeBuild(build_ext):
    """Configures and builds the `_idem` target, then copies the module where setuptools wants
    it. The interpreter doing the install is the one the module is built for."""

    def build_extension(self, ext):
        build_dir = os.environ.get("IDEM_CMAKE_BUILD_DIR") or os.path.join(ROOT, "build-pip",
                                                                          "cmake")
        build_dir = os.path.abspath(build_dir)
        if not os.path.exists(os.path.join(build_dir, "CMakeCache.txt")):
            configure = ["cmake", "-S", ROOT, "-B", build_dir, "-DCMAKE_BUILD_TYPE=Release",
                         "-DIDEM_BUILD_PYTHON=ON", "-DIDEM_BUILD_TESTS=OFF",
                         "-DIDEM_BUILD_BENCH=OFF", "-DPython3_EXECUTABLE=" + sys.executable]
            if shutil.which("ninja"):
                configure += ["-G", "Ninja"]
            if shutil.which("ccache"):
                configure += ["-DCMAKE_CXX_COMPILER_LAUNCHER=ccache"]
            configure += shlex.split(os.environ.get("IDEM_CMAKE_ARGS", ""))
            subprocess.check_call(configure)
        subprocess.check_call(["cmake", "--build", build_dir, "--target", "_idem"])
        suffix = sysconfig.get_config_var("EXT_SUFFIX")
        built = os.path.join(build_dir, "python", "idem", "_idem" + suffix)
        if not os.path.exists(built):
            raise RuntimeError("CMake did not produce %s (is %s the interpreter the build "
                               "used?)" % (built, sys.executable))
        target = self.get_ext_fullpath(ext.name)
        os.makedirs(os.path.dirname(target), exist_ok=True)
        shutil.copyfile(built, target)
        shutil.copymode(built, target)


os.makedirs(os.path.join(ROOT, "build-pip"), exist_ok=True)

setup(
    ext_modules=[Extension("idem._idem", sources=[])],
    cmdclass={"build_ext": CMakeBuild},
    options={"build": {"build_base": os.path.join("build-pip", "setuptools")},
             "egg_info": {"egg_base": "build-pip"}},
)
