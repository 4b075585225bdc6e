# DICE_SANITIZE: build every target of the project with the given sanitizers, a comma-separated
# list for -fsanitize= ("address,undefined" or "thread"; tools/test --sanitize builds these in
# build-asan/ and build-tsan/). The system libraries (LibTorch, ZeroMQ, RocksDB, Cap'n Proto) stay
# uninstrumented: ASan still sees our bad accesses into their memory, TSan does not see their
# internal synchronization (tests/transport/tsan_suppressions.txt says what that costs).
set(DICE_SANITIZE "" CACHE STRING "Sanitizers to build with: address,undefined or thread (empty: none)")

if(DICE_SANITIZE)
  string(REPLACE "," ";" _dice_sanitizers "${DICE_SANITIZE}")
  foreach(_dice_sanitizer ${_dice_sanitizers})
    if(NOT _dice_sanitizer MATCHES "^(address|undefined|thread)$")
      message(FATAL_ERROR "DICE_SANITIZE: unknown sanitizer '${_dice_sanitizer}' "
                          "(address, undefined, thread)")
    endif()
  endforeach()
  if("thread" IN_LIST _dice_sanitizers AND "address" IN_LIST _dice_sanitizers)
    message(FATAL_ERROR "DICE_SANITIZE: thread and address cannot be combined")
  endif()
  # Frame pointers: whole stacks in reports (the runtimes unwind with them on the fast path).
  add_compile_options(-fsanitize=${DICE_SANITIZE} -fno-omit-frame-pointer)
  add_link_options(-fsanitize=${DICE_SANITIZE})
  # GCC 12 with -fsanitize=address reports libstdc++'s own std::regex internals (std::function
  # members of its NFA states) as maybe-uninitialized, in every unit that builds a std::regex: a
  # false positive of that pass on instrumented code. The plain build (CI) keeps the warning.
  if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
    add_compile_options(-Wno-maybe-uninitialized)
  endif()
  # GCC warns (-Wtsan) that TSan does not model std::atomic_thread_fence. Our code has none; the
  # one the build meets is Boost.Asio's (std_fenced_block, in the metrics server's io_context),
  # third-party code whose fence TSan cannot see: a race that fence alone orders would show up
  # as a report, judged there, not hidden here.
  if("thread" IN_LIST _dice_sanitizers AND CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
    add_compile_options(-Wno-tsan)
  endif()
  if("undefined" IN_LIST _dice_sanitizers)
    # A UBSan report aborts the process, so a test that triggers one fails instead of passing
    # with a line on stderr.
    add_compile_options(-fno-sanitize-recover=undefined)
  endif()
  message(STATUS "dice: sanitizers ${DICE_SANITIZE}")
endif()
