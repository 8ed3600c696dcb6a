# The RUNPATH of the installed programs that link the shared library.

# sc_install_rpath_to_libdir(target...): each installed target finds the library in
# CMAKE_INSTALL_LIBDIR from CMAKE_INSTALL_BINDIR, whichever of the two is absolute or
# nested, as "$ORIGIN/<the path between them>"; with relative directories that stays
# right wherever the prefix is put (cmake --install --prefix). An absolute library
# directory does not move with the prefix: it is the RUNPATH itself.
function(sc_install_rpath_to_libdir)
  if(IS_ABSOLUTE "${CMAKE_INSTALL_LIBDIR}")
    set_target_properties(${ARGN} PROPERTIES INSTALL_RPATH "${CMAKE_INSTALL_LIBDIR}")
  else()
    file(RELATIVE_PATH bin_to_lib ${CMAKE_INSTALL_FULL_BINDIR} ${CMAKE_INSTALL_FULL_LIBDIR})
    set_target_properties(${ARGN} PROPERTIES INSTALL_RPATH "$ORIGIN/${bin_to_lib}")
  endif()
endfunction()
