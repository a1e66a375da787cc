# Host code: IEEE arithmetic exactly as written. No contraction of a*b+c into an fma, no fast
# math, so that every rounding in the emulator is the one the contract names.
# NO_SANITIZE: built without the sanitizers even in a sanitizer build (the emulator twins, below).
function(boundary_host_flags target)
  cmake_parse_arguments(F "NO_SANITIZE" "" "" ${ARGN})
  target_compile_options(${target} PRIVATE
    $<$<COMPILE_LANGUAGE:CXX>:-Wall -Wextra -Wpedantic -Wshadow -Wconversion -Wno-sign-conversion
                              -ffp-contract=off -fno-fast-math -fno-finite-math-only>)
  # GCC 12 at -O3 warns falsely on "literal" + std::string (-Wrestrict, GCC bug 105329).
  if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU" AND CMAKE_CXX_COMPILER_VERSION VERSION_LESS 13)
    target_compile_options(${target} PRIVATE $<$<COMPILE_LANGUAGE:CXX>:-Wno-restrict>)
  endif()
  if(BOUNDARY_SANITIZE AND NOT F_NO_SANITIZE)
    target_compile_options(${target} PRIVATE
      $<$<COMPILE_LANGUAGE:CXX>:-fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer>)
    target_link_options(${target} PRIVATE -fsanitize=address,undefined)
  endif()
endfunction()

# Device code: each contract operation is pinned with an intrinsic or inline PTX; -fmad=false
# also keeps nvcc from contracting anything that was left unpinned by mistake.
function(boundary_cuda_flags target)
  target_compile_options(${target} PRIVATE
    $<$<COMPILE_LANGUAGE:CUDA>:-fmad=false -ftz=false -prec-div=true -prec-sqrt=true
                               -Xcompiler=-ffp-contract=off>)
endfunction()

# A doctest executable registered with ctest. LABELS: cpu or gpu. A gpu test exits 77 where
# no device exists, which ctest reports as skipped.
function(boundary_add_test name)
  cmake_parse_arguments(T "" "" "SOURCES;LIBS;LABELS" ${ARGN})
  add_executable(${name} ${T_SOURCES})
  target_link_libraries(${name} PRIVATE ${T_LIBS} doctest::doctest)
  target_compile_definitions(${name} PRIVATE
    BOUNDARY_SOURCE_DIR="${PROJECT_SOURCE_DIR}")
  boundary_host_flags(${name})
  add_test(NAME ${name} COMMAND ${name})
  set_tests_properties(${name} PROPERTIES LABELS "${T_LABELS}" SKIP_RETURN_CODE 77)
endfunction()

# The code that runs for minutes in the sanitized tests (the emulator, its twins, the suites): -O2
# there although the sanitizer build compiles at -O1 (cmake/test.sh), which compiles the rest about
# a third faster.
function(boundary_hot_code target)
  if(BOUNDARY_SANITIZE)
    target_compile_options(${target} PRIVATE $<$<COMPILE_LANGUAGE:CXX>:-O2>)
  endif()
endfunction()

# Code that is costly to compile and runs for moments: the verify tests' own sources (doctest, JSON
# and file-format templates around calls into the libraries) in every build, and the subcommands'
# parsing, JSON and orchestration in the sanitizer build (verify/CMakeLists.txt). -O0 compiles it
# in about half the time of -O3 (Release) or -O1 (sanitizers, where -O0 also leaves every access
# instrumented); the library code the tests check keeps the build's level.
function(boundary_brief_code target)
  target_compile_options(${target} PRIVATE $<$<COMPILE_LANGUAGE:CXX>:-O0>)
endfunction()
