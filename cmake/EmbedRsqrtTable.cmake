# Unpacks the captured MUFU.RSQ table (fixtures/rsqrt) at configure time, checks it against
# the SHA-256 its provenance records, and sets BOUNDARY_RSQRT_TABLE_SOURCE: a source file that
# builds the table into the library, so the emulator needs no file at run time.
set(_rsqrt_dir "${PROJECT_SOURCE_DIR}/fixtures/rsqrt")
set(_rsqrt_archive "${_rsqrt_dir}/mufu_rsq_delta.tar.xz")
set(_rsqrt_out "${PROJECT_BINARY_DIR}/rsqrt")
set(_rsqrt_bin "${_rsqrt_out}/mufu_rsq_delta.bin")
set_property(DIRECTORY "${PROJECT_SOURCE_DIR}" APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS
  "${_rsqrt_archive}" "${_rsqrt_dir}/provenance.json")

file(READ "${_rsqrt_dir}/provenance.json" _rsqrt_provenance)
string(JSON _rsqrt_sha GET "${_rsqrt_provenance}" sha256_of_bin)
file(ARCHIVE_EXTRACT INPUT "${_rsqrt_archive}" DESTINATION "${_rsqrt_out}")
file(SHA256 "${_rsqrt_bin}" _rsqrt_actual)
if(NOT _rsqrt_actual STREQUAL _rsqrt_sha)
  message(FATAL_ERROR "${_rsqrt_archive}: unpacked table has SHA-256 ${_rsqrt_actual}, "
                      "provenance.json records ${_rsqrt_sha}")
endif()
file(SIZE "${_rsqrt_bin}" _rsqrt_size)
if(NOT _rsqrt_size EQUAL 4194304)
  message(FATAL_ERROR "${_rsqrt_bin}: ${_rsqrt_size} bytes, expected 4194304 (2^24 2-bit codes)")
endif()

set(BOUNDARY_RSQRT_TABLE_SOURCE "${PROJECT_SOURCE_DIR}/reference/src/mufu_rsq_table.cpp")
set_source_files_properties("${BOUNDARY_RSQRT_TABLE_SOURCE}" PROPERTIES
  COMPILE_DEFINITIONS "BOUNDARY_RSQRT_TABLE_PATH=\"${_rsqrt_bin}\""
  OBJECT_DEPENDS "${_rsqrt_bin}")
