"""The kernel-ran check's rule: which launched kernels are the candidate's own. The runner lists
each kernel one forward launched with the library that launched it (the launch probe, runner.py);
the candidate's own are those its modules launched, whatever their name. A launch whose library
is unknown (the profiler) counts by name, never for a name in torch's or its libraries'
namespaces. Anything else but fills and copies is a fallback to PyTorch (fatal).
"""

import re

# Kernels in the namespaces of torch and its libraries: matched by name only, they never count
# as the candidate's own (a dead kernel of the candidate's named like one of torch's would).
LIBRARY_NAMESPACE = re.compile(r"(^|[^A-Za-z0-9_])(at|c10|cub|cutlass|thrust|cublasLt|cudnn|"
                               r"flash|xformers)::|cublas|cudnn|cutlass|sm\d+_xmma")
# Kernels of torch's that a candidate's extension may launch beside its own: allocation-side
# work (fills, copies), not computation. Any other kernel not of the candidate's module is a
# fallback to PyTorch (fatal).
ALLOWED_FOREIGN_KERNEL = re.compile(
    r"fill|copy|memset|memcpy|zero|FillFunctor|direct_copy|CatArrayBatchedCopy", re.IGNORECASE)


def kernel_names_ran(names, kernels):
    """Which of the candidate's __global__ names appear in the launched kernels' names."""
    found = set()
    for name in names:
        for k in kernels:
            if re.search(r"(^|[^A-Za-z0-9_])%s([^A-Za-z0-9_]|$)" % re.escape(k), name):
                found.add(k)
    return found


def classify_launches(launches, modules, kernels):
    """(own kernel names, foreign kernel names, whether some own ones were matched by name only)
    for the runner's [[name, library file or "?"]] list."""
    own, foreign, by_name = [], [], False
    for name, path in launches:
        if path in modules:
            own.append(name)
        elif path == "?" and kernel_names_ran([name], kernels) and \
                not LIBRARY_NAMESPACE.search(name):
            own.append(name)
            by_name = True
        else:
            foreign.append(name)
    return own, foreign, by_name


def fallbacks(foreign):
    """The foreign kernels that computed something (not allocation-side fills and copies)."""
    return sorted({n for n in foreign if not ALLOWED_FOREIGN_KERNEL.search(n)})
