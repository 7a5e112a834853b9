# Debian's libns3-dev (3.37) ships CMake targets for three helper programs that it does
# not install (raw-sock-creator, tap-creator, tap-device-creator), so a plain
# find_package(ns3) stops with "this file does not exist". We load a copy of its
# config with those file checks removed and the install prefix written in.
find_file(_ns3_targets ns3Targets-release.cmake
  PATHS /usr/lib/${CMAKE_LIBRARY_ARCHITECTURE}/cmake/ns3 /usr/lib/cmake/ns3 REQUIRED NO_DEFAULT_PATH)
get_filename_component(_ns3_config_dir "${_ns3_targets}" DIRECTORY)
get_filename_component(_ns3_prefix "${_ns3_config_dir}/../../../.." REALPATH)
set(_ns3_copy "${CMAKE_BINARY_DIR}/ns3-config")
file(GLOB _ns3_files "${_ns3_config_dir}/*.cmake")
foreach(_file IN LISTS _ns3_files)
  get_filename_component(_name "${_file}" NAME)
  file(READ "${_file}" _text)
  string(REGEX REPLACE "list\\(APPEND _cmake_import_check_files_for_ns3::[a-z-]*creator [^\n]*\n" "" _text "${_text}")
  string(REGEX REPLACE "list\\(APPEND _cmake_import_check_targets ns3::[a-z-]*creator \\)\n" "" _text "${_text}")
  string(REPLACE "\${_IMPORT_PREFIX}" "${_ns3_prefix}" _text "${_text}")
  file(WRITE "${_ns3_copy}/${_name}" "${_text}")
endforeach()
find_package(ns3 REQUIRED CONFIG PATHS "${_ns3_copy}" NO_DEFAULT_PATH)
