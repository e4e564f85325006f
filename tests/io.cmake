# io.cmake - tests of the counter RNG, the data loader and the safetensors interchange (L0),
# including an independent Python reader of what the C writer produces.
foreach(t test_rng test_data test_safetensors)
  add_executable(${t} tests/${t}.c)
  target_link_libraries(${t} PRIVATE hyperpar)
  add_test(NAME ${t} COMMAND ${t})
  set_tests_properties(${t} PROPERTIES LABELS L0 TIMEOUT 60)
endforeach()

add_executable(st_write_sample tests/st_write_sample.c)
target_link_libraries(st_write_sample PRIVATE hyperpar)
find_package(Python3 COMPONENTS Interpreter)
if(Python3_Interpreter_FOUND)
  set(HP_ST_SAMPLE ${CMAKE_CURRENT_BINARY_DIR}/st_sample.safetensors)
  add_test(NAME st_write_sample COMMAND st_write_sample ${HP_ST_SAMPLE})
  set_tests_properties(st_write_sample PROPERTIES LABELS L0 FIXTURES_SETUP st_sample)
  add_test(NAME st_python_reader
           COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_SOURCE_DIR}/tests/read_safetensors.py ${HP_ST_SAMPLE}
                   --expect-count 4
                   --expect-sum tok_embeddings.weight=16.5 --expect-shape tok_embeddings.weight=4x3
                   --expect-sum tokens=4 --expect-shape tokens=2x4
                   --expect-sum norm.weight=3 --expect-sum loss=-1.5 --expect-shape loss=
                   --expect-meta format=pt "--expect-meta" "note=hyperpar \"sample\"")
  set_tests_properties(st_python_reader PROPERTIES LABELS L0 FIXTURES_REQUIRED st_sample TIMEOUT 60)
else()
  message(STATUS "io.cmake: python3 not found, skipping the st_python_reader test")
endif()
