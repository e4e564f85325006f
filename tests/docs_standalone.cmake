# docs_standalone.cmake - what a user reads stands alone: no file outside tests/ points to
# ../shared (the specs and the seed are not in the repository), and every relative link of
# README.md and docs/*.md names a file that is (tests/check_docs_standalone.py).
add_test(NAME docs_standalone
         COMMAND python3 ${CMAKE_CURRENT_LIST_DIR}/check_docs_standalone.py ${CMAKE_SOURCE_DIR})
set_tests_properties(docs_standalone PROPERTIES LABELS L0 TIMEOUT 30)
