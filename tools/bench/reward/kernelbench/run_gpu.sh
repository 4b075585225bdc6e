#!/usr/bin/env bash
# tools/bench/reward/kernelbench/run_gpu.sh BUILD_DIR OUT_DIR [STAGE...]: the same candidates
# judged by dice-judge and by KernelBench's own evaluation on one GPU node, then compared
# (README.md here: what to put in .device/ first). Stages, in order ("all" = every one):
#   dice           dice-judge over the items' originals with an empty compile cache (cold), then
#                  again with the cache it filled (warm)
#   dice-variants  dice-judge over originals + two broken variants of each (--variants broken);
#                  originals hit the cache, the variants compile
#   kernelbench    kb_judge.py: KernelBench's build cache (16 processes), then a fresh process per
#                  candidate; resumable: after DICE_KB_DEADLINE_S it starts no evaluation, nor a
#                  build chunk that the deadline would cut (at the rate of the chunks before), and
#                  exits 4, and the same command continues where it stopped
#   compare        compare.py: disagreements, throughput, OUT_DIR/summary.md (BENCHMARKS-ready)
# State lives in DICE_COMPARE_STATE (default BUILD_DIR/kernelbench-compare), so stages can run
# in separate commands on a machine that stays up; every command copies the results to OUT_DIR.
# Knobs: DICE_DEV_DATA (default data/dice-rl/kernel_infilling_dev.json), DICE_KERNELBENCH
# (default .device/kernelbench), DICE_PYTHON (default /opt/torch/.venv/bin/python3),
# DICE_TIMING on|off (default on: 100 timed runs, as KernelBench's measured run),
# DICE_TRIALS (5), DICE_GPU_SLOTS (4), DICE_LOG_LEVEL (dice-judge's; debug logs each evaluation's
# seconds per phase), DICE_KERNEL_CHECK (dice-judge's --kernel-check: profiler or cupti), DICE_COMPILE_JOBS (nproc), DICE_KB_DEADLINE_S (330),
# DICE_KB_LIMIT (items for KernelBench; default all), DICE_KB_VARIANT_ITEMS (items whose broken
# variants KernelBench also judges; default 10: its ~16 s per candidate makes all 178 take ~45 min),
# DICE_VARIANTS_LIMIT (items dice-variants judges, originals and variants; default all).
# Exit: 0 done and no unexplained disagreement, 1 a disagreement or a failed step, 2 usage,
# 3 no GPU toolchain on this machine, 4 KernelBench unfinished (run the kernelbench stage again).
set -uo pipefail

