"""The kernel-ran check's rule: which launched kernels are the candidate's own. The runner lists
each kernel one forward launched with the library that launched it (the launch probe, runner.py);
the candidate's own are those its modules launched, whatever their name. A launch whose library
is unknown (the profiler) counts by name, never for a name in torch's or its libraries'
namespaces. Anything else but fills and copies computed outside the candidate's kernels: a
vendor library's kernel (cuBLAS, cuDNN, CUTLASS, CUB, ...) is a library call, which the reward
policy's rule on library calls (reward.libraries) refuses (own_kernels_only) or allows (allowed);
any other is a fallback to PyTorch (fatal under every policy).
"""

import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import module_imports  # noqa: E402

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
        elif is_own_by_name(name, path, kernels):
            own.append(name)
            by_name = True
        else:
            foreign.append(name)
    return own, foreign, by_name


def is_own_by_name(name, path, kernels):
    return path == "?" and bool(kernel_names_ran([name], kernels)) and \
        not LIBRARY_NAMESPACE.search(name)


# By name, where the launching library is unknown (the profiler): kernels of cuBLAS(Lt), cuDNN,
# CUTLASS and CUB (cuBLAS's unprefixed ones: <arch>_<x>gemm_..., gemv, splitKreduce). Never one
# in torch's namespaces: at::, c10:: and at_cuda_detail:: (torch's own copy of CUB, its sorts and
# scans) stay PyTorch's.
VENDOR_KERNEL_NAME = re.compile(
    r"(^|[^A-Za-z0-9_])(cub|cutlass|cublasLt|cudnn)::|cublas|cudnn|cutlass|xmma|"
    r"(^|[^A-Za-z0-9_])(sm\d+|ampere|volta|turing|maxwell|hopper)_[a-z0-9]*gemm|gemv|splitKreduce")
TORCH_KERNEL_NAME = re.compile(r"(^|[^A-Za-z0-9_])(at|c10|at_cuda_detail)::")


def is_vendor_kernel(name, library):
    """Whether a launch that is not the candidate's own is a vendor library's: launched from a
    vendor library's file (module_imports.VENDOR_LIBRARIES), or, with no launching library known
    ("?"), named like one (VENDOR_KERNEL_NAME, outside torch's namespaces)."""
    if library != "?":
        return bool(module_imports.VENDOR_LIBRARIES.match(library))
    return bool(VENDOR_KERNEL_NAME.search(name)) and not TORCH_KERNEL_NAME.search(name)


def computing_foreign(launches, modules, kernels):
    """(vendor, torch): the names of the launches that computed something outside the
    candidate's own kernels (not fills or copies), split into library calls (is_vendor_kernel)
    and PyTorch's own. A name launched both ways is PyTorch's."""
    vendor, torch = set(), set()
    for name, library in launches:
        if library in modules or is_own_by_name(name, library, kernels) or \
                ALLOWED_FOREIGN_KERNEL.search(name):
            continue
        (vendor if is_vendor_kernel(name, library) else torch).add(name)
    return sorted(vendor - torch), sorted(torch)


def library_call_finding(vendor, policy):
    """(finding, antiCheat detail or None) for vendor kernels that computed part of forward,
    under the library policy `policy` (module_imports.LIBRARY_POLICIES): the same
    library-calls finding either way, fatal where the policy refuses them."""
    waived = "vendor-library" in module_imports.LIBRARY_POLICIES[policy]
    said = module_imports.policy_says("vendor-library", policy, waived)
    finding = {"check": module_imports.LIBRARY_CALLS_FINDING, "fatal": not waived,
               "detail": "vendor libraries' kernels computed part of forward (%s): %s" % (
                   said, "; ".join(vendor)[:500])}
    if waived:
        return finding, None
    return finding, "forward fell back to a vendor library's kernels (%s)" % said
