"""Tests of reward/python/elf_dynamic.py and module_imports.py (the built module's imports, read
by the judge from the file before the candidate's process loads it) on shared libraries built
here with g++ and nvcc, and of judge.py refusing a module by them before its runner loads it.
Each compiler's tests skip with a message where it is missing; the judge's skip without torch."""

import json
import os
import random
import shutil
import struct
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
PY = os.path.join(HERE, "..", "..", "reward", "python")
FIXTURES = os.path.join(HERE, "evaluate_fixtures")
sys.path.insert(0, PY)

import elf_dynamic as ed  # noqa: E402
import module_imports as mi  # noqa: E402

GXX = shutil.which("g++")
NVCC = shutil.which("nvcc") or ("/usr/local/cuda/bin/nvcc"
                                if os.access("/usr/local/cuda/bin/nvcc", os.X_OK) else None)
CUDA_LIB = os.path.join(os.path.dirname(os.path.dirname(NVCC or "/usr/local/cuda/bin/nvcc")),
                        "lib64")
HAVE_CUBLAS = os.path.exists(os.path.join(CUDA_LIB, "libcublas.so"))

# A library that calls `body` from an exported function; `decls` declares what it calls (shared
# libraries may leave symbols undefined: the loader binds them, from whatever is loaded).
LIBRARY = """
#include <cstdio>
%s
extern "C" int dice_test_entry(void* p) {
%s
  return 0;
}
"""
CUDA_DECLS = 'extern "C" int cudaLaunchKernel(const void*, ...);\n'
CUBLAS_DECLS = 'extern "C" int cublasSgemm_v2(void*, ...);\n'
DL_DECLS = 'extern "C" void* dlsym(void*, const char*);\n'
ATEN_DECLS = "namespace at { namespace _ops { struct mm { static void call(); }; } }\n"


class Build:
    """Shared libraries in a temporary folder, removed with it."""

    def __init__(self):
        self.dir = tempfile.mkdtemp(prefix="dice_module_imports_test_")

    def close(self):
        shutil.rmtree(self.dir, ignore_errors=True)

    def gxx(self, name, decls, body, flags=()):
        src = os.path.join(self.dir, name + ".cc")
        out = os.path.join(self.dir, name + ".so")
        with open(src, "w") as f:
            f.write(LIBRARY % (decls, body))
        subprocess.run([GXX, "-shared", "-fPIC", "-O1", "-o", out, src] + list(flags),
                       check=True, capture_output=True, text=True)
        return out

    def nvcc(self, name, source, flags=()):
        src = os.path.join(self.dir, name + ".cu")
        out = os.path.join(self.dir, name + ".so")
        with open(src, "w") as f:
            f.write(source)
        # As the reward worker builds: the runtime shared, never linked in statically (whose
        # copy opens libcuda itself through dlopen).
        subprocess.run([NVCC, "-shared", "-Xcompiler", "-fPIC", "-cudart", "shared",
                        "-gencode=arch=compute_90,code=sm_90", "-o", out, src] + list(flags),
                       check=True, capture_output=True, text=True)
        return out


class BuildsLibraries(unittest.TestCase):
    """A test case whose tests build libraries into one folder, removed after them."""

    @classmethod
    def setUpClass(cls):
        cls.build = Build()

    @classmethod
    def tearDownClass(cls):
        cls.build.close()


def rules(refused):
    return {(r["rule"], r["import"]) for r in refused}


