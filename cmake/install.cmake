# Install rules: libraries, headers, tools, a CMake package and a pkg-config file.
include(CMakePackageConfigHelpers)

install(TARGETS shardcomm shardcomm_static EXPORT shardcommTargets
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
        RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(DIRECTORY include/shardcomm DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(EXPORT shardcommTargets NAMESPACE shardcomm::
        DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/shardcomm)

configure_package_config_file(cmake/shardcommConfig.cmake.in
  ${CMAKE_BINARY_DIR}/shardcommConfig.cmake
  INSTALL_DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/shardcomm)
write_basic_package_version_file(${CMAKE_BINARY_DIR}/shardcommConfigVersion.cmake
  VERSION ${PROJECT_VERSION} COMPATIBILITY SameMinorVersion)
install(FILES ${CMAKE_BINARY_DIR}/shardcommConfig.cmake
              ${CMAKE_BINARY_DIR}/shardcommConfigVersion.cmake
        DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/shardcomm)

# The .pc file finds its prefix from its own location, so that an install with
# `cmake --install --prefix P` works wherever P is.
file(RELATIVE_PATH SC_PC_TO_PREFIX "/root/${CMAKE_INSTALL_LIBDIR}/pkgconfig" "/root")
set(SC_PC_PREFIX "\${pcfiledir}/${SC_PC_TO_PREFIX}")
configure_file(cmake/shardcomm.pc.in ${CMAKE_BINARY_DIR}/shardcomm.pc @ONLY)
install(FILES ${CMAKE_BINARY_DIR}/shardcomm.pc
        DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
