# data.cmake - the token formats of training-job.md §4 end to end: the same ids in every format
# give bit-identical losses (tests/run_data_formats.sh; the units are test_data in io.cmake).
find_package(Python3 COMPONENTS Interpreter)
if(Python3_Interpreter_FOUND AND EXISTS /usr/share/common-licenses/GPL-3)
  add_test(NAME data_formats_same_losses
           COMMAND sh ${CMAKE_SOURCE_DIR}/tests/run_data_formats.sh $<TARGET_FILE:hp> /usr/share/common-licenses/GPL-3)
  set_tests_properties(data_formats_same_losses PROPERTIES LABELS L1 TIMEOUT 120)
endif()
