"""The reward policy's rule on library calls (reward.libraries; docs/SECURITY.md, "Library
calls"), as the judge applies it: own_kernels_only refuses a vendor library's imports and
kernels, naming the rule and the policy; allowed lets them through with a non-fatal
library-calls finding; PyTorch's own compute is refused under both. The kernel check runs on
a scripted kernel list (judge_test.LinkDouble), the imports on module_imports' reading of a
module's imports; CPU only, skipped when python3 has no torch."""

import os
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "reward", "python"))

try:
    import torch
except ImportError:
    torch = None

import compare  # noqa: E402
import judge  # noqa: E402
import kernel_check  # noqa: E402
import module_imports as mi  # noqa: E402
from judge_test import LinkDouble  # noqa: E402

OURS = "void scale_kernel<float>(float const*, float*, int)"
CUBLAS = "void cublasLt::splitKreduce_kernel<32, 16, int, float, float>(...)"
ATEN = "void at::native::vectorized_elementwise_kernel<4, at::native::AddFunctor<float>>(...)"
CUTLASS = "void cutlass::Kernel<cutlass::gemm::kernel::Gemm<...>>(...)"
TORCH_CUB = "void at_cuda_detail::cub::DeviceRadixSortOnesweepKernel<...>(...)"
MODULE = "module_ext_ext.so"


@unittest.skipIf(torch is None, "python3 has no torch")
class KernelCheckPolicyTest(unittest.TestCase):
    def check(self, policy, launches):
        class Args:
            kernels = ["scale_kernel"]
            device = "cpu"
            libraries = policy
        j = judge.Judge(torch, Args, LinkDouble(dict(launches=launches)))
        j.cuda = True  # the kernel check runs only for CUDA devices
        j.check_kernels_ran([], {MODULE})
        return j.findings

    def refusal(self, policy, launches):
        with self.assertRaises(compare.EvalFailure) as e:
            self.check(policy, launches)
        self.assertEqual(e.exception.failure, "antiCheat")
        return e.exception.detail

    def test_own_kernels_only_refuses_cublas_beside_ours_naming_rule_and_policy(self):
        detail = self.refusal("own_kernels_only", [[OURS, MODULE], [CUBLAS, "libcublasLt.so.13"]])
        self.assertIn("rule vendor-library, refused by reward.libraries: own_kernels_only", detail)

    def test_allowed_notes_cublas_beside_ours(self):
        findings = self.check("allowed", [[OURS, MODULE], [CUBLAS, "libcublasLt.so.13"]])
        self.assertEqual([(f["check"], f["fatal"]) for f in findings], [("library-calls", False)])
        self.assertIn("allowed by reward.libraries: allowed", findings[0]["detail"])
        self.assertIn("splitKreduce_kernel", findings[0]["detail"])

    def test_the_default_is_own_kernels_only(self):
        class Args:
            kernels = ["scale_kernel"]
            device = "cpu"
        j = judge.Judge(torch, Args, LinkDouble(dict(launches=[
            [OURS, MODULE], [CUBLAS, "libcublasLt.so.13"]])))
        j.cuda = True
        with self.assertRaises(compare.EvalFailure):
            j.check_kernels_ran([], {MODULE})
        self.assertEqual(judge.parse_args(["--reference", "r", "--runner-candidate", "c"])
                         .libraries, "own_kernels_only")

    def test_aten_stays_a_fallback_under_both(self):
        for policy in ("own_kernels_only", "allowed"):
            detail = self.refusal(policy, [[OURS, MODULE], [ATEN, "libtorch_cuda.so"],
                                           [CUBLAS, "libcublasLt.so.13"]])
            self.assertIn("fell back to PyTorch's kernels", detail)

    def test_by_name_cutlass_is_a_library_call_and_torchs_cub_is_pytorchs(self):
        # The profiler names no launching library: CUTLASS's names are a library's, CUB's under
        # torch's at_cuda_detail:: namespace are torch's own sort.
        findings = self.check("allowed", [[OURS, "?"], [CUTLASS, "?"]])
        self.assertIn("library-calls", [f["check"] for f in findings])
        self.assertIn("fell back to PyTorch", self.refusal("allowed", [[OURS, "?"],
                                                                       [TORCH_CUB, "?"]]))
        # With the library known, a CUB kernel of torch's file is torch's, whatever its name.
        self.assertIn("fell back to PyTorch", self.refusal(
            "allowed", [[OURS, MODULE], ["void cub::DeviceReduceKernel<...>(...)",
                                         "libtorch_cuda.so"]]))

    def test_a_library_alone_is_no_kernel_of_the_candidates(self):
        detail = self.refusal("allowed", [[CUBLAS, "libcublasLt.so.13"]])
        self.assertIn("no kernel of the candidate", detail)

    def test_a_policy_the_judge_does_not_know_is_refused(self):
        with self.assertRaises(SystemExit):
            judge.parse_args(["--reference", "r", "--runner-candidate", "c",
                              "--libraries", "everything"])


