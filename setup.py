"""Builds the extension ooc._core with CMake (the module target only, no tests), for
`pip install --no-build-isolation .`; the metadata is in pyproject.toml.

Environment: OOC_CMAKE_ARGS (extra -D options, e.g. "-DOOC_ENABLE_CUDA=OFF
-DCMAKE_CXX_COMPILER_LAUNCHER=ccache"), CMAKE_BUILD_PARALLEL_LEVEL (compile jobs).
"""

import os
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

ROOT = Path(__file__).resolve().parent


class CMakeExtension(Extension):
    def __init__(self, name):
        super().__init__(name, sources=[])


class CMakeBuild(build_ext):
    def build_extension(self, ext):
        target = Path(self.get_ext_fullpath(ext.name)).resolve()
        build = Path(self.build_temp).resolve() / "cmake"
        build.mkdir(parents=True, exist_ok=True)
        args = ["-DCMAKE_BUILD_TYPE=Release", "-DOOC_BUILD_TESTS=OFF", "-DOOC_BUILD_PYTHON=ON",
                # The module needs no MPI: the tools that use it are not built here.
                "-DOOC_ENABLE_MPI=OFF", "-DPython3_EXECUTABLE=" + sys.executable]
        if shutil.which("ninja"):
            args += ["-G", "Ninja"]
        args += shlex.split(os.environ.get("OOC_CMAKE_ARGS", ""))
        subprocess.run(["cmake", "-S", str(ROOT), "-B", str(build)] + args, check=True)
        subprocess.run(["cmake", "--build", str(build), "--target", "ooc_python"], check=True)
        built = list((build / "python" / "ooc").glob("_core*.so"))
        if len(built) != 1:
            raise RuntimeError("CMake did not build the extension: no python/ooc/_core*.so in "
                               + str(build) + " (is pybind11-dev installed?)")
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(built[0], target)


# Here rather than in pyproject.toml, where Debian's setuptools calls [tool.setuptools] beta.
setup(packages=["ooc"], package_dir={"": "python"}, ext_modules=[CMakeExtension("ooc._core")],
      cmdclass={"build_ext": CMakeBuild})
