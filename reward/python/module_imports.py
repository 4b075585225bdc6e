"""What a built extension module imports, read from its file by the judge before the candidate's
process loads it, and whether an honest kernel extension needs it (docs/SECURITY.md, "Evidence
the candidate cannot forge").

A module's code can call only what the dynamic loader binds for it: the undefined symbols of its
.dynsym and the libraries its DT_NEEDED entries name. Both are in the file the linker wrote, so
this reading owes nothing to the candidate's process (which may patch anything once it runs).
The policy is an allow-list of import classes (IMPORT_CLASSES); every import outside them is
refused, and the refusal names the symbol and the rule it meets:

  vendor-library   cuBLAS(Lt), cuDNN, cuFFT, cuRAND, cuSPARSE, cuSOLVER, NCCL, and torch's
                   wrappers of them (at::cuda::blas, the library handles): a separate rule, so a
                   policy that allows libraries can name it (LIBRARY_POLICIES, split_waived)
  dynamic-lookup   dlopen/dlsym/dlvsym and the like, cuGetProcAddress, cudaGetDriverEntryPoint,
                   importing or running Python from C: a symbol found at run time is one this
                   reading never sees
  torch-compute    ATen's operators (at::_ops::*, at::native::*, at::* free functions), the
                   dispatcher, torch::nn/jit: anything of torch's outside tensor plumbing
  not-allowed      any other import or library: fail closed
  loader-path      DT_RPATH, DT_RUNPATH, DT_AUDIT: libraries found somewhere else than the
                   loader's usual places

Standard library only (the judge's Python); the file is read by elf_dynamic.py.

Usage: python3 module_imports.py MODULE.so [--allow vendor-library]   (prints JSON)
"""

import json
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
# The reader's names, for judge.py: what the file asks the loader for.
from elf_dynamic import ModuleFileError, is_elf, read_imports  # noqa: E402,F401

# ---- naming a C++ symbol -------------------------------------------------------------------

STD_ABBREVIATIONS = {"a": "allocator", "b": "basic_string", "s": "string", "i": "istream",
                     "o": "ostream", "d": "iostream"}


# Special names that stand for another entity's name: a thunk (_ZTh, _ZTv, _ZTc and their call
# offsets) jumps to a virtual function with an adjusted this, a TLS wrapper or initializer (_ZTW,
# _ZTH) reaches a thread_local variable. Each is read as the entity it stands for, so importing
# one is judged as importing that function or variable.
CALL_OFFSET = r"(?:hn?\d+_|vn?\d+_n?\d+_)"
STANDS_FOR = re.compile(r"_ZT(?:c%s%s|%s|[WH])" % (CALL_OFFSET, CALL_OFFSET, CALL_OFFSET))


def name_parts(symbol):
    """The leading qualified name of an Itanium-mangled symbol as components: "_ZN2at4_ops2mm4
    callE..." -> ["at", "_ops", "mm", "call"]; typeinfo, vtables and VTTs ("_ZTV...", "_ZTT...")
    -> ["<vtable>", ...the type's components]; thunks and TLS wrappers -> what they stand for
    (STANDS_FOR); operator new/delete -> ["<operator>"]. None for a C symbol. Only
    the name is read (never the parameter types), up to the first template argument list,
    constructor, destructor or operator, which ends it."""
    s = symbol.split("@", 1)[0]
    if not s.startswith("_Z"):
        return None
    stands_for = STANDS_FOR.match(s)
    if stands_for:
        return name_parts("_Z" + s[stands_for.end():])
    i, parts = 2, []
    if s.startswith("_ZT") and len(s) > 4 and s[3] in "VTIS":
        parts.append({"V": "<vtable>", "T": "<vtt>", "I": "<typeinfo>",
                      "S": "<typeinfo-name>"}[s[3]])
        i = 4
    nested = i < len(s) and s[i] == "N"
    if nested:
        i += 1
        while i < len(s) and s[i] in "rVKRO":
            i += 1
    if s.startswith("St", i):
        parts.append("std")
        i += 2
    elif i + 1 < len(s) and s[i] == "S" and s[i + 1] in STD_ABBREVIATIONS:
        parts += ["std", STD_ABBREVIATIONS[s[i + 1]]]
        i += 2
    while i < len(s):
        if s[i].isdigit():
            m = re.match(r"\d+", s[i:])
            n = int(m.group(0))
            i += len(m.group(0))
            parts.append(s[i:i + n])
            i += n
            while s.startswith("B", i):  # ABI tags: [abi:cxx11]
                m = re.match(r"B(\d+)", s[i:])
                if not m:
                    break
                i += len(m.group(0)) + int(m.group(1))
            if not nested:
                break
        elif s[i] in "CD" and i + 1 < len(s) and s[i + 1].isdigit():
            parts.append("<ctor>" if s[i] == "C" else "<dtor>")
            break
        elif s[i].islower() and i + 1 < len(s) and s[i + 1].isalpha():
            parts.append("<operator>")
            break
        else:
            break  # I (template arguments), E (end of the name), anything else
    return parts or None


