# layers.cmake - dependencies point down (scripts/check_layers.py): no include of a higher
# layer beyond the listed debts, and no cycle of includes.
add_test(NAME layers_point_down COMMAND python3 ${CMAKE_SOURCE_DIR}/scripts/check_layers.py)
set_tests_properties(layers_point_down PROPERTIES LABELS L0 TIMEOUT 30)
