# install.cmake - hyperpar as an installed library (L1): `cmake --install` into a fresh prefix
# under the build folder; every installed public header compiles alone (none includes a private
# one); examples/00_train builds OUT OF TREE with `mpicc main.c $(pkg-config --cflags --libs
# hyperpar)` (shared, and --static), trains on 4 ranks and prints its loss lines; the same
# folder builds as a find_package(hyperpar) CMake project. Same MPI as this build throughout.
string(REPLACE ";" " " HP_INSTALL_MPIEXEC_STR "${HP_MPIEXEC}")
add_test(NAME install_consumer COMMAND sh ${CMAKE_CURRENT_LIST_DIR}/run_install_check.sh
  ${CMAKE_BINARY_DIR} ${CMAKE_SOURCE_DIR}/examples/00_train ${CMAKE_BINARY_DIR}/install_check
  ${CMAKE_INSTALL_LIBDIR} ${MPI_C_COMPILER} "${HP_INSTALL_MPIEXEC_STR}" ${CMAKE_COMMAND}
  ${PKG_CONFIG_EXECUTABLE})
set_tests_properties(install_consumer PROPERTIES LABELS L1 TIMEOUT 300 PROCESSORS 2
                     ENVIRONMENT "OPENBLAS_NUM_THREADS=1")
