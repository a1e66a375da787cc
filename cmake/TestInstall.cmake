# cmake -DBUILD_DIR=... -DSOURCE_DIR=... -DGENERATOR=... [-DPYTHON=... -DPYTHON_DIR=...] -P TestInstall.cmake
set(scratch "${BUILD_DIR}/install-test")
file(REMOVE_RECURSE "${scratch}")
function(run)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "failed (${rc}): ${ARGN}")
  endif()
endfunction()
run(${CMAKE_COMMAND} --install "${BUILD_DIR}" --prefix "${scratch}/prefix")
run(${CMAKE_COMMAND} -S "${SOURCE_DIR}/reference/tests/consumer" -B "${scratch}/build" -G "${GENERATOR}"
    "-DCMAKE_PREFIX_PATH=${scratch}/prefix")
run(${CMAKE_COMMAND} --build "${scratch}/build")
run("${scratch}/build/consumer")
# The Python package, when built: importable from the installed prefix alone, its emulator linked in
# (run() takes a list: the code has newlines, no semicolons).
if(PYTHON)
  run(${CMAKE_COMMAND} -E env "PYTHONPATH=${scratch}/prefix/${PYTHON_DIR}" ${PYTHON} -c
      "import boundary_verify as bv\nassert bv.__file__.startswith('${scratch}/prefix/'), bv.__file__\nprint(bv.__file__)")
endif()
