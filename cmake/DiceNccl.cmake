# NCCL for the weight broadcast (model/nccl). Optional: a build without it still pushes weights
# as checkpoint folders, and model/nccl answers Unavailable("built without NCCL").
#
#   DICE_NCCL=AUTO (default)  use NCCL when nccl.h, libnccl and the CUDA runtime are found
#   DICE_NCCL=ON              the same, but a missing piece is a configure error
#   DICE_NCCL=OFF             never
#
# Searched: DICE_NCCL_ROOT, $NCCL_HOME, $CUDA_HOME, /usr/local/cuda, then the system paths. On the
# GPU nodes NCCL comes with the PyTorch venv's nvidia-nccl package (REFERENCE.md section 8): pass
# -DDICE_NCCL_ROOT=<venv>/lib/python3.X/site-packages/nvidia/nccl there.
# Result: DICE_HAVE_NCCL (TRUE/FALSE) and, when TRUE, the imported target dice::nccl_runtime
# (nccl + cudart, include dirs as SYSTEM).
set(DICE_NCCL AUTO CACHE STRING "Build the NCCL weight broadcast: AUTO, ON or OFF")
set_property(CACHE DICE_NCCL PROPERTY STRINGS AUTO ON OFF)
set(DICE_NCCL_ROOT "" CACHE PATH "Folder holding include/nccl.h and lib/libnccl.so")

set(DICE_HAVE_NCCL FALSE)
if(NOT DICE_NCCL STREQUAL "OFF")
  set(_dice_nccl_hints ${DICE_NCCL_ROOT} $ENV{NCCL_HOME} $ENV{CUDA_HOME} /usr/local/cuda)
  find_path(DICE_NCCL_INCLUDE_DIR nccl.h HINTS ${_dice_nccl_hints} PATH_SUFFIXES include)
  find_library(DICE_NCCL_LIBRARY NAMES nccl libnccl.so.2
    HINTS ${_dice_nccl_hints} PATH_SUFFIXES lib lib64)
  find_path(DICE_CUDART_INCLUDE_DIR cuda_runtime_api.h
    HINTS $ENV{CUDA_HOME} /usr/local/cuda PATH_SUFFIXES include)
  find_library(DICE_CUDART_LIBRARY cudart HINTS $ENV{CUDA_HOME} /usr/local/cuda
    PATH_SUFFIXES lib64 lib)
  if(DICE_NCCL_INCLUDE_DIR AND DICE_NCCL_LIBRARY AND DICE_CUDART_INCLUDE_DIR
     AND DICE_CUDART_LIBRARY)
    set(DICE_HAVE_NCCL TRUE)
    add_library(dice_nccl_runtime INTERFACE)
    target_include_directories(dice_nccl_runtime SYSTEM INTERFACE
      ${DICE_NCCL_INCLUDE_DIR} ${DICE_CUDART_INCLUDE_DIR})
    target_link_libraries(dice_nccl_runtime INTERFACE ${DICE_NCCL_LIBRARY} ${DICE_CUDART_LIBRARY})
    add_library(dice::nccl_runtime ALIAS dice_nccl_runtime)
    message(STATUS "dice: NCCL ${DICE_NCCL_LIBRARY} (CUDA runtime ${DICE_CUDART_LIBRARY})")
  elseif(DICE_NCCL STREQUAL "ON")
    message(FATAL_ERROR "DICE_NCCL=ON but NCCL or the CUDA runtime was not found (nccl.h: "
      "${DICE_NCCL_INCLUDE_DIR}, libnccl: ${DICE_NCCL_LIBRARY}, cuda_runtime_api.h: "
      "${DICE_CUDART_INCLUDE_DIR}, libcudart: ${DICE_CUDART_LIBRARY}); set DICE_NCCL_ROOT")
  endif()
endif()
if(NOT DICE_HAVE_NCCL)
  message(STATUS "dice: without NCCL: weights are pushed as checkpoint folders only")
endif()
