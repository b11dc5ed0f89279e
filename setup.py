"""Builds tracefuse._core with this checkout's CMake project (the target tracefuse_python: the
same stage libraries as the command line) and installs it beside python/tracefuse/*.py.

Nothing is downloaded: CMake, Ninja, the compiler and every library come from Debian
(scripts/setup). Use `pip install --no-build-isolation .`: build isolation would fetch setuptools.
"""
import os
import pathlib
import re
import shutil
import subprocess
import sys

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

ROOT = pathlib.Path(__file__).resolve().parent
VERSION = re.search(r"project\(tracefuse VERSION ([0-9.]+)",
                    (ROOT / "CMakeLists.txt").read_text())[1]


class CMakeBuild(build_ext):
    """Configures the project in the build directory (Release, without tests, benchmarks and
    lints) for this interpreter and builds only the module."""

    def build_extension(self, ext):
        build = pathlib.Path(self.build_temp).resolve() / "cmake"
        subprocess.run(["cmake", "-S", str(ROOT), "-B", str(build), "-G", "Ninja",
                        "-DCMAKE_BUILD_TYPE=Release", f"-DPython_EXECUTABLE={sys.executable}",
                        "-DTRACEFUSE_PYTHON=ON", "-DBUILD_TESTING=OFF",
                        "-DTRACEFUSE_BENCHMARKS=OFF", "-DTRACEFUSE_LINT=OFF"], check=True)
        subprocess.run(["cmake", "--build", str(build), "--target", "tracefuse_python",
                        "--parallel", str(os.cpu_count() or 1)], check=True)
        built = next((build / "python" / "tracefuse").glob("_core*.so"))
        target = pathlib.Path(self.get_ext_fullpath(ext.name))
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(built, target)


setup(
    version=VERSION,
    package_dir={"": "python"},
    packages=["tracefuse"],
    ext_modules=[Extension("tracefuse._core", sources=[])],
    cmdclass={"build_ext": CMakeBuild},
    options={"build": {"build_base": "build-pip"}},
    zip_safe=False,
)
