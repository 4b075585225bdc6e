#include "tasks/answer_scoring.h"

#include <cmath>

namespace dice::eval {

double speedup_lower_bound(const AnswerVerdict& verdict, double z) {
  if (!(verdict.speedup > 0)) return 0;
  if (z <= 0) return verdict.speedup;
  const int n = verdict.timing_trials;
  if (n < 2 || !(verdict.kernel_ms_mean > 0) || !(verdict.reference_ms_mean > 0)) return 0;
  const double root = std::sqrt(static_cast<double>(n - 1));
  const double se_log_kernel = verdict.kernel_ms_std / (verdict.kernel_ms_mean * root);
  const double se_log_reference = verdict.reference_ms_std / (verdict.reference_ms_mean * root);
  const double se = std::sqrt(se_log_kernel * se_log_kernel + se_log_reference * se_log_reference);
  return verdict.speedup * std::exp(-z * se);
}

bool counts_as_fast(const AnswerVerdict& verdict, double p, double z) {
  if (!verdict.correct) return false;
  if (p <= 0) return true;
  return speedup_lower_bound(verdict, z) > p;
}

bool counts_as_fast_raw(const AnswerVerdict& verdict, double p) {
  if (!verdict.correct) return false;
  return p <= 0 || verdict.speedup > p;
}

double pass_at_k(int n, int c, int k) {
  if (k < 1 || k > n || c < 0 || c > n) return 0;
  if (n - c < k) return 1;
  // C(n - c, k) / C(n, k) = prod_{i = n - c + 1}^{n} (1 - k / i), stable for large n.
  double all_wrong = 1;
  for (int i = n - c + 1; i <= n; ++i) all_wrong *= 1.0 - static_cast<double>(k) / i;
  return 1.0 - all_wrong;
}

}  // namespace dice::eval