@unittest.skipIf(GXX is None, "no g++")
class ElfReaderTest(BuildsLibraries):
    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.lib = cls.build.gxx("calls", CUDA_DECLS + CUBLAS_DECLS + DL_DECLS,
                                'printf("x");\n  cudaLaunchKernel(p);\n  cublasSgemm_v2(p);\n'
                                '  dlsym(p, "cublasSgemm_v2");\n')

    def read(self, path):
        with open(path, "rb") as f:
            return f.read()

    def test_the_undefined_symbols_are_the_imports(self):
        symbols = set(ed.read_imports(self.read(self.lib))["symbols"])
        self.assertTrue({"cudaLaunchKernel", "cublasSgemm_v2", "dlsym"} <= symbols, symbols)
        self.assertNotIn("dice_test_entry", symbols)  # defined here: an export, not an import

    @unittest.skipIf(shutil.which("nm") is None, "no nm")
    def test_agrees_with_binutils(self):
        out = subprocess.run(["nm", "-D", "--undefined-only", self.lib], capture_output=True,
                             text=True, check=True).stdout
        want = {line.split()[-1].split("@")[0] for line in out.splitlines() if line.strip()}
        self.assertEqual(set(ed.read_imports(self.read(self.lib))["symbols"]), want)

    @unittest.skipIf(not HAVE_CUBLAS, "no libcublas.so next to nvcc")
    def test_needed_libraries_and_loader_paths(self):
        lib = self.build.gxx("linked", CUBLAS_DECLS, "  cublasSgemm_v2(p);\n",
                             ["-Wl,--no-as-needed", "-L" + CUDA_LIB, "-lcublas",
                              "-Wl,-rpath," + CUDA_LIB])
        imports = ed.read_imports(self.read(lib))
        self.assertTrue(any(n.startswith("libcublas.so") for n in imports["needed"]), imports)
        self.assertEqual([value for _, value in imports["loader"]], [CUDA_LIB])

    def test_what_is_not_an_elf64_shared_object_is_refused(self):
        data = self.read(self.lib)
        for what, bad in (("text", b"import torch\n" * 10), ("truncated", data[:200]),
                          ("elf32", data[:4] + b"\x01" + data[5:]),
                          ("executable", data[:16] + struct.pack("<H", 2) + data[18:])):
            with self.assertRaises(ed.ModuleFileError, msg=what):
                ed.read_imports(bad)

    def test_corrupt_tables_raise_only_the_readers_error(self):
        # Seeded byte changes in the header, the program and section headers, the dynamic
        # segment and .dynsym: each read either answers or says why not (never another exception,
        # which the judge would report as a fault of its own).
        data = self.read(self.lib)
        elf = ed.Elf64(data)
        dyn = next(p for p in elf.segments if p[0] == ed.PT_DYNAMIC)
        sym = next(s for s in elf.sections if s[1] == ed.SHT_DYNSYM)
        regions = [(0, 64), (elf.phoff, elf.phoff + elf.phnum * elf.phentsize),
                   (elf.shoff, elf.shoff + elf.shnum * elf.shentsize),
                   (dyn[2], dyn[2] + dyn[5]), (sym[4], sym[4] + sym[5])]
        rng = random.Random(49)
        for _ in range(2000):
            bad = bytearray(data)
            for _ in range(rng.randint(1, 4)):
                lo, hi = rng.choice(regions)
                bad[rng.randrange(lo, hi)] = rng.randrange(256)
            try:
                ed.read_imports(bytes(bad))
            except ed.ModuleFileError:
                pass

    def test_section_headers_that_disagree_with_the_loader_are_refused(self):
        # The loader binds through the dynamic segment's DT_SYMTAB; a .dynsym section header
        # pointing elsewhere (at a table of harmless names) must not be believed.
        data = bytearray(self.read(self.lib))
        elf = ed.Elf64(bytes(data))
        k = next(i for i, s in enumerate(elf.sections) if s[1] == ed.SHT_DYNSYM)
        at = elf.shoff + k * elf.shentsize + 16  # sh_addr
        struct.pack_into("<Q", data, at, struct.unpack_from("<Q", data, at)[0] + 24)
        with self.assertRaises(ed.ModuleFileError) as e:
            ed.read_imports(bytes(data))
        self.assertIn("DT_SYMTAB", str(e.exception))


