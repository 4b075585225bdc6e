# Finds every third-party library once and exposes it as an imported target.
# On an air-gapped GPU node, tools/gpu-build points CMAKE_PREFIX_PATH and PKG_CONFIG_* at an
# unpacked offline bundle; nothing here needs to know the difference.

find_package(Threads REQUIRED)
find_package(PkgConfig REQUIRED)

# pkg-config's "-isystem DIR" (Debian's libzmq.pc names MIT Kerberos' headers so) lands in an
# imported target's compile options, and CMake 3.25 writes such a target's "-isystem DIR" among the
# include flags on the first configure of a build folder but among the other flags on every later
# one: each object's command changes, and the second tools/build (tools/up after tools/test)
# rebuilt all that include ZeroMQ. As a SYSTEM include directory its place is the same every time.
function(dice_isystem_options_to_includes target)
  get_target_property(_options ${target} INTERFACE_COMPILE_OPTIONS)
  if(NOT _options)
    return()
  endif()
  set(_kept "")
  set(_dirs "")
  set(_dir_next FALSE)
  foreach(_option IN LISTS _options)
    if(_dir_next)
      list(APPEND _dirs ${_option})
      set(_dir_next FALSE)
    elseif(_option STREQUAL "-isystem")
      set(_dir_next TRUE)
    else()
      list(APPEND _kept ${_option})
    endif()
  endforeach()
  set_property(TARGET ${target} PROPERTY INTERFACE_COMPILE_OPTIONS "${_kept}")
  if(_dirs)
    set_property(TARGET ${target} APPEND PROPERTY INTERFACE_INCLUDE_DIRECTORIES ${_dirs})
    set_property(TARGET ${target} APPEND PROPERTY INTERFACE_SYSTEM_INCLUDE_DIRECTORIES ${_dirs})
  endif()
endfunction()

# ZeroMQ (libzmq through pkg-config) and its header-only C++ binding cppzmq.
pkg_check_modules(ZMQ REQUIRED IMPORTED_TARGET libzmq)
dice_isystem_options_to_includes(PkgConfig::ZMQ)
find_path(DICE_CPPZMQ_INCLUDE zmq.hpp HINTS ${ZMQ_INCLUDE_DIRS} REQUIRED)
add_library(dice_zmq INTERFACE)
target_link_libraries(dice_zmq INTERFACE PkgConfig::ZMQ)
target_include_directories(dice_zmq SYSTEM INTERFACE ${DICE_CPPZMQ_INCLUDE})
add_library(dice::zmq ALIAS dice_zmq)

find_package(CapnProto CONFIG REQUIRED)
# RocksDB through pkg-config, as the shared library. Debian's RocksDBConfig.cmake makes
# RocksDB::rocksdb the static archive, which drags in CMake targets for gflags, snappy, zlib, bz2,
# lz4 and zstd (gflags' has no location for RelWithDebInfo: a generate error) and, on a GPU node,
# their -dev packages. The shared library carries its own dependencies; the name stays.
pkg_check_modules(ROCKSDB REQUIRED IMPORTED_TARGET rocksdb)
add_library(RocksDB::rocksdb INTERFACE IMPORTED)
set_target_properties(RocksDB::rocksdb PROPERTIES INTERFACE_LINK_LIBRARIES PkgConfig::ROCKSDB)
find_package(yaml-cpp CONFIG REQUIRED)
# CONFIG: Boost ships BoostConfig.cmake since 1.70; CMake 4 (GPU nodes) has no FindBoost module.
# 1.75+ for Boost.JSON (Debian 12: libboost1.81-dev, installed by tools/setup).
find_package(Boost 1.75 CONFIG REQUIRED)

# LibTorch: a PyTorch install (2.x, CUDA) when python3 has torch, else Debian's libtorch-dev
# (1.13, CPU). model/torch_compat.h hides the API differences between the two.
if(NOT DICE_TORCH_PREFIX)
  find_program(DICE_PYTHON3 python3)
  if(DICE_PYTHON3)
    execute_process(
      COMMAND ${DICE_PYTHON3} -c "import torch.utils; print(torch.utils.cmake_prefix_path)"
      OUTPUT_VARIABLE DICE_TORCH_PREFIX OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET
      RESULT_VARIABLE _dice_torch_rc)
    if(NOT _dice_torch_rc EQUAL 0)
      set(DICE_TORCH_PREFIX "")
    endif()
  endif()
endif()
if(DICE_TORCH_PREFIX)
  list(APPEND CMAKE_PREFIX_PATH ${DICE_TORCH_PREFIX})
  message(STATUS "dice: LibTorch from PyTorch at ${DICE_TORCH_PREFIX}")
endif()
find_package(Torch CONFIG REQUIRED)
message(STATUS "dice: LibTorch ${Torch_VERSION} (${TORCH_INSTALL_PREFIX})")
add_library(dice_torch INTERFACE)
target_link_libraries(dice_torch INTERFACE ${TORCH_LIBRARIES})
# SYSTEM: LibTorch's headers are not ours to warn about.
get_target_property(_dice_torch_includes torch INTERFACE_INCLUDE_DIRECTORIES)
if(_dice_torch_includes)
  target_include_directories(dice_torch SYSTEM INTERFACE ${_dice_torch_includes})
endif()
add_library(dice::torch ALIAS dice_torch)

if(DICE_BUILD_TESTS)
  find_package(GTest REQUIRED)
  include(GoogleTest)
endif()
