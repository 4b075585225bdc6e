# DICE_FUZZ: the libFuzzer targets of tests/fuzz (tools/fuzz builds and runs them; docs/FUZZING.md).
# libFuzzer ships with clang only, so the option is honoured with clang and ignored, with a
# warning, otherwise; tools/fuzz configures its own folder (build-fuzz) with clang, and the gcc
# build of tools/build never sees these flags. Everything compiled in that folder is instrumented
# for coverage (fuzzer-no-link) and checked by ASan and UBSan, so a bug in any library a target
# links is found where it happens; UBSan aborts instead of printing and going on, so that the
# fuzzer records the input.
option(DICE_FUZZ "Build the libFuzzer targets of tests/fuzz (clang only; see tools/fuzz)" OFF)
set(DICE_FUZZ_ENABLED OFF)
if(DICE_FUZZ)
  if(CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
    set(DICE_FUZZ_ENABLED ON)
    add_compile_options(-fsanitize=fuzzer-no-link,address,undefined
                        -fno-sanitize-recover=undefined -fno-omit-frame-pointer)
    add_link_options(-fsanitize=address,undefined)
    message(STATUS "dice: libFuzzer targets on (tests/fuzz), ASan + UBSan everywhere")
  else()
    message(WARNING "dice: DICE_FUZZ needs clang (libFuzzer); ignored with "
                    "${CMAKE_CXX_COMPILER_ID}. Configure with CC=clang CXX=clang++ (tools/fuzz).")
  endif()
endif()