if [[ $# -lt 2 ]]; then
  echo "usage: tools/bench/reward/kernelbench/run_gpu.sh BUILD_DIR OUT_DIR" \
    "[dice|dice-variants|kernelbench|compare|all ...]" >&2
  exit 2
fi
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../../../.." && pwd)"
build="$(cd "$1" && pwd)" || exit 2
out="$2"
shift 2
stages=("$@")
[[ ${#stages[@]} -eq 0 || " ${stages[*]} " == *" all "* ]] &&
  stages=(dice dice-variants kernelbench compare)
for s in "${stages[@]}"; do
  case "$s" in dice | dice-variants | kernelbench | compare) ;;
  *) echo "run_gpu.sh: unknown stage \"$s\"" >&2 && exit 2 ;;
  esac
done
mkdir -p "$out" || exit 2
state="${DICE_COMPARE_STATE:-$build/kernelbench-compare}"
mkdir -p "$state" || exit 2
data="${DICE_DEV_DATA:-$root/data/dice-rl/kernel_infilling_dev.json}"
kernelbench="${DICE_KERNELBENCH:-$root/.device/kernelbench}"
python="${DICE_PYTHON:-/opt/torch/.venv/bin/python3}"
timing="${DICE_TIMING:-on}"
trials="${DICE_TRIALS:-5}"
judge="$build/reward/dice-judge"
[[ -x "$judge" ]] || { echo "run_gpu.sh: $judge missing: build target dice-judge" >&2; exit 2; }
[[ -f "$data" ]] || { echo "run_gpu.sh: no items at $data (set DICE_DEV_DATA)" >&2; exit 2; }
# shellcheck source=/dev/null
[[ -f "$build/dice-env.sh" ]] && source "$build/dice-env.sh" # the prefix's libraries

status=0
finish() { # copy the results to OUT_DIR and exit with $1
  cp "$state"/*.jsonl "$state"/*.json "$state"/*.log "$state"/*.md "$out"/ 2>/dev/null
  echo "run_gpu.sh: results in $out (state kept in $state); exit $1"
  exit "$1"
}
run() { # run NAME SECONDS COMMAND...: log to STATE/NAME.log and the terminal
  local name="$1" limit="$2"
  shift 2
  echo "== $name (timeout ${limit}s): $*" | tee "$state/$name.log"
  timeout --kill-after=10 "$limit" "$@" 2>&1 | tee -a "$state/$name.log"
  local rc=${PIPESTATUS[0]}
  [[ $rc -ne 0 ]] && echo "== $name: exit $rc" | tee -a "$state/$name.log"
  return "$rc"
}
judge_run() { # judge_run NAME SECONDS [dice-judge flags...]
  local name="$1" limit="$2"
  shift 2
  run "$name" "$limit" "$judge" --items "$data" --python "$python" --trials "$trials" \
    --timing "$timing" --gpu-slots "${DICE_GPU_SLOTS:-4}" \
    --compile-jobs "${DICE_COMPILE_JOBS:-$(nproc)}" --compile-cache "$state/dice-cache" \
    --out "$state/$name.jsonl" --summary-out "$state/$name.summary.json" \
    ${DICE_LOG_LEVEL:+--log-level "$DICE_LOG_LEVEL"} \
    ${DICE_KERNEL_CHECK:+--kernel-check "$DICE_KERNEL_CHECK"} "$@"
  local rc=$?
  # dice-judge's exit 4 (kExitNoDevice, common/exit_codes.h): no GPU or toolchain here, so
  # nothing later can run either. (kb_judge.py's own 4 means unfinished: not this check.)
  if [[ $rc -eq 4 ]]; then
    echo "run_gpu.sh: $name found no GPU toolchain (see above); stopping" >&2
    finish 3
  fi
  [[ $rc -eq 0 ]] || status=1
}

for stage in "${stages[@]}"; do
  case "$stage" in
  dice)
    rm -rf "$state/dice-cache"
    judge_run dice_cold 360
    judge_run dice_warm 200
    ;;
  dice-variants)
    judge_run dice_variants 560 --variants broken ${DICE_VARIANTS_LIMIT:+--limit "$DICE_VARIANTS_LIMIT"}
    ;;
  kernelbench)
    # The exact files dice judged (the splice, and each variant), written without judging.
    if [[ ! -f "$state/sources/manifest.jsonl" ]]; then
      "$judge" --items "$data" --variants broken --dump-sources "$state/sources" --dump-only ||
        { status=1; continue; }
    fi
    run kernelbench 590 "$python" "$here/kb_judge.py" --kernelbench "$kernelbench" \
      --sources "$state/sources" --work "$state/kb-work" --out "$state/kernelbench.jsonl" \
      --summary-out "$state/kernelbench.summary.json" --trials "$trials" --timing "$timing" \
      --compile-workers 16 --compile-chunk 32 --deadline-seconds "${DICE_KB_DEADLINE_S:-330}" \
      --variant-limit "${DICE_KB_VARIANT_ITEMS:-10}" ${DICE_KB_LIMIT:+--limit "$DICE_KB_LIMIT"}
    rc=$?
    if [[ $rc -eq 4 ]]; then
      echo "run_gpu.sh: KernelBench unfinished: run the kernelbench stage again to continue"
      [[ $status -eq 0 ]] && status=4
    elif [[ $rc -ne 0 ]]; then
      status=1
    fi
    ;;
  compare)
    dice_files=() summaries=() kb_summary=()
    [[ -f "$state/kernelbench.summary.json" ]] &&
      kb_summary=(--kernelbench-summary "$state/kernelbench.summary.json")
    for name in dice_cold dice_warm dice_variants; do
      [[ -f "$state/$name.jsonl" ]] && dice_files+=(--dice "$state/$name.jsonl")
      [[ -f "$state/$name.summary.json" ]] &&
        summaries+=(--dice-summary "${name#dice_}=$state/$name.summary.json")
    done
    run compare 60 "$python" "$here/compare.py" "${dice_files[@]}" \
      --kernelbench "$state/kernelbench.jsonl" --known-differences "$here/known_differences.json" \
      "${summaries[@]}" ${kb_summary[@]+"${kb_summary[@]}"} --markdown "$state/summary.md" || status=1
    ;;
  esac
done

finish "$status"
