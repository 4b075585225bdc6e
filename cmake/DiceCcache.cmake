# Use ccache when it is installed: CI rebuilds from a clean clone, and LibTorch headers are heavy.
find_program(DICE_CCACHE ccache)
if(DICE_CCACHE)
  set(CMAKE_CXX_COMPILER_LAUNCHER ${DICE_CCACHE})
  set(CMAKE_C_COMPILER_LAUNCHER ${DICE_CCACHE})
  message(STATUS "dice: using ccache at ${DICE_CCACHE}")
endif()