class PolicyTest(unittest.TestCase):
    """Names as the linker writes them: the allow-list by class, anything else refused."""

    HONEST = [
        "_ZN2at4_ops10empty_like4callERKNS_6TensorEN3c108optionalINS5_10ScalarTypeEEE",
        "_ZN2at4_ops19empty_memory_format4callEN3c108ArrayRefINS2_6SymIntEEE",
        "_ZN2at4_ops4view4callERKNS_6TensorEN3c108ArrayRefINS5_6SymIntEEE",
        "_ZN2at11TensorMaker11make_tensorEv",
        "_ZNK2at10TensorBase8data_ptrIfEEPT_v",
        "_ZNK2at10TensorBase21__dispatch_contiguousEN3c1012MemoryFormatE",
        "_ZN3c106detail14torchCheckFailEPKcS2_jS2_",
        "_ZN3c104cuda29c10_cuda_check_implementationEiPKcS2_ib",
        "_ZN3c104cuda20getCurrentCUDAStreamEa",
        "_ZN2at4cuda26getCurrentDevicePropertiesEv",
        "_ZN8pybind116detail11type_casterIN2at6TensorEvE4loadENS_6handleEb",
        "_ZN5torch16PyWarningHandlerC1Ev",
        "_ZNSt7__cxx1112basic_stringIcSt11char_traitsIcESaIcEE9_M_createERmm@GLIBCXX_3.4.21",
        "_ZTVN5torch8autograd12AutogradMetaE", "_Znwm@GLIBCXX_3.4", "__cxa_throw@CXXABI_1.3",
        "PyObject_GetAttrString", "_Py_Dealloc", "cudaLaunchKernel@libcudart.so.13",
        "__cudaRegisterFatBinary", "cudaGetLastError", "memcpy@GLIBC_2.14", "expf",
        "__stack_chk_fail", "_Z16THPVariable_WrapN2at10TensorBaseE", "THPVariableClass",
        "exit@GLIBC_2.2.5",  # dev item 3635 exits on a CUDA error
        # The VTT of std::ostringstream (virtual bases): every module built against torch
        # 2.11's headers on the H100 imports it (c10::str, TORCH_CHECK's messages).
        "_ZTTNSt7__cxx1119basic_ostringstreamIcSt11char_traitsIcESaIcEEE@GLIBCXX_3.4.21",
        # Thunks read as the functions they jump to.
        "_ZThn16_NSt14basic_iostreamIwSt11char_traitsIwEED1Ev",
        "_ZTv0_n24_NSt7__cxx1118basic_stringstreamIcSt11char_traitsIcESaIcEED0Ev",
    ]
    REFUSED = [
        ("cublasSgemm_v2", "vendor-library"), ("cublasLtMatmul", "vendor-library"),
        ("cudnnConvolutionForward", "vendor-library"), ("cufftExecC2C", "vendor-library"),
        ("curandGenerateUniform", "vendor-library"), ("cusparseSpMM", "vendor-library"),
        ("cusolverDnSgetrf", "vendor-library"),
        ("_ZN2at4cuda4blas4gemmIfEEvcclll", "vendor-library"),
        ("_ZN2at4cuda25getCurrentCUDABlasHandleEv", "vendor-library"),
        ("_ZN2at6native14getCudnnHandleEv", "vendor-library"),
        ("dlsym@GLIBC_2.34", "dynamic-lookup"), ("dlopen", "dynamic-lookup"),
        ("dlvsym", "dynamic-lookup"), ("cuGetProcAddress_v2", "dynamic-lookup"),
        ("cudaGetDriverEntryPoint", "dynamic-lookup"), ("PyImport_ImportModule", "dynamic-lookup"),
        ("PyRun_SimpleString", "dynamic-lookup"),
        ("_ZN2at4_ops2mm4callERKNS_6TensorES4_", "torch-compute"),
        ("_ZN2at4_ops5addmm4callERKNS_6TensorES4_S4_RKN3c106ScalarES8_", "torch-compute"),
        ("_ZN2at4_ops6conv2d4callERKNS_6TensorE", "torch-compute"),
        ("_ZN2at4_ops6linear4callERKNS_6TensorE", "torch-compute"),
        ("_ZN2at4_ops3bmm4callERKNS_6TensorES4_", "torch-compute"),
        ("_ZN2at6matmulERKNS_6TensorES2_", "torch-compute"),
        ("_ZN2at6native6conv2dERKNS_6TensorE", "torch-compute"),
        ("_ZN3c1010Dispatcher9singletonEv", "torch-compute"),
        ("_ZN5torch2nn6LinearC1Ell", "torch-compute"),
        ("_ZN5torch3jit4loadERKNSt7__cxx1112basic_stringIcSt11char_traitsIcESaIcEEE",
         "torch-compute"),
        ("cudaGraphLaunch", "not-allowed"), ("cudaStreamBeginCapture", "not-allowed"),
        ("cudaLibraryLoadData", "not-allowed"), ("cuModuleLoadData", "not-allowed"),
        ("fopen", "not-allowed"), ("open64", "not-allowed"), ("syscall", "not-allowed"),
        ("_ZNSt14basic_ifstreamIcSt11char_traitsIcEEC1EPKcSt13_Ios_Openmode", "not-allowed"),
        ("_ZNSt6thread15_M_start_threadESt10unique_ptrINS_6_StateESt14default_deleteIS1_EEPFvvE",
         "not-allowed"),
        ("_ZN2atmlERKNS_6TensorES2_", "torch-compute"),  # at::operator*
        ("_Z13helper_of_anyv", "not-allowed"),
        ("_ZTTN7foreign4BaseE", "not-allowed"),  # a VTT as a vtable: by its owner
        ("_ZTv0_n24_NSt13basic_fstreamIcSt11char_traitsIcEED1Ev", "not-allowed"),  # file stream
        ("_ZThn8_N2at4_ops2mm4callERKNS_6TensorES4_", "torch-compute"),
        ("_ZTcv0_n12_h8_N2at6matmulERKNS_6TensorES2_", "torch-compute"),
        ("_ZTHN7foreign7counterE", "not-allowed"),  # a TLS initializer: its variable's rule
    ]

    def test_what_an_honest_extension_imports_is_allowed(self):
        for symbol in self.HONEST:
            self.assertEqual(mi.classify_symbol(symbol)[0], None, symbol)

    def test_everything_else_is_refused_by_its_rule(self):
        for symbol, rule in self.REFUSED:
            self.assertEqual(mi.classify_symbol(symbol)[0], rule, symbol)

    def test_libraries(self):
        imports = {"needed": ["libc10.so", "libtorch_cuda.so", "libcudart.so.13", "libc.so.6",
                              "libcublas.so.13", "libcudnn.so.9", "libnvrtc.so.13"],
                   "symbols": [], "loader": [("DT_RUNPATH", "/tmp/x")]}
        self.assertEqual(rules(mi.judge_imports(imports)), {
            ("vendor-library", "libcublas.so.13"), ("vendor-library", "libcudnn.so.9"),
            ("not-allowed", "libnvrtc.so.13"), ("loader-path", "DT_RUNPATH /tmp/x")})

    def test_the_vendor_rule_is_the_one_a_policy_may_waive(self):
        imports = {"needed": ["libcublas.so.13"], "loader": [],
                   "symbols": ["cublasSgemm_v2", "dlsym", "_ZN2at4_ops2mm4callEv"]}
        refused = mi.judge_imports(imports, allowed=mi.RULES_A_POLICY_MAY_WAIVE)
        self.assertEqual({r["rule"] for r in refused}, {"dynamic-lookup", "torch-compute"})
        self.assertEqual(mi.RULES_A_POLICY_MAY_WAIVE, ("vendor-library",))

    def test_the_verdict_names_the_most_telling_rule_first(self):
        imports = {"needed": [], "loader": [],
                   "symbols": ["fopen", "_ZN2at4_ops2mm4callEv", "dlsym", "cudnnCreate"]}
        self.assertEqual([r["rule"] for r in mi.judge_imports(imports)],
                         ["vendor-library", "dynamic-lookup", "torch-compute", "not-allowed"])

    def test_names_read_as_people_write_them(self):
        self.assertEqual(mi.readable("_ZN2at4_ops2mm4callERKNS_6TensorES4_"), "at::_ops::mm::call")
        self.assertEqual(mi.readable("cublasSgemm_v2@libcublas.so.13"), "cublasSgemm_v2")
        line = mi.describe([{"rule": "vendor-library", "import": "cublasSgemm_v2",
                             "what": "a vendor library's API"}])
        self.assertIn("cublasSgemm_v2 (rule vendor-library", line)