def readable(symbol):
    parts = name_parts(symbol)
    return "::".join(parts) if parts else symbol.split("@", 1)[0]


# ---- the policy: classes of imports an honest kernel extension needs -----------------------

# Each allowed class: what it is and why an honest extension needs it.
IMPORT_CLASSES = {
    "c-runtime": "libc, libm, libgcc, pthread basics (memory, strings, printing, math, once "
                 "and mutexes, stack protection)",
    "c++-runtime": "libstdc++ and the C++ ABI (strings, streams, exceptions, new/delete, "
                   "typeinfo); not file streams or threads",
    "python-c-api": "CPython's C API as pybind11 uses it; not importing or running code",
    "pybind11": "pybind11's type casters (torch's Tensor caster lives in libtorch_python)",
    "cuda-runtime": "CUDA runtime: kernel registration and launch, memory, errors, device "
                    "queries, events, occupancy",
    "torch-tensor-plumbing": "tensor creation (empty*, zeros*, ones*, full*), views and "
                             "copies, accessors, options, device guards, streams, "
                             "TORCH_CHECK and c10 errors, torch's Python glue",
}

# The rules a reward policy may waive (LIBRARY_POLICIES below): vendor libraries compute with
# code that is not the candidate's, which a policy may accept where it asks for speed, not for
# kernels written by hand (issue 50). The others would blind this check itself.
RULES_A_POLICY_MAY_WAIVE = ("vendor-library",)

# The reward policy's rule on library calls (reward.libraries, options/reward_options.h;
# judge.py --libraries) and the rules each waives: own_kernels_only (RL's default) none, allowed
# (KernelBench's and DICE's evaluation) the vendor libraries.
LIBRARY_POLICIES = {"own_kernels_only": (), "allowed": ("vendor-library",)}
DEFAULT_LIBRARY_POLICY = "own_kernels_only"
# The finding a library call leaves in the verdict, whatever the policy (kLibraryCallsFinding in
# options/reward_options.h): fatal under own_kernels_only, a note under allowed. dice-eval's "own
# kernels only" column counts an answer with one as not correct.
LIBRARY_CALLS_FINDING = "library-calls"


def policy_says(rule, policy, waived):
    """The words a finding gives to name the policy that refused (or waived) a rule."""
    return "rule %s, %s by reward.libraries: %s" % (rule, "allowed" if waived else "refused",
                                                     policy)


def split_waived(refused, waived_rules):
    """(still refused, waived) of judge_imports()'s refusals: those under a rule in
    `waived_rules` refuse nothing, and are returned apart so the verdict can say they were
    there."""
    return ([r for r in refused if r["rule"] not in waived_rules],
            [r for r in refused if r["rule"] in waived_rules])


def findings_under_policy(name, refused, policy):
    """(findings, antiCheat detail or None) for module `name`'s refusals (judge_imports() with
    nothing waived) under the library policy `policy`: a non-fatal LIBRARY_CALLS_FINDING for
    what it waives; a fatal "module-imports" finding and the verdict's detail for the rest, the
    policy named where it could have waived the first rule."""
    refused, waived = split_waived(refused, LIBRARY_POLICIES[policy])
    findings = []
    if waived:
        findings.append({"check": LIBRARY_CALLS_FINDING, "fatal": False, "detail": (
            "module %s imports %s (%s)" % (name, describe(waived),
                                           policy_says("vendor-library", policy, True)))[:1000]})
    if not refused:
        return findings, None
    first = refused[0]
    said = (" (%s)" % policy_says(first["rule"], policy, False)
            if first["rule"] in RULES_A_POLICY_MAY_WAIVE else "")
    findings.append({"check": "module-imports", "fatal": True, "detail": (
        "module %s imports %s%s" % (name, describe(refused), said))[:1000]})
    return findings, "the module %s imports %s (rule %s: %s)%s" % (
        name, first["import"], first["rule"], first["what"], said)

