# Installing the public C++ client (issue 28; docs/clients.md, "C++: installing
# and linking"):
#
#   cmake --install BUILD --prefix P --component client
#
# puts into P, and nothing else (no program, test or benchmark):
#   include/zkfleet/client.h, include/zkfleet.pb.h (the protocol's messages,
#     generated from schema/zkfleet.proto, which client.h includes)
#   lib/libzkfleet_client.a and the static libraries it is built on:
#     libzkfleet_fleet.a, libzkfleet_wire.a, libzkfleet_schema.a, libzkfleet_common.a
#   lib/cmake/zkfleet/: the CMake package `zkfleet`, imported target
#     zkfleet::client (find_package(zkfleet CONFIG REQUIRED)); the other
#     libraries are exported too, as zkfleet::fleet, zkfleet::schema and
#     zkfleet::common, implementation details that zkfleet::client links
#   lib/pkgconfig/zkfleet-client.pc (pkg-config --cflags --libs [--static])
# ("lib" is GNUInstallDirs' CMAKE_INSTALL_LIBDIR: lib/x86_64-linux-gnu for
# prefix /usr on Debian.)
#
# Each library of the package calls zkfleet_install_client_library() next to
# its add_library(); clients/cpp/CMakeLists.txt installs the header, the
# export set and the package files (zkfleet_install_client_package()).

include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

set(ZKFLEET_INSTALL_CMAKEDIR ${CMAKE_INSTALL_LIBDIR}/cmake/zkfleet CACHE STRING
  "Where `cmake --install` puts the zkfleet CMake package (relative to the prefix)")
set(ZKFLEET_INSTALL_PKGCONFIGDIR ${CMAKE_INSTALL_LIBDIR}/pkgconfig CACHE STRING
  "Where `cmake --install` puts zkfleet-client.pc (relative to the prefix)")
set(_zk_install_module_dir ${CMAKE_CURRENT_LIST_DIR})

# zkfleet_install_client_library(TARGET EXPORT_NAME): TARGET (a static
# library) goes to the client component's lib/ and into the export set
# zkfleetTargets as zkfleet::EXPORT_NAME.
function(zkfleet_install_client_library target export_name)
  set_target_properties(${target} PROPERTIES EXPORT_NAME ${export_name})
  install(TARGETS ${target} EXPORT zkfleetTargets
    ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT client)
endfunction()

# Where a library that the build links by path (find_library) or by imported
# target lives, as pkg-config flags: "-lNAME", preceded by "-LDIR" unless DIR
# is one the compiler searches anyway.
function(_zk_pc_link_flags out file)
  get_filename_component(dir "${file}" DIRECTORY)
  get_filename_component(name "${file}" NAME_WE)
  string(REGEX REPLACE "^lib" "" name "${name}")
  set(flags "-l${name}")
  if(dir AND NOT dir IN_LIST CMAKE_CXX_IMPLICIT_LINK_DIRECTORIES)
    set(flags "-L${dir} ${flags}")
  endif()
  set(${out} "${flags}" PARENT_SCOPE)
endfunction()

# zkfleet_install_client_package(): the export set (zkfleetTargets.cmake),
# zkfleetConfig.cmake / zkfleetConfigVersion.cmake and zkfleet-client.pc.
function(zkfleet_install_client_package)
  install(EXPORT zkfleetTargets NAMESPACE zkfleet:: FILE zkfleetTargets.cmake
    DESTINATION ${ZKFLEET_INSTALL_CMAKEDIR} COMPONENT client)

  # The external libraries, as this build found them (top-level CMakeLists.txt).
  set(ZKFLEET_PROTOBUF_VERSION ${Protobuf_VERSION})
  set(ZKFLEET_SODIUM_LIBRARY ${SODIUM_LIBRARY})
  configure_package_config_file(${_zk_install_module_dir}/zkfleetConfig.cmake.in
    ${CMAKE_CURRENT_BINARY_DIR}/package/zkfleetConfig.cmake
    INSTALL_DESTINATION ${ZKFLEET_INSTALL_CMAKEDIR})
  # 0.x: a minor release may change the API.
  write_basic_package_version_file(${CMAKE_CURRENT_BINARY_DIR}/package/zkfleetConfigVersion.cmake
    VERSION ${PROJECT_VERSION} COMPATIBILITY SameMinorVersion)
  install(FILES ${CMAKE_CURRENT_BINARY_DIR}/package/zkfleetConfig.cmake
                ${CMAKE_CURRENT_BINARY_DIR}/package/zkfleetConfigVersion.cmake
    DESTINATION ${ZKFLEET_INSTALL_CMAKEDIR} COMPONENT client)

  # pkg-config. The libraries are static, so Libs (not Libs.private) names
  # all that a program needs: a plain --libs works as well as --static.
  # libzmq and libsodium are linked as the build links them (the shared
  # libraries, by -l), not through `Requires: libzmq`: on Debian 12,
  # `pkg-config --static libzmq` ends in norm.pc's bare "libprotokit.a",
  # which no linker finds.
  set(zmq_file "")
  if(TARGET libzmq)
    get_target_property(zmq_file libzmq IMPORTED_LOCATION)
  endif()
  if(NOT zmq_file AND ZeroMQ_LIBRARY)
    set(zmq_file ${ZeroMQ_LIBRARY})
  endif()
  if(zmq_file)
    _zk_pc_link_flags(ZKFLEET_PC_ZMQ "${zmq_file}")
  else()
    set(ZKFLEET_PC_ZMQ "-lzmq")
  endif()
  _zk_pc_link_flags(ZKFLEET_PC_SODIUM "${SODIUM_LIBRARY}")
  # The .pc finds its prefix from its own place (${pcfiledir}), so the
  # install can be moved or made with `cmake --install --prefix`.
  if(IS_ABSOLUTE "${ZKFLEET_INSTALL_PKGCONFIGDIR}")
    set(ZKFLEET_PC_PREFIX "${CMAKE_INSTALL_PREFIX}")
  else()
    file(RELATIVE_PATH rel "/prefix/${ZKFLEET_INSTALL_PKGCONFIGDIR}" "/prefix")
    string(REGEX REPLACE "/$" "" rel "${rel}")
    set(ZKFLEET_PC_PREFIX "\${pcfiledir}/${rel}")
  endif()
  foreach(dir LIBDIR INCLUDEDIR)
    if(IS_ABSOLUTE "${CMAKE_INSTALL_${dir}}")
      set(ZKFLEET_PC_${dir} "${CMAKE_INSTALL_${dir}}")
    else()
      set(ZKFLEET_PC_${dir} "\${prefix}/${CMAKE_INSTALL_${dir}}")
    endif()
  endforeach()
  configure_file(${_zk_install_module_dir}/zkfleet-client.pc.in
    ${CMAKE_CURRENT_BINARY_DIR}/package/zkfleet-client.pc @ONLY)
  install(FILES ${CMAKE_CURRENT_BINARY_DIR}/package/zkfleet-client.pc
    DESTINATION ${ZKFLEET_INSTALL_PKGCONFIGDIR} COMPONENT client)
endfunction()