@unittest.skipIf(GXX is None, "no g++")
class BuiltLibraryPolicyTest(BuildsLibraries):

    def test_a_library_that_only_launches_passes(self):
        lib = self.build.gxx("launch_only", CUDA_DECLS, "  cudaLaunchKernel(p);\n")
        _, refused = mi.check_file(lib)
        self.assertEqual(refused, [])

    def test_cublas_dlsym_and_aten_compute_are_each_refused_by_name(self):
        for decls, body, want in (
                (CUBLAS_DECLS, "  cublasSgemm_v2(p);\n", ("vendor-library", "cublasSgemm_v2")),
                (DL_DECLS, '  dlsym(p, "x");\n', ("dynamic-lookup", "dlsym")),
                (ATEN_DECLS, "  at::_ops::mm::call();\n", ("torch-compute",
                                                            "at::_ops::mm::call"))):
            lib = self.build.gxx("refused_" + want[0], CUDA_DECLS + decls,
                                 "  cudaLaunchKernel(p);\n" + body)
            _, refused = mi.check_file(lib)
            self.assertEqual(rules(refused), {want}, lib)


@unittest.skipIf(NVCC is None, "no nvcc")
class NvccModuleTest(BuildsLibraries):
    KERNEL = ("__global__ void scale(float* y, int n) {\n"
              "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
              "  if (i < n) y[i] = 2.f * y[i];\n}\n")


    def test_own_kernel_launched_with_chevrons_passes(self):
        lib = self.build.nvcc("own", self.KERNEL + 'extern "C" void run(float* y, int n) '
                              "{ scale<<<(n + 255) / 256, 256>>>(y, n); }\n")
        imports, refused = mi.check_file(lib)
        self.assertEqual(refused, [])
        self.assertTrue(any("cudaLaunch" in s or "cudaRegister" in s
                            for s in imports["symbols"]), imports["symbols"])

    @unittest.skipIf(not HAVE_CUBLAS, "no libcublas.so next to nvcc")
    def test_a_cublas_call_beside_the_kernel_is_refused(self):
        lib = self.build.nvcc("with_cublas", "#include <cublas_v2.h>\n" + self.KERNEL +
                              'extern "C" void run(cublasHandle_t h, float* y, int n) {\n'
                              "  scale<<<1, 1>>>(y, 0);\n  float a = 1.f;\n"
                              "  cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &a, y, n, y, n,"
                              " &a, y, n);\n}\n", ["-L" + CUDA_LIB, "-lcublas"])
        _, refused = mi.check_file(lib)
        self.assertIn(("vendor-library", "cublasSgemm_v2"), rules(refused))
        self.assertTrue(any(r["import"].startswith("libcublas") for r in refused), refused)


