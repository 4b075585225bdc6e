#!/usr/bin/env bash
# tools/bench/rollout/run_gpu.sh BUILD_DIR OUT_DIR: the rollout benchmark on one GPU node, dice's
# sampler (rollout_bench) and the plain PyTorch peer (sdar_generate_reference.py) in one job,
# each run under a timeout; the timeouts add up to 350 s. Each tool prints a row as soon as it
# has one, so a run cut by its timeout still leaves the rows it finished.
#
#   1. headline: SDAR-4B shapes, batch 128, 1024 new tokens, low_confidence_static (dice)
#   2. the same with the peer
#   3. sweep: 1.7B and 4B, batch 1/16/64/128, 128 new tokens, static and dynamic (dice)
#   4. the same sweep with the peer, static only
# With random weights no token reaches the 0.9 threshold, so dynamic runs the same forwards as
# static; the sweep keeps it to show the strategy's own overhead.
# Writes OUT_DIR/{headline,headline_reference,sweep,sweep_reference}.txt and OUT_DIR/summary.txt
# (all tables). BUILD_DIR is a build of dice with LibTorch from the node's PyTorch (tools/gpu-build);
# python3 must be the PyTorch venv's. DICE_BENCH_SCALE=0.25 shortens every run to a quarter of
# the tokens (a quick look).
set -uo pipefail

if [[ $# -ne 2 ]]; then
  echo "usage: tools/bench/rollout/run_gpu.sh BUILD_DIR OUT_DIR" >&2
  exit 2
fi
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
build="$(cd "$1" && pwd)" || exit 2
out="$2"
mkdir -p "$out" || exit 2
bench="$build/tools/bench/rollout/rollout_bench"
reference="$here/sdar_generate_reference.py"
python="${DICE_PYTHON:-python3}"
[[ -x "$bench" ]] || { echo "run_gpu.sh: $bench missing: build target rollout_bench" >&2; exit 2; }
# shellcheck source=/dev/null
[[ -f "$build/dice-env.sh" ]] && source "$build/dice-env.sh"  # the prefix's libraries

scale="${DICE_BENCH_SCALE:-1}"
tokens() { awk -v n="$1" -v s="$scale" 'BEGIN { t = int(n * s / 4) * 4; print (t < 4 ? 4 : t) }'; }
long=$(tokens 1024)
short=$(tokens 128)

status=0
run() {  # run NAME SECONDS COMMAND...
  local name="$1" limit="$2"
  shift 2
  echo "== $name (timeout ${limit}s): $*" | tee "$out/$name.txt"
  timeout --kill-after=10 "$limit" "$@" 2>&1 | tee -a "$out/$name.txt"
  local rc=${PIPESTATUS[0]}
  if [[ $rc -ne 0 ]]; then
    echo "== $name: exit $rc$([[ $rc -eq 124 ]] && echo ' (timed out; rows above are complete)')" |
      tee -a "$out/$name.txt"
    status=1
  fi
}

run headline 100 "$bench" --models 4b --batches 128 --strategies static --new-tokens "$long"
run headline_reference 100 "$python" "$reference" --models 4b --batches 128 --strategies static \
  --new-tokens "$long"
run sweep 80 "$bench" --models 1.7b,4b --batches 1,16,64,128 --strategies static,dynamic \
  --new-tokens "$short"
run sweep_reference 70 "$python" "$reference" --models 1.7b,4b --batches 1,16,64,128 \
  --strategies static --new-tokens "$short"

cat "$out"/headline.txt "$out"/headline_reference.txt "$out"/sweep.txt \
  "$out"/sweep_reference.txt > "$out/summary.txt"
echo "run_gpu.sh: tables in $out/summary.txt"
exit $status
