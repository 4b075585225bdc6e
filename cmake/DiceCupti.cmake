# CUPTI for the reward service's cheap kernel check (reward/evaluate/cupti/launch_probe.cc, loaded by
# reward/python/runner.py under reward.kernel_check: cupti). Optional: without it the kernel check
# uses torch's profiler, and asking for cupti is a configuration error naming this.
#
# Searched: DICE_CUPTI_ROOT, $CUDA_HOME, /usr/local/cuda (include/, extras/CUPTI/, targets/).
# Result: DICE_HAVE_CUPTI (TRUE/FALSE) and, when TRUE, the module target dice_launch_probe.
set(DICE_CUPTI_ROOT "" CACHE PATH "Folder holding include/cupti.h and lib64/libcupti.so")
set(_dice_cupti_hints ${DICE_CUPTI_ROOT} $ENV{CUDA_HOME} /usr/local/cuda)
find_path(DICE_CUPTI_INCLUDE_DIR cupti.h HINTS ${_dice_cupti_hints}
  PATH_SUFFIXES include extras/CUPTI/include targets/x86_64-linux/include)
find_path(DICE_CUPTI_CUDA_INCLUDE_DIR cuda.h HINTS ${_dice_cupti_hints}
  PATH_SUFFIXES include targets/x86_64-linux/include)
find_library(DICE_CUPTI_LIBRARY NAMES cupti libcupti.so.13 HINTS ${_dice_cupti_hints}
  PATH_SUFFIXES lib64 lib extras/CUPTI/lib64 targets/x86_64-linux/lib)
set(DICE_HAVE_CUPTI FALSE)
if(DICE_CUPTI_INCLUDE_DIR AND DICE_CUPTI_CUDA_INCLUDE_DIR AND DICE_CUPTI_LIBRARY)
  set(DICE_HAVE_CUPTI TRUE)
  message(STATUS "dice: CUPTI ${DICE_CUPTI_LIBRARY}: the launch probe is built")
else()
  message(STATUS "dice: without CUPTI: reward.kernel_check cupti is unavailable")
endif()
