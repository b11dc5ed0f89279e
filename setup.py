"""Builds tracefuse._core with this checkout's CMake project (the target tracefuse_python: the
same stage libraries as the command line) and installs it beside python/tracefuse/*.py.

Nothing is downloaded: CMake, Ninja, the compiler and every library come from Debian
(scripts/setup). Use `pip install --no-build-isolation .`: build isolation would fetch setuptools.
Any Python 3.9 or later builds it (a venv, pyenv, conda), as long as CMake can find its headers.
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


def wheel_command():
    """The command that builds a wheel (pip calls it, also for a package's metadata): setuptools'
    own from 70.1, else the `wheel` package's, else that of Debian's python3-wheel (pure Python,
    installed by scripts/setup for /usr/bin/python3), which a venv or another interpreter does
    not see: its folder is then searched after this interpreter's own. Without any, one line
    says what to install, before anything is built."""
    try:
        from setuptools.command.bdist_wheel import bdist_wheel
        return bdist_wheel
    except ImportError:
        pass
    debian = "/usr/lib/python3/dist-packages"
    for extra in ([], [debian]):
        if extra and not os.path.isfile(os.path.join(debian, "wheel", "bdist_wheel.py")):
            continue
        sys.path.extend(extra)
        try:
            from wheel.bdist_wheel import bdist_wheel
            return bdist_wheel
        except ImportError:
            for path in extra:
                sys.path.remove(path)
    sys.exit(f"error: building tracefuse for {sys.executable} needs the package wheel (or "
             "setuptools 70.1 or later): install it into that Python (python -m pip install "
             "wheel), or build with /usr/bin/python3 -m pip install --no-build-isolation .")


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


# The wheel command only where pip builds a wheel or its metadata: sdist and the like need none.
CMDCLASS = {"build_ext": CMakeBuild}
if {"bdist_wheel", "dist_info", "editable_wheel"} & set(sys.argv[1:]):
    CMDCLASS["bdist_wheel"] = wheel_command()

setup(
    version=VERSION,
    package_dir={"": "python"},
    packages=["tracefuse"],
    ext_modules=[Extension("tracefuse._core", sources=[])],
    cmdclass=CMDCLASS,
    options={"build": {"build_base": "build-pip"}},
    zip_safe=False,
)
