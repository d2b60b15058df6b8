# Shared compile settings for all cpuft targets.
add_library(cpuft_options INTERFACE)
target_compile_options(cpuft_options INTERFACE -Wall -Wextra -Wpedantic -Wshadow -Wconversion
                                               -Wno-sign-conversion -Wnon-virtual-dtor)
if(CPUFT_WERROR)
  target_compile_options(cpuft_options INTERFACE -Werror)
endif()
if(CPUFT_SANITIZE)
  target_compile_options(cpuft_options INTERFACE -fsanitize=address,undefined -fno-omit-frame-pointer
                                                 -fno-sanitize-recover=undefined)
  target_link_options(cpuft_options INTERFACE -fsanitize=address,undefined)
endif()
if(CPUFT_TSAN)
  target_compile_options(cpuft_options INTERFACE -fsanitize=thread -fno-omit-frame-pointer)
  target_link_options(cpuft_options INTERFACE -fsanitize=thread)
endif()
# No include root here: cpuft_enforce_walls (cmake/cpuft_walls.cmake) gives each target its own.

# Every test finds the repository's files through tests/test_paths.h.
add_library(cpuft_test_paths INTERFACE)
target_include_directories(cpuft_test_paths INTERFACE ${PROJECT_SOURCE_DIR}/tests)
target_compile_definitions(cpuft_test_paths INTERFACE CPUFT_DEFAULT_SOURCE_DIR="${PROJECT_SOURCE_DIR}")

# cpuft_test(NAME sources... LIBS libs... LABELS labels... ENV VAR=value)
# A GoogleTest executable registered with CTest; each test case is one CTest test.
include(GoogleTest)
function(cpuft_test name)
  cmake_parse_arguments(ARG "" "" "SOURCES;LIBS;LABELS;ENV" ${ARGN})
  add_executable(${name} ${ARG_SOURCES})
  target_link_libraries(${name} PRIVATE ${ARG_LIBS} cpuft_options cpuft_test_paths GTest::gtest
                                        GTest::gtest_main)
  if(NOT ARG_LABELS)
    set(ARG_LABELS unit)
  endif()
  # gtest_discover_tests passes each property a single value, so ENV (one VAR=value) goes through
  # ENVIRONMENT_MODIFICATION rather than a second ENVIRONMENT entry.
  set(extra "")
  if(ARG_ENV)
    string(FIND "${ARG_ENV}" "=" equals)
    string(SUBSTRING "${ARG_ENV}" 0 ${equals} variable)
    math(EXPR value_start "${equals} + 1")
    string(SUBSTRING "${ARG_ENV}" ${value_start} -1 value)
    set(extra ENVIRONMENT_MODIFICATION "${variable}=set:${value}")
  endif()
  gtest_discover_tests(${name} PROPERTIES LABELS "${ARG_LABELS}"
                       ENVIRONMENT "CPUFT_SOURCE_DIR=${PROJECT_SOURCE_DIR}" ${extra}
                       DISCOVERY_TIMEOUT 60)
endfunction()
