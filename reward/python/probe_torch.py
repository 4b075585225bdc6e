"""Print, as JSON, what compiling a torch extension by hand needs from this Python's torch:
include and library folders, the C++ ABI flag, the extension-module suffix and versions.
Run once per reward worker (toolchain.cc). Exits 3 with a message when torch is missing."""

import json
import sys
import sysconfig

try:
    import torch
    import torch.utils.cpp_extension as cpp_ext
except ImportError as e:  # the worker reports this as "no PyTorch in <python>"
    print("no PyTorch in %s: %s" % (sys.executable, e), file=sys.stderr)
    sys.exit(3)


def call_with_cuda(fn):
    # torch >= 2.6 takes device_type="cuda"; older versions take cuda=True.
    for kwargs in ({"device_type": "cuda"}, {"cuda": True}):
        try:
            return list(fn(**kwargs))
        except TypeError:
            continue
        except (OSError, RuntimeError, EnvironmentError):
            break
    return list(fn())


print(json.dumps({
    "torch_version": torch.__version__,
    "torch_cuda": torch.version.cuda or "",
    "include_paths": call_with_cuda(cpp_ext.include_paths),
    "library_paths": call_with_cuda(cpp_ext.library_paths),
    "python_include": sysconfig.get_paths()["include"],
    "ext_suffix": sysconfig.get_config_var("EXT_SUFFIX") or ".so",
    "cxx11_abi": int(bool(getattr(torch._C, "_GLIBCXX_USE_CXX11_ABI", True))),
    "pybind11_abi": [getattr(torch._C, "_PYBIND11_" + k, None)
                     for k in ("COMPILER_TYPE", "STDLIB", "BUILD_ABI")],
}))
