# dice_target_warnings(target): the project's warning set. Third-party headers are included as
# SYSTEM (see DiceDependencies.cmake) so their warnings never reach us.
function(dice_target_warnings target)
  target_compile_options(${target} PRIVATE -Wall -Wextra)
  if(DICE_WERROR)
    target_compile_options(${target} PRIVATE -Werror)
  endif()
endfunction()
