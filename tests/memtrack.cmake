# memtrack.cmake - the tracking allocator (include/hyperpar/memtrack.h), L0.
add_executable(test_memtrack ${CMAKE_CURRENT_LIST_DIR}/test_memtrack.c)
target_link_libraries(test_memtrack PRIVATE hyperpar)
add_test(NAME memtrack COMMAND test_memtrack)
set_tests_properties(memtrack PROPERTIES LABELS L0 TIMEOUT 30)