VENDOR_PREFIXES = ("cublas", "cudnn", "cufft", "curand", "cusparse", "cusolver", "nccl",
                   "nvjpeg", "npp", "cutensor")
# Libraries by name without "lib" and version: the vendor ones, and those an extension links.
VENDOR_LIBRARIES = re.compile(r"^lib(cublas|cublasLt|cudnn[a-z_]*|cufft[a-z]*|curand|cusparse"
                              r"[a-zA-Z]*|cusolver[a-zA-Z]*|nccl|nvjpeg|npp[a-z]*|cutensor)"
                              r"(\.so.*)?$")
ALLOWED_LIBRARIES = re.compile(r"^(lib(c10|c10_cuda|torch|torch_cpu|torch_cuda|torch_python|"
                               r"torch_global_deps|shm|cudart|cuda|stdc\+\+|gcc_s|c|m|pthread|"
                               r"dl|rt)\.so(\.[0-9.]+)?|ld-linux-(x86-64|aarch64)\.so\.[0-9]+|"
                               r"libpython3\.[0-9]+\.so(\.[0-9.]+)?)$")

DYNAMIC_LOOKUP = {
    "dlopen", "dlmopen", "dlsym", "dlvsym", "dladdr", "dladdr1", "dlinfo", "dl_iterate_phdr",
    "_dl_sym", "__libc_dlsym", "__libc_dlopen_mode", "cuGetProcAddress", "cuGetProcAddress_v2",
    "cuGetExportTable", "cudaGetDriverEntryPoint", "cudaGetDriverEntryPointByVersion",
    "cudaGetExportTable", "Py_CompileString", "Py_CompileStringExFlags",
    "Py_CompileStringObject", "PyEval_EvalCode", "PyEval_EvalCodeEx", "PyImport_Import",
    "PyImport_ImportModule", "PyImport_ImportModuleLevel", "PyImport_ImportModuleLevelObject",
    "PyImport_GetModule", "PyImport_AddModule", "PyImport_ExecCodeModule",
    "PyImport_ImportModuleNoBlock", "PyImport_GetModuleDict", "PyRun_SimpleString",
    "PyRun_SimpleStringFlags", "PyRun_String", "PyRun_StringFlags", "PyRun_File",
    "PyRun_FileExFlags", "PyRun_SimpleFile", "PyRun_SimpleFileExFlags", "PyRun_AnyFile",
    "PyRun_AnyFileExFlags",
}
DYNAMIC_LOOKUP_PREFIXES = ("PyImport_", "PyRun_", "_PyImport_", "_PyRun_")

C_RUNTIME = {
    "malloc", "calloc", "realloc", "free", "posix_memalign", "aligned_alloc", "memalign",
    "memcpy", "memmove", "memset", "memcmp", "memchr", "strlen", "strnlen", "strcmp", "strncmp",
    "strcpy", "strncpy", "strcat", "strncat", "strchr", "strrchr", "strstr", "strdup", "strndup",
    "strtol", "strtoul", "strtoll", "strtoull", "strtod", "strtof", "atoi", "atol", "atof",
    "printf", "fprintf", "sprintf", "snprintf", "vprintf", "vfprintf", "vsprintf", "vsnprintf",
    "puts", "putchar", "fputs", "fputc", "fflush", "fwrite", "stdout", "stderr", "abort",
    "exit", "_exit", "_Exit", "getenv",
    "__printf_chk", "__fprintf_chk", "__sprintf_chk", "__snprintf_chk", "__vsnprintf_chk",
    "__vfprintf_chk", "__memcpy_chk", "__memmove_chk", "__memset_chk", "__strcpy_chk",
    "__strcat_chk", "__stack_chk_fail", "__assert_fail", "__errno_location", "__tls_get_addr",
    "__libc_single_threaded", "__cxa_atexit", "__cxa_finalize", "__cxa_thread_atexit_impl",
    "_ITM_deregisterTMCloneTable", "_ITM_registerTMCloneTable", "__gmon_start__",
    "pthread_once", "pthread_mutex_lock", "pthread_mutex_unlock", "pthread_mutex_trylock",
    "pthread_key_create", "pthread_key_delete", "pthread_getspecific", "pthread_setspecific",
    "pthread_self", "pthread_cond_wait", "pthread_cond_signal", "pthread_cond_broadcast",
    "pthread_rwlock_rdlock", "pthread_rwlock_wrlock", "pthread_rwlock_unlock",
    "__pthread_key_create", "sched_yield", "qsort", "bsearch", "abs", "labs", "llabs",
}
C_RUNTIME_PREFIXES = ("_Unwind_", "__cxa_", "__gxx_", "__dynamic_cast", "__popcount",
                      "__divti3", "__udivti3", "__modti3", "__umodti3", "__muldc3", "__mulsc3",
                      "__divdc3", "__divsc3")