try:
    subprocess.run(["/usr/bin/python3", "-c", "import torch"], check=True, capture_output=True)
    HAVE_TORCH = True
except (OSError, subprocess.CalledProcessError):
    HAVE_TORCH = False


def run_judge(module, device="cpu"):
    proc = subprocess.run(
        ["/usr/bin/python3", os.path.join(PY, "judge.py"), "--spawn-runner", "--device", device,
         "--reference", os.path.join(FIXTURES, "reference_add.py"),
         "--runner-candidate", os.path.join(FIXTURES, "candidate_add.py"),
         "--runner-module", "fused_ext=" + module, "--trials", "1"],
        capture_output=True, text=True, timeout=180)
    lines = [l for l in proc.stdout.splitlines() if l.startswith("DICE_EVAL_RESULT  ")]
    assert len(lines) == 1, proc.stdout + proc.stderr
    return json.loads(lines[0].split(" ", 2)[2])


@unittest.skipIf(GXX is None or not HAVE_TORCH, "no g++, or /usr/bin/python3 has no torch")
class JudgeReadsTheModuleTest(BuildsLibraries):

    def test_a_refused_import_ends_the_evaluation_before_the_runner_loads_it(self):
        lib = self.build.gxx("judge_dlsym", CUDA_DECLS + DL_DECLS,
                             '  cudaLaunchKernel(p);\n  dlsym(p, "cublasSgemm_v2");\n')
        r = run_judge(lib)
        self.assertEqual(r["failure"], "antiCheat", r)
        self.assertIn("imports dlsym (rule dynamic-lookup", r["detail"])
        self.assertEqual([f["check"] for f in r["findings"]], ["module-imports"])
        self.assertNotIn("load", r["phases"])  # the runner was never asked to load it

    def test_an_allowed_module_goes_on_to_the_runner(self):
        # Not a Python extension (no PyInit_): the runner's import fails, after the judge let
        # it through.
        lib = self.build.gxx("judge_launch_only", CUDA_DECLS, "  cudaLaunchKernel(p);\n")
        r = run_judge(lib)
        self.assertEqual(r["failure"], "importError", r)
        self.assertIn("module_imports", r["phases"])


if __name__ == "__main__":
    unittest.main()
