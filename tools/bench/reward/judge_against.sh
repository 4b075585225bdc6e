#!/usr/bin/env bash
# tools/bench/reward/judge_against.sh BUNDLE_DIR OTHER_SOURCE OUT_DIR [cold] [warm]: dice-judge's
# throughput on the 60 dev items, this tree against another (usually main), on one GPU node in
# the same run, as issue-level targets ask ("at least 0.8x of main measured in the same run").
#
# OTHER_SOURCE is the other tree's source: a folder, or a tarball of it (make one on the
# development machine: `git archive e576ba2 | gzip > .device/main.tar.gz`). Both trees are built
# by tools/gpu-build side by side, each in a folder under /tmp (never inside the carried tree: a
# follow call copies the tree again and would take a build inside it along), with its own prefix
# and compile cache.
#   cold  each tree's cache emptied, then a timed run: other first, then this tree
#   warm  (fills the caches by an untimed pass of both trees at once where cold did not run) this
#         tree warm, then the other warm
# Each timed run: `dice-judge --trials 5 --timing on --timing-trials 30 --gpu-slots 8 --compile-jobs
# 16 --compile-memory-mb 229376` (the settings of docs/BENCHMARKS.md, "Guard bytes around every
# tensor"); OUT_DIR gets every run's JSON lines, summary and log, and walls.txt with one line per
# run (exit status and wall seconds). A machine
# lent for 10-minute commands: start this under setsid and follow it, e.g.
#   setsid nohup tools/bench/reward/judge_against.sh .bundle .device/main.tar.gz /tmp/ja cold warm \
#     >/tmp/ja.log 2>&1 </dev/null &
# Knobs: DICE_DEV_DATA (default data/dice-rl/kernel_infilling_dev.json), DICE_PYTHON (python3).
set -uo pipefail

if [[ $# -lt 3 ]]; then
  echo "usage: tools/bench/reward/judge_against.sh BUNDLE_DIR OTHER_SOURCE OUT_DIR [cold] [warm]" >&2
  exit 2
fi
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../../.." && pwd)"
bundle="$(cd "$1" && pwd)" || exit 2
other_source="$2"
out="$3"
shift 3
stages=("$@")
((${#stages[@]})) || stages=(cold warm)
for stage in "${stages[@]}"; do
  [[ "$stage" == cold || "$stage" == warm ]] || { echo "unknown stage \"$stage\"" >&2 && exit 2; }
done
items="$(realpath "${DICE_DEV_DATA:-$root/data/dice-rl/kernel_infilling_dev.json}")" || exit 2
python="${DICE_PYTHON:-python3}"
work=/tmp/dice-judge-against
mkdir -p "$out" "$work" || exit 2
out="$(cd "$out" && pwd)"
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
say() { echo "judge-against [$SECONDS s]: $*"; }

# Both sources outside the carried tree, then both builds at once (each half the cores' worth of
# compile work; together ~2.3 minutes on the H200 node's 16 cores).
rm -rf "$work/mine" "$work/other" && mkdir -p "$work/mine" "$work/other" || exit 1
(cd "$root" && tar --exclude=./build --exclude='./build-*' --exclude=./runs -cf - .) |
  tar -xf - -C "$work/mine" || exit 1
if [[ -d "$other_source" ]]; then
  cp -a "$other_source/." "$work/other/" || exit 1
else
  tar -xzf "$other_source" -C "$work/other" || exit 1
fi
say "building both trees"
(cd "$work/mine" && DICE_PREFIX="$work/prefix-mine" DICE_BUILD_TARGETS=dice-judge \
  DICE_CTEST_ARGS=skip tools/gpu-build "$bundle" "$work/build-mine" >"$out/build-mine.log" 2>&1) &
mine_build=$!
(cd "$work/other" && DICE_PREFIX="$work/prefix-other" DICE_BUILD_TARGETS=dice-judge \
  DICE_CTEST_ARGS=skip tools/gpu-build "$bundle" "$work/build-other" >"$out/build-other.log" 2>&1) &
other_build=$!
wait $mine_build || { say "this tree did not build: $out/build-mine.log" && exit 1; }
wait $other_build || { say "the other tree did not build: $out/build-other.log" && exit 1; }

# judge NAME TREE [extra flags]: one dice-judge run of TREE (mine or other) with its own cache.
judge() {
  local name="$1" tree="$2"
  shift 2
  (
    # shellcheck disable=SC1090  # written by gpu-build
    source "$work/build-$tree/dice-env.sh"
    local start rc
    start=$(date +%s.%N)
    "$work/build-$tree/reward/dice-judge" --items "$items" --python "$python" \
      --compile-cache "$work/cache-$tree" --out "$out/$name.jsonl" \
      --summary-out "$out/$name.summary.json" "$@" >"$out/$name.log" 2>&1
    rc=$?
    echo "$name: exit $rc wall $(awk "BEGIN {printf \"%.1f\", $(date +%s.%N) - $start}") s" |
      tee -a "$out/walls.txt"
    return $rc
  )
}
timed=(--trials 5 --timing on --timing-trials 30 --gpu-slots 8 --compile-jobs 16
  --compile-memory-mb 229376)
# The two fills share the machine: half its slots, compile jobs and compile memory each.
fill=(--trials 1 --timing off --gpu-slots 4 --compile-jobs 8 --compile-memory-mb 114688)

filled=0
for stage in "${stages[@]}"; do
  case "$stage" in
  cold)
    rm -rf "$work/cache-mine" "$work/cache-other"
    judge other_cold other "${timed[@]}"
    judge mine_cold mine "${timed[@]}"
    filled=1
    ;;
  warm)
    if ((!filled)); then
      say "filling both compile caches (untimed)"
      rm -rf "$work/cache-mine" "$work/cache-other"
      judge other_fill other "${fill[@]}" &
      judge mine_fill mine "${fill[@]}" &
      wait
      filled=1
    fi
    judge mine_warm mine "${timed[@]}"
    judge other_warm other "${timed[@]}"
    ;;
  esac
done
say "done"
cat "$out/walls.txt"