# libm: the math functions (and their float/long double forms) kernels' host code may use.
C_MATH = re.compile(r"^(__)?(sqrt|cbrt|exp|exp2|expm1|log|log2|log10|log1p|pow|fabs|floor|ceil|"
                    r"round|lround|llround|trunc|rint|lrint|nearbyint|fmod|remainder|fmin|fmax|"
                    r"fma|hypot|sin|cos|tan|asin|acos|atan|atan2|sinh|cosh|tanh|asinh|acosh|"
                    r"atanh|erf|erfc|tgamma|lgamma|frexp|ldexp|modf|copysign|nextafter|isnan|"
                    r"isinf|finite|sincos)(f|l)?(_finite)?$")

CUDA_RUNTIME = {
    "cudaLaunchKernel", "cudaLaunchKernel_ptsz", "cudaLaunchKernelExC", "cudaLaunchKernelExC_ptsz",
    "cudaLaunchCooperativeKernel", "cudaLaunchCooperativeKernel_ptsz", "cudaFuncSetAttribute",
    "cudaFuncGetAttributes", "cudaFuncSetCacheConfig", "cudaFuncSetSharedMemConfig",
    "cudaOccupancyMaxActiveBlocksPerMultiprocessor",
    "cudaOccupancyMaxActiveBlocksPerMultiprocessorWithFlags", "cudaOccupancyMaxPotentialBlockSize",
    "cudaOccupancyAvailableDynamicSMemPerBlock", "cudaOccupancyMaxPotentialClusterSize",
    "cudaOccupancyMaxActiveClusters", "cudaMalloc", "cudaFree", "cudaMallocAsync",
    "cudaMallocAsync_ptsz", "cudaFreeAsync", "cudaFreeAsync_ptsz", "cudaMallocManaged",
    "cudaMallocHost", "cudaHostAlloc", "cudaFreeHost", "cudaMallocPitch", "cudaMemcpy",
    "cudaMemcpy_ptds", "cudaMemcpyAsync", "cudaMemcpyAsync_ptsz", "cudaMemcpy2D",
    "cudaMemcpy2DAsync", "cudaMemcpyToSymbol", "cudaMemcpyToSymbolAsync", "cudaMemcpyFromSymbol",
    "cudaMemcpyFromSymbolAsync", "cudaMemcpyToSymbol_ptds", "cudaMemcpyToSymbolAsync_ptsz",
    "cudaMemset", "cudaMemsetAsync", "cudaMemset_ptds", "cudaMemsetAsync_ptsz", "cudaMemset2D",
    "cudaMemset2DAsync", "cudaGetSymbolAddress", "cudaGetSymbolSize", "cudaMemGetInfo",
    "cudaPointerGetAttributes", "cudaGetLastError", "cudaPeekAtLastError", "cudaGetErrorString",
    "cudaGetErrorName", "cudaGetDevice", "cudaSetDevice", "cudaGetDeviceCount",
    "cudaGetDeviceProperties", "cudaGetDeviceProperties_v2", "cudaDeviceGetAttribute",
    "cudaDeviceSynchronize", "cudaDeviceGetLimit", "cudaDriverGetVersion",
    "cudaRuntimeGetVersion", "cudaStreamSynchronize", "cudaStreamSynchronize_ptsz",
    "cudaStreamQuery", "cudaStreamWaitEvent", "cudaEventCreate", "cudaEventCreateWithFlags",
    "cudaEventRecord", "cudaEventRecord_ptsz", "cudaEventSynchronize", "cudaEventDestroy",
    "cudaEventElapsedTime", "cudaEventQuery", "cudaGetFuncBySymbol", "cudaFuncGetName",
}
# What nvcc's generated code calls to register and launch a module's own kernels.
CUDA_RUNTIME_PREFIXES = ("__cudaRegister", "__cudaUnregisterFatBinary", "__cudaInitModule",
                         "__cudaPushCallConfiguration", "__cudaPopCallConfiguration",
                         "__cudaLaunchKernel", "__cudaGetKernel", "__cudaLaunch")