class VendorKernelTest(unittest.TestCase):
    def test_by_library_where_known_and_by_name_where_not(self):
        self.assertTrue(kernel_check.is_vendor_kernel("anything", "libcudnn_cnn.so.9"))
        self.assertTrue(kernel_check.is_vendor_kernel("sm90_xmma_gemm_f32f32", "?"))
        self.assertTrue(kernel_check.is_vendor_kernel("ampere_sgemm_128x64_nn", "?"))
        self.assertFalse(kernel_check.is_vendor_kernel(CUBLAS, "libtorch_cuda.so"))
        self.assertFalse(kernel_check.is_vendor_kernel(ATEN, "?"))
        self.assertFalse(kernel_check.is_vendor_kernel(TORCH_CUB, "?"))


class ModuleImportsPolicyTest(unittest.TestCase):
    IMPORTS = {"needed": ["libcublas.so.13"], "loader": [], "symbols": ["cublasSgemm_v2"]}

    def test_own_kernels_only_refuses_and_names_the_policy(self):
        findings, refusal = mi.findings_under_policy("ext", mi.judge_imports(self.IMPORTS),
                                                     "own_kernels_only")
        self.assertEqual([(f["check"], f["fatal"]) for f in findings],
                         [("module-imports", True)])
        self.assertIn("rule vendor-library, refused by reward.libraries: own_kernels_only",
                      refusal)
        self.assertIn("own_kernels_only", findings[0]["detail"])

    def test_allowed_notes_the_library_and_refuses_nothing(self):
        findings, refusal = mi.findings_under_policy("ext", mi.judge_imports(self.IMPORTS),
                                                     "allowed")
        self.assertIsNone(refusal)
        self.assertEqual([(f["check"], f["fatal"]) for f in findings], [("library-calls", False)])
        self.assertIn("cublasSgemm_v2", findings[0]["detail"])

    def test_allowed_still_refuses_torch_compute(self):
        imports = dict(self.IMPORTS, symbols=["cublasSgemm_v2", "_ZN2at4_ops2mm4callEv"])
        findings, refusal = mi.findings_under_policy("ext", mi.judge_imports(imports), "allowed")
        self.assertIn("rule torch-compute", refusal)
        self.assertNotIn("reward.libraries", refusal)  # no policy could waive that rule
        self.assertEqual(sorted(f["check"] for f in findings),
                         ["library-calls", "module-imports"])

    def test_the_finding_name_is_the_one_cpp_reads(self):
        # options/reward_options.h: kLibraryCallsFinding (dice-eval's own-kernels column).
        header = os.path.join(HERE, "..", "..", "options", "reward_options.h")
        with open(header, encoding="utf-8") as f:
            self.assertIn('kLibraryCallsFinding[] = "%s"' % mi.LIBRARY_CALLS_FINDING, f.read())


if __name__ == "__main__":
    unittest.main()
