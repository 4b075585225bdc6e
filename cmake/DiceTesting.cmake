# dice_add_test(NAME name SOURCES a.cc b.cc LIBS dice_x LABELS unit|integration|gpu)
# One GoogleTest executable per unit under tests/<folder>/; each TEST becomes a ctest test with
# the given label, so `ctest -L unit` / `-L integration` / `-L gpu` select suites.
function(dice_add_test)
  cmake_parse_arguments(T "" "NAME;TIMEOUT" "SOURCES;LIBS;LABELS" ${ARGN})
  add_executable(${T_NAME} ${T_SOURCES})
  dice_target_warnings(${T_NAME})
  target_link_libraries(${T_NAME} PRIVATE ${T_LIBS} GTest::gtest GTest::gtest_main)
  # The public DICE task data the repository holds (data/README.md), for the tests that use it.
  target_compile_definitions(${T_NAME} PRIVATE DICE_RL_DATA_DIR="${PROJECT_SOURCE_DIR}/data/dice-rl")
  if(NOT T_TIMEOUT)
    set(T_TIMEOUT 300)
  endif()
  gtest_discover_tests(${T_NAME}
    PROPERTIES LABELS "${T_LABELS}" TIMEOUT ${T_TIMEOUT}
    DISCOVERY_TIMEOUT 60)
endfunction()
