# cmake --install: headers, the emulator library (with its built-in MUFU.RSQ table), the CLI,
# and a package config, so that another project can find_package(boundary) and link
# boundary::reference.
include(CMakePackageConfigHelpers)

install(TARGETS boundary_reference EXPORT boundaryTargets
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
  INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
# The emulator twins of the planted bugs are the self-test's, not the package's: their header stays out.
install(DIRECTORY ${PROJECT_SOURCE_DIR}/reference/include/boundary
  DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}
  PATTERN "mutant_emulators.hpp" EXCLUDE)
install(EXPORT boundaryTargets NAMESPACE boundary::
  DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/boundary)
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/boundaryConfig.cmake.in
  ${PROJECT_BINARY_DIR}/boundaryConfig.cmake
  INSTALL_DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/boundary)
write_basic_package_version_file(${PROJECT_BINARY_DIR}/boundaryConfigVersion.cmake
  COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/boundaryConfig.cmake ${PROJECT_BINARY_DIR}/boundaryConfigVersion.cmake
  DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/boundary)

# The installed package works from another project: install into a scratch prefix, build
# reference/tests/consumer against it, run it.
if(BOUNDARY_TESTS)
  add_test(NAME install_find_package
    COMMAND ${CMAKE_COMMAND} -DBUILD_DIR=${PROJECT_BINARY_DIR} -DSOURCE_DIR=${PROJECT_SOURCE_DIR}
            -DGENERATOR=${CMAKE_GENERATOR} "-DPYTHON=$<$<BOOL:${BOUNDARY_PYTHON}>:${BOUNDARY_PYTHON_EXECUTABLE}>"
            -DPYTHON_DIR=${BOUNDARY_PYTHON_INSTALL_DIR} -P ${PROJECT_SOURCE_DIR}/cmake/TestInstall.cmake)
  set_tests_properties(install_find_package PROPERTIES LABELS cpu)
endif()