CUDA_DRIVER = {"cuGetErrorString", "cuGetErrorName", "cuCtxGetCurrent", "cuCtxGetDevice",
               "cuCtxSynchronize", "cuDeviceGet", "cuDeviceGetAttribute", "cuDriverGetVersion"}

# ATen operators that make, describe, view or copy tensors without computing from their
# values: an `at::_ops` struct (or at::native / at:: function) named BASE or BASE_OVERLOAD.
TENSOR_PLUMBING_OPS = (
    "empty", "empty_like", "empty_strided", "new_empty", "new_empty_strided", "new_zeros",
    "new_ones", "new_full", "zeros", "zeros_like", "ones", "ones_like", "full", "full_like",
    "arange", "tensor", "scalar_tensor", "from_blob", "view", "view_as", "reshape",
    "_reshape_alias", "reshape_as", "as_strided", "contiguous", "expand", "expand_as",
    "squeeze", "unsqueeze", "flatten", "unflatten", "permute", "transpose", "t", "select",
    "slice", "narrow", "split", "chunk", "unbind", "detach", "alias", "clone", "copy", "_copy_from",
    "_to_copy", "to", "fill", "zero", "resize", "item", "_local_scalar_dense", "size", "sym_size",
    "stride", "sym_stride", "numel", "sym_numel", "cat", "stack", "set", "is_pinned",
    "pin_memory", "_pin_memory", "lift_fresh", "_has_compatible_shallow_copy_type", "record_stream",
)
TENSOR_PLUMBING = re.compile(r"^(%s)(_[A-Za-z0-9_]*)?$" % "|".join(
    re.escape(op) for op in sorted(TENSOR_PLUMBING_OPS, key=len, reverse=True)))
# Members of at::Tensor / at::TensorBase that torch exports (the computing ones are inline
# calls of at::_ops, judged as such).
TENSOR_MEMBERS = {"data_ptr", "mutable_data_ptr", "const_data_ptr", "__dispatch_contiguous",
                  "toString", "print", "item", "options", "_version", "is_view", "<ctor>",
                  "<dtor>", "<operator>", "sym_sizes", "sym_strides", "sizes", "strides",
                  "dim", "numel", "is_contiguous", "device", "dtype", "scalar_type",
                  "has_names", "is_inference", "requires_grad", "mutable_grad", "grad",
                  "_fw_grad", "_set_fw_grad"}
# torch's wrappers of the vendor libraries: vendor use, under its rule.
AT_CUDA_VENDOR = re.compile(r"^(blas|solver|sparse|cublas|cudnn|cusolver|cusparse|"
                            r"getCurrentCUDA(Blas|BlasLt|SolverDn|Sparse)Handle|"
                            r"getCuBLASWorkspace|clearCublasWorkspaces)")
AT_NATIVE_VENDOR = re.compile(r"[Cc]udnn|[Cc]ublas|[Cc]usolver|[Cc]usparse|[Cc]ufft|miopen")
AT_CUDA_ALLOWED = {"getCurrentCUDAStream", "getDefaultCUDAStream", "getStreamFromPool",
                   "getCurrentDeviceProperties", "getDeviceProperties", "warp_size",
                   "device_count", "current_device", "set_device", "CUDAStream",
                   "getCUDADeviceAllocator", "detail"}
AT_ALLOWED = {"TensorOptions", "OptionalDeviceGuard", "DeviceGuard", "TensorBase", "Tensor",
              "TensorMaker", "toString", "maybe_wrap_dim", "infer_size", "get_device",
              "getCPUAllocator", "typeMetaToScalarType"}
