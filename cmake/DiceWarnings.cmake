# dice_target_warnings(target): the project's warning set. Third-party headers are included as
# SYSTEM (see DiceDependencies.cmake) so their warnings never reach us.
function(dice_target_warnings target)
  target_compile_options(${target} PRIVATE -Wall -Wextra)
  # GCC 12 at -O3 (Release) reports std::string and std::vector members of config structs moved
  # into a Result as maybe-uninitialized: a known false positive of that pass, which -O2
  # (RelWithDebInfo, CI) does not trigger.
  if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
    target_compile_options(${target} PRIVATE $<$<CONFIG:Release>:-Wno-maybe-uninitialized>)
  endif()
  if(DICE_WERROR)
    target_compile_options(${target} PRIVATE -Werror)
  endif()
endfunction()
