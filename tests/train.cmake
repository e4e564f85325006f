# train.cmake - the whole model and the trainer: finite differences, interchange, real text.
add_executable(test_model_fd tests/test_model_fd.c)
target_link_libraries(test_model_fd PRIVATE hyperpar)
add_test(NAME model_fd COMMAND test_model_fd)
set_tests_properties(model_fd PROPERTIES LABELS L0 TIMEOUT 300)

# --dump writes files a reader written against the safetensors format alone can load
find_package(Python3 COMPONENTS Interpreter)
if(Python3_FOUND)
  add_test(NAME run_dump_readable
           COMMAND sh ${CMAKE_SOURCE_DIR}/tests/run_dump_check.sh $<TARGET_FILE:hp>
                   ${Python3_EXECUTABLE} ${CMAKE_SOURCE_DIR}/tests/read_safetensors.py
                   ${CMAKE_CURRENT_BINARY_DIR}/dump_check)
  set_tests_properties(run_dump_readable PROPERTIES LABELS L0 TIMEOUT 120)
endif()

# training on a real text (GPL-3, on every Debian machine) makes the loss fall
if(EXISTS /usr/share/common-licenses/GPL-3)
  add_test(NAME run_real_text_learns
           COMMAND sh ${CMAKE_SOURCE_DIR}/tests/run_learns.sh $<TARGET_FILE:hp> /usr/share/common-licenses/GPL-3)
  set_tests_properties(run_real_text_learns PROPERTIES LABELS L1 TIMEOUT 300)
endif()