# c10's dispatcher reaches every operator by name: compute through another door.
C10_DISPATCH = {"Dispatcher", "OperatorHandle", "TypedOperatorHandle", "KernelFunction",
                "BoxedKernel", "OperatorName", "FunctionSchema"}
TORCH_ALLOWED = {"PyWarningHandler", "translate_exception_to_python", "autograd", "utils",
                 "detail", "python", "wrap_pybind_function"}
# torch's Python glue for tensors (THPVariable_Wrap, THPVariableClass, ...): global names.
TORCH_PYTHON_GLUE = ("THPVariable", "THPUtils_", "THPDtype", "THPDevice", "THPLayout",
                     "THPMemoryFormat", "THPSize")
TORCH_AUTOGRAD_ALLOWED = {"AutogradMeta", "impl", "VariableHooks", "make_variable",
                          "utils", "VariableInfo", "<ctor>", "<dtor>"}
# glog's CHECK and LOG machinery, which some torch builds' headers use (c10/util/Logging.h).
GLOG = {"base", "LogMessage", "LogMessageFatal", "LogMessageVoidify", "CheckOpMessageBuilder",
        "MakeCheckOpValueString"}
STD_REFUSED = {"basic_ifstream", "basic_ofstream", "basic_fstream", "basic_filebuf", "thread",
               "jthread", "__basic_file"}
VTABLE_OWNERS = {"std", "__cxxabiv1", "c10", "torch", "pybind11", "caffe2", "at"}


def classify_symbol(symbol):
    """(rule, class): rule None with the allowed class it belongs to, or the rule that refuses
    it ("vendor-library", "dynamic-lookup", "torch-compute", "not-allowed")."""
    name = symbol.split("@", 1)[0]
    parts = name_parts(name)
    if parts is None:
        return classify_c_symbol(name)
    if parts[0] in ("<vtable>", "<vtt>", "<typeinfo>", "<typeinfo-name>"):
        owner = parts[1] if len(parts) > 1 else ""
        if parts[0] not in ("<vtable>", "<vtt>") or owner in VTABLE_OWNERS:
            return None, "c++-runtime"
        return "not-allowed", "a vtable of %s" % owner
    head = parts[0]
    if head == "<operator>" or head == "__cxxabiv1" or head == "__gnu_cxx":
        return None, "c++-runtime"
    if head == "std":
        if len(parts) > 1 and (parts[1] in STD_REFUSED or
                               len(parts) > 2 and parts[2] in STD_REFUSED):
            return "not-allowed", "C++ file streams and threads"
        return None, "c++-runtime"
    if head == "pybind11":
        return None, "pybind11"
    if head == "google" and len(parts) > 1 and parts[1] in GLOG:
        return None, "c++-runtime"
    if head == "caffe2":
        return None, "torch-tensor-plumbing"
    if head == "c10":
        if any(p in C10_DISPATCH for p in parts[1:3]) or parts[1:3] == ["impl", "OperatorEntry"]:
            return "torch-compute", "torch's dispatcher"
        return None, "torch-tensor-plumbing"
    if head == "at":
        return classify_aten(parts)
    if head.startswith(TORCH_PYTHON_GLUE) and len(parts) == 1:
        return None, "torch-tensor-plumbing"
    if head == "torch":
        sub = parts[1] if len(parts) > 1 else ""
        if sub in TORCH_ALLOWED and (sub != "autograd" or len(parts) > 2 and
                                     parts[2] in TORCH_AUTOGRAD_ALLOWED):
            return None, "torch-tensor-plumbing"
        return "torch-compute", "torch::%s" % sub
    return "not-allowed", "C++ outside std, torch and pybind11"


