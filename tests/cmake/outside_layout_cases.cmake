# outside_layout_cases.cmake - hp_outside_layout_tests(CHECK LABELS CASES...): one CTest per case
# of another framework's layout proven by hp compare, each run by tests/run_torch2_layout.sh with
# CHECK the script it runs (check_layout, check_torchtitan: examples/torch/CHECK.sh; or a path
# under examples/, beyond/check_beyond). A case is NAME:LABEL:WANT:TENSOR:FLAGS (FLAGS with ','
# for ' '; TENSOR a grep -E pattern of the row that must FAIL, or '-'); LABELS are added to
# LABEL. Skipped (77) where the framework cannot be installed; one venv, so one at a time.
# Included by tests/torch2.cmake and tests/beyond.cmake.
include_guard(GLOBAL)
function(hp_outside_layout_tests check labels)
  foreach(case ${ARGN})
    string(REPLACE ":" ";" parts "${case}")
    list(GET parts 0 name)
    list(GET parts 1 label)
    list(GET parts 2 want)
    list(GET parts 3 tensor)
    list(SUBLIST parts 4 -1 flags)            # FLAGS may hold ':' (--ac every:2)
    list(JOIN flags ":" flags)
    string(REPLACE "," ";" flags "${flags}")
    if(tensor STREQUAL "-")
      set(tensor "")
    endif()
    add_test(NAME ${name}
             COMMAND env TORCH2_CHECK=${check} sh ${CMAKE_SOURCE_DIR}/tests/run_torch2_layout.sh $<TARGET_FILE:hp>
                     ${CMAKE_CURRENT_BINARY_DIR}/${name} ${want} ${tensor} -- ${flags})
    # the first test on a fresh machine installs torch 2 (about 3 minutes; DeepSpeed then builds
    # its CPU communication op once, 3 more): the timeout covers it
    set_tests_properties(${name} PROPERTIES LABELS "${label};${labels}" TIMEOUT 900 PROCESSORS 2
                         SKIP_RETURN_CODE 77 RESOURCE_LOCK torch2_venv)
  endforeach()
endfunction()
