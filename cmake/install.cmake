# Install rules: libraries, headers, tools, a CMake package and a pkg-config file
# (included where SC_INSTALL is on).
include(CMakePackageConfigHelpers)

install(TARGETS shardcomm shardcomm_static EXPORT shardcommTargets
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
        RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(TARGETS scrun sc-info RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
if(SC_BUILD_BENCH)
  install(TARGETS sc-bench RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
  # The gradient profiles sc-bench reducer --profile NAME finds there.
  install(DIRECTORY bench/profiles/ DESTINATION ${CMAKE_INSTALL_DATADIR}/shardcomm/profiles
          FILES_MATCHING PATTERN "*.txt")
endif()
install(DIRECTORY include/shardcomm DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(EXPORT shardcommTargets NAMESPACE shardcomm::
        DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/shardcomm)

# An absolute CMAKE_INSTALL_LIBDIR puts the package outside the prefix, and CMake's
# exported targets then name the headers under the prefix configured, not under the one
# installed to (cmake --install --prefix): the config names them there instead, written
# at install time as the .pc file is (below), by their absolute path (a relative --prefix
# is one from the directory cmake --install runs in). An absolute
# CMAKE_INSTALL_INCLUDEDIR stays where it is.
set(SC_CONFIG_INCLUDEDIR "")
if(IS_ABSOLUTE "${CMAKE_INSTALL_LIBDIR}" AND NOT IS_ABSOLUTE "${CMAKE_INSTALL_INCLUDEDIR}")
  set(SC_CONFIG_INCLUDEDIR "@SC_INSTALL_PREFIX@/${CMAKE_INSTALL_INCLUDEDIR}")
endif()
configure_package_config_file(cmake/shardcommConfig.cmake.in
  ${PROJECT_BINARY_DIR}/shardcommConfig.cmake
  INSTALL_DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/shardcomm)
set(SC_CONFIG_INSTALLED ${PROJECT_BINARY_DIR}/shardcommConfig.cmake)
if(SC_CONFIG_INCLUDEDIR)
  set(SC_CONFIG_INSTALLED ${PROJECT_BINARY_DIR}/shardcommConfig-installed.cmake)
  install(CODE "get_filename_component(SC_INSTALL_PREFIX \"\${CMAKE_INSTALL_PREFIX}\" ABSOLUTE)
    configure_file(\"${PROJECT_BINARY_DIR}/shardcommConfig.cmake\" \"${SC_CONFIG_INSTALLED}\"
                   @ONLY)
    file(REMOVE \"\$ENV{DESTDIR}${CMAKE_INSTALL_LIBDIR}/cmake/shardcomm/shardcommConfig.cmake\")")
endif()
install(FILES ${SC_CONFIG_INSTALLED} DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/shardcomm
        RENAME shardcommConfig.cmake)
write_basic_package_version_file(${PROJECT_BINARY_DIR}/shardcommConfigVersion.cmake
  VERSION ${PROJECT_VERSION} COMPATIBILITY ${SC_PACKAGE_COMPATIBILITY})
install(FILES ${PROJECT_BINARY_DIR}/shardcommConfigVersion.cmake
        DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/shardcomm)

# The .pc file finds its prefix from its own location, so that an install with
# `cmake --install --prefix P` works wherever P is. An absolute CMAKE_INSTALL_LIBDIR
# stays where it is whatever the prefix: the .pc file there names it as it is, and the
# prefix installed to (as an absolute path), written at install time. An absolute
# CMAKE_INSTALL_INCLUDEDIR is named as it is.
if(IS_ABSOLUTE "${CMAKE_INSTALL_LIBDIR}")
  set(SC_PC_PREFIX "@SC_PC_INSTALL_PREFIX@")
  set(SC_PC_LIBDIR "${CMAKE_INSTALL_LIBDIR}")
else()
  file(RELATIVE_PATH SC_PC_TO_PREFIX "/root/${CMAKE_INSTALL_LIBDIR}/pkgconfig" "/root")
  set(SC_PC_PREFIX "\${pcfiledir}/${SC_PC_TO_PREFIX}")
  set(SC_PC_LIBDIR "\${prefix}/${CMAKE_INSTALL_LIBDIR}")
endif()
if(IS_ABSOLUTE "${CMAKE_INSTALL_INCLUDEDIR}")
  set(SC_PC_INCLUDEDIR "${CMAKE_INSTALL_INCLUDEDIR}")
else()
  set(SC_PC_INCLUDEDIR "\${prefix}/${CMAKE_INSTALL_INCLUDEDIR}")
endif()
# A static link also takes the device path's libraries (and the C++ runtime its CUDA
# objects use) where it was built, and the dynamic loader in every build (the CUDA
# driver is loaded at run time: src/core/cuda_driver.c).
set(SC_PC_LIBS_PRIVATE "-lpthread -lm")
foreach(lib IN LISTS CMAKE_DL_LIBS)
  string(APPEND SC_PC_LIBS_PRIVATE " -l${lib}")
endforeach()
if(SC_HAVE_CUDA)
  get_target_property(SC_CUDART_LOCATION CUDA::cudart IMPORTED_LOCATION)
  get_filename_component(SC_CUDART_DIR "${SC_CUDART_LOCATION}" DIRECTORY)
  string(APPEND SC_PC_LIBS_PRIVATE " -L${SC_CUDART_DIR} -lcudart")
endif()
if(SC_HAVE_NCCL)
  get_filename_component(SC_NCCL_DIR "${SC_NCCL_LIBRARY}" DIRECTORY)
  string(APPEND SC_PC_LIBS_PRIVATE " -L${SC_NCCL_DIR} -lnccl")
endif()
if(SC_HAVE_CUDA)
  string(APPEND SC_PC_LIBS_PRIVATE " -lstdc++")
endif()
configure_file(cmake/shardcomm.pc.in ${PROJECT_BINARY_DIR}/shardcomm.pc @ONLY)
set(SC_PC_INSTALLED ${PROJECT_BINARY_DIR}/shardcomm.pc)
if(IS_ABSOLUTE "${CMAKE_INSTALL_LIBDIR}")
  set(SC_PC_INSTALLED ${PROJECT_BINARY_DIR}/shardcomm-installed.pc)
  # The installed file goes too: one installed from another prefix in the same second
  # would be taken for up to date.
  install(CODE "get_filename_component(SC_PC_INSTALL_PREFIX \"\${CMAKE_INSTALL_PREFIX}\"
                                        ABSOLUTE)
    configure_file(\"${PROJECT_BINARY_DIR}/shardcomm.pc\" \"${SC_PC_INSTALLED}\" @ONLY)
    file(REMOVE \"\$ENV{DESTDIR}${CMAKE_INSTALL_LIBDIR}/pkgconfig/shardcomm.pc\")")
endif()
install(FILES ${SC_PC_INSTALLED} DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig
        RENAME shardcomm.pc)
