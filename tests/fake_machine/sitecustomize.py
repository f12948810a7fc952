"""Make this Python look like another learner's machine (for tests/test_portability.py).

Python imports a module named `sitecustomize` at start-up, if one is on its path. With this folder first on
PYTHONPATH, every Python that a test starts (pytest, its xdist workers, and the notebook kernels, which inherit
the environment) runs the code below. It does nothing unless COURSE_FAKE_MACHINE=1, and then it changes only
what the environment variables name (every one optional):

    COURSE_FAKE_PYTHON=3.11.99          sys.version, sys.version_info, sys.hexversion, platform.python_version()
    COURSE_FAKE_PLATFORM="Darwin arm64" platform.uname(), .system(), .machine(), .platform() (not while torch
                                        imports: it loads the native libraries of the real platform)
    COURSE_FAKE_TORCH=2.13.0+cu130      torch.__version__ (torch.version.cuda too when the tag is cuNNN)
    COURSE_FAKE_GPU="NVIDIA H200"       a CUDA GPU (torch.cuda.is_available(), .device_count(), .get_device_name())
                                        and Apple's MPS (torch.backends.mps.is_available()) both report present,
                                        to every caller but torch's own modules (see _outside_torch)

Only the answers to those questions change, not the machine: a faked GPU cannot run anything, so the code
under test must keep computing on the CPU (the tests set COURSE_DEVICE=cpu, as on a real GPU machine).
sys.platform is left alone: it says which operating system's code Python itself was built with.
"""

import os
import sys

_ON = os.environ.get("COURSE_FAKE_MACHINE") == "1"


def _fake_python(version):
    import platform

    major, minor, micro = (int(part) for part in version.split("."))
    real = sys.version_info
    if (major, minor) != (real.major, real.minor):
        this = f"{real.major}.{real.minor}"
        raise ValueError(f"COURSE_FAKE_PYTHON={version}: only the patch version can be faked (this is {this})")

    class version_info(tuple):  # sys.version_info's type cannot be instantiated; this tuple reads the same
        major, minor, micro, releaselevel, serial = (property(lambda self, i=i: self[i]) for i in range(5))

        def __repr__(self):
            return "sys.version_info(major={}, minor={}, micro={}, releaselevel={!r}, serial={})".format(*self)

    sys.version_info = version_info((major, minor, micro, real.releaselevel, real.serial))
    sys.version = version + sys.version[len(platform.python_version()) :]
    sys.hexversion = (sys.hexversion & ~0xFF00) | (micro << 8)


_REAL_PLATFORM = {}  # the platform functions _fake_platform replaced, by name


def _fake_platform(description):
    import platform

    system, machine = description.split()
    real = platform.uname()
    fake = platform.uname_result(system, real.node, "0.0-fake", "fake kernel", machine)
    _REAL_PLATFORM.update(uname=platform.uname, platform=platform.platform)
    platform.uname = lambda: fake  # platform.system() and .machine() read uname()
    platform.platform = lambda aliased=False, terse=False: f"{system}-0.0-fake-{machine}"


def _with_real_platform(run, *args):
    """run(*args) with the real platform functions: torch picks its native libraries (.so, .dylib, .dll) from
    platform.system() while it imports, and it has to find the ones it was built with."""
    import platform

    faked = {name: getattr(platform, name) for name in _REAL_PLATFORM}
    try:
        for name, function in _REAL_PLATFORM.items():
            setattr(platform, name, function)
        return run(*args)
    finally:
        for name, function in faked.items():
            setattr(platform, name, function)


def _fake_torch(torch):
    from torch.torch_version import TorchVersion

    version = os.environ.get("COURSE_FAKE_TORCH")
    if version:
        torch.__version__ = torch.version.__version__ = TorchVersion(version)
        tag = version.partition("+")[2]
        torch.version.cuda = f"{tag[2:-1]}.{tag[-1]}" if tag.startswith("cu") and tag[2:].isdigit() else None
    gpu = os.environ.get("COURSE_FAKE_GPU")
    if gpu:
        torch.cuda.is_available = _outside_torch(torch.cuda.is_available, lambda: True)
        torch.cuda.device_count = _outside_torch(torch.cuda.device_count, lambda: 1)
        torch.cuda.get_device_name = _outside_torch(torch.cuda.get_device_name, lambda device=None: gpu)
        torch.backends.mps.is_available = _outside_torch(torch.backends.mps.is_available, lambda: True)


def _outside_torch(real, fake):
    """`fake` for the course's code, the notebooks and the tests; `real` for torch's own modules. PyTorch's CUDA
    build asks torch.cuda.is_available() inside optimizer.step() and then talks to the driver: a GPU faked for
    torch itself would crash a machine without one (seen with 2.13.0+cu130 on a CPU-only machine)."""

    def answer(*args, **kwargs):
        caller = sys._getframe(1).f_globals.get("__name__", "")
        return real(*args, **kwargs) if caller == "torch" or caller.startswith("torch.") else fake(*args, **kwargs)

    return answer


class _PatchTorchOnImport:
    """A meta-path finder that lets torch import normally, then applies _fake_torch to it (torch stays lazy:
    the processes that never import it, like pytest itself, do not pay for it)."""

    def find_spec(self, name, path=None, target=None):
        if name != "torch":
            return None
        import importlib.util

        sys.meta_path.remove(self)
        spec = importlib.util.find_spec("torch")
        run = spec.loader.exec_module

        def exec_module(module):
            _with_real_platform(run, module)
            _fake_torch(module)

        spec.loader.exec_module = exec_module
        return spec


if _ON:
    if os.environ.get("COURSE_FAKE_PYTHON"):
        _fake_python(os.environ["COURSE_FAKE_PYTHON"])
    if os.environ.get("COURSE_FAKE_PLATFORM"):
        _fake_platform(os.environ["COURSE_FAKE_PLATFORM"])
    if os.environ.get("COURSE_FAKE_TORCH") or os.environ.get("COURSE_FAKE_GPU") or _REAL_PLATFORM:
        sys.meta_path.insert(0, _PatchTorchOnImport())