def classify_aten(parts):
    sub = parts[1] if len(parts) > 1 else ""
    op = parts[2] if len(parts) > 2 else ""
    if sub in ("_ops", "native"):
        if TENSOR_PLUMBING.match(op):
            return None, "torch-tensor-plumbing"
        if AT_NATIVE_VENDOR.search(op):
            return "vendor-library", "torch's wrapper of a vendor library"
        return "torch-compute", "an ATen operator"
    if sub == "cuda":
        if AT_CUDA_VENDOR.match(op):
            return "vendor-library", "torch's wrapper of a vendor library"
        if op in AT_CUDA_ALLOWED:
            return None, "torch-tensor-plumbing"
        return "torch-compute", "at::cuda"
    if sub in ("TensorBase", "Tensor"):
        if op in TENSOR_MEMBERS or TENSOR_PLUMBING.match(op):
            return None, "torch-tensor-plumbing"
        return "torch-compute", "a Tensor method"
    if sub == "detail" and op.startswith("empty"):
        return None, "torch-tensor-plumbing"
    if sub in AT_ALLOWED or TENSOR_PLUMBING.match(sub):
        return None, "torch-tensor-plumbing"
    return "torch-compute", "an ATen function"


def classify_c_symbol(name):
    lower = name.lower()
    if lower.startswith(VENDOR_PREFIXES):
        return "vendor-library", "a vendor library's API"
    if name in DYNAMIC_LOOKUP or name.startswith(DYNAMIC_LOOKUP_PREFIXES):
        return "dynamic-lookup", "finds code at run time"
    if name in C_RUNTIME or name.startswith(C_RUNTIME_PREFIXES) or C_MATH.match(name):
        return None, "c-runtime"
    if name in CUDA_RUNTIME or name.startswith(CUDA_RUNTIME_PREFIXES):
        return None, "cuda-runtime"
    if name in CUDA_DRIVER:
        return None, "cuda-runtime"
    if name.startswith(("Py", "_Py")):
        return None, "python-c-api"
    if name.startswith(TORCH_PYTHON_GLUE):
        return None, "torch-tensor-plumbing"
    if name.startswith(("cuda", "cu")):
        return "not-allowed", "a CUDA API outside the runtime's launch, memory and query calls"
    return "not-allowed", "a C function outside the runtime's allow-list"


def classify_library(needed):
    if VENDOR_LIBRARIES.match(needed):
        return "vendor-library", "a vendor library"
    if ALLOWED_LIBRARIES.match(needed):
        return None, "library"
    return "not-allowed", "a library outside torch's, CUDA's runtime and the C/C++ runtime"


# The order refusals are listed in (the verdict names the first): the most telling rule first.
RULE_ORDER = ("vendor-library", "dynamic-lookup", "torch-compute", "loader-path", "not-allowed")


def judge_imports(imports, allowed=()):
    """[{"rule", "import", "what"}] refused in a read_imports() result, by RULE_ORDER and then in
    file order (libraries, loader paths, symbols). Rules named in `allowed` (e.g.
    "vendor-library") refuse nothing."""
    refused = []
    for lib in imports["needed"]:
        rule, what = classify_library(lib)
        if rule and rule not in allowed:
            refused.append({"rule": rule, "import": lib, "what": what + " (DT_NEEDED)"})
    for tag, value in imports["loader"]:
        if "loader-path" not in allowed:
            refused.append({"rule": "loader-path", "import": "%s %s" % (tag, value),
                            "what": "a library search path or auditor of the module's own"})
    for symbol in imports["symbols"]:
        rule, what = classify_symbol(symbol)
        if rule and rule not in allowed:
            refused.append({"rule": rule, "import": readable(symbol), "what": what,
                            "symbol": symbol})
    return sorted(refused, key=lambda r: RULE_ORDER.index(r["rule"]))


def check_file(path, allowed=()):
    """(imports, refused) of the module at path; ModuleFileError when it cannot be read as the
    loader would."""
    with open(path, "rb") as f:
        data = f.read()
    imports = read_imports(data)
    return imports, judge_imports(imports, allowed)


def describe(refused, limit=5):
    """One line naming the first refused imports and their rules."""
    shown = "; ".join("%s (rule %s: %s)" % (r["import"], r["rule"], r["what"])
                      for r in refused[:limit])
    more = len(refused) - limit
    return shown + ("; and %d more" % more if more > 0 else "")


def main(argv):
    if not argv:
        print(__doc__.split("\n\n")[-1], file=sys.stderr)
        return 2
    allowed = [argv[i + 1] for i, a in enumerate(argv[:-1]) if a == "--allow"]
    imports, refused = check_file(argv[0], allowed)
    json.dump({"needed": imports["needed"], "symbols": len(imports["symbols"]),
               "refused": refused}, sys.stdout, indent=1)
    print()
    return 1 if refused else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
