# install.cmake - what `cmake --install build --prefix P` puts under P, so that a C program
# builds against hyperpar without this source tree:
#   P/lib/libhyperpar.so, libhyperpar.a           both packings of the same objects
#   P/include/hyperpar/*.h                        the public headers (they include no private one)
#   P/lib/pkgconfig/hyperpar.pc                   mpicc main.c $(pkg-config --cflags --libs hyperpar)
#   P/lib/cmake/hyperpar/hyperparConfig.cmake     find_package(hyperpar) -> hyperpar::hyperpar
# Every path is relative to P, so the prefix may be chosen at install time (--prefix).
include(CMakePackageConfigHelpers)

set_target_properties(hyperpar_shared PROPERTIES EXPORT_NAME hyperpar)
set_target_properties(hyperpar PROPERTIES EXPORT_NAME hyperpar_static)
install(TARGETS hyperpar_shared hyperpar EXPORT hyperparTargets
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
        RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(DIRECTORY ${CMAKE_CURRENT_SOURCE_DIR}/include/hyperpar
        DESTINATION ${CMAKE_INSTALL_INCLUDEDIR} FILES_MATCHING PATTERN "*.h")
install(TARGETS hp RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})

# pkg-config: the .pc file finds the prefix from its own place (pcfiledir), so it stays right
# wherever --prefix puts it. OpenBLAS and cJSON have .pc files of their own (Requires.private:
# only `--static` links them; the shared library already names them).
file(RELATIVE_PATH HP_PC_TO_PREFIX "/${CMAKE_INSTALL_LIBDIR}/pkgconfig" "/")
string(REGEX REPLACE "/$" "" HP_PC_TO_PREFIX "${HP_PC_TO_PREFIX}")
configure_file(${CMAKE_CURRENT_LIST_DIR}/hyperpar.pc.in ${CMAKE_CURRENT_BINARY_DIR}/hyperpar.pc @ONLY)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/hyperpar.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)

# CMake package: the exported targets plus the dependencies they name (MPI, OpenBLAS).
set(HP_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/hyperpar)
install(EXPORT hyperparTargets NAMESPACE hyperpar:: DESTINATION ${HP_CMAKE_DIR})
configure_package_config_file(${CMAKE_CURRENT_LIST_DIR}/hyperparConfig.cmake.in
  ${CMAKE_CURRENT_BINARY_DIR}/hyperparConfig.cmake INSTALL_DESTINATION ${HP_CMAKE_DIR})
write_basic_package_version_file(${CMAKE_CURRENT_BINARY_DIR}/hyperparConfigVersion.cmake
  VERSION ${PROJECT_VERSION} COMPATIBILITY SameMinorVersion)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/hyperparConfig.cmake
              ${CMAKE_CURRENT_BINARY_DIR}/hyperparConfigVersion.cmake DESTINATION ${HP_CMAKE_DIR})
