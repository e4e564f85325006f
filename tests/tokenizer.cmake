# tokenizer.cmake - the SentencePiece tokenizer (L0): test_tokenizer trains a 512-piece BPE
# model on docs/architecture.md twice (byte-identical files) and checks load, encode/decode
# round trips, the pieces and the bad files; run_tokenize.sh drives `hp tokenize` end to end
# into llm.c shards that hp run trains on and hp eval reads bits per byte from. Both exit 77
# (skipped) when hp is built without SentencePiece.
add_executable(test_tokenizer tests/test_tokenizer.c)
target_link_libraries(test_tokenizer PRIVATE hyperpar)
add_test(NAME tokenizer_unit COMMAND sh -c "rm -rf \"$1\" && mkdir -p \"$1\" && exec \"$0\" \"$2\" \"$1\""
         $<TARGET_FILE:test_tokenizer> ${CMAKE_BINARY_DIR}/tokenizer_unit ${CMAKE_SOURCE_DIR}/docs/architecture.md)
set_tests_properties(tokenizer_unit PROPERTIES LABELS L0 TIMEOUT 120 SKIP_RETURN_CODE 77)
add_test(NAME tokenize_end_to_end
         COMMAND sh ${CMAKE_SOURCE_DIR}/tests/run_tokenize.sh $<TARGET_FILE:hp> ${CMAKE_SOURCE_DIR}/docs
                 ${CMAKE_BINARY_DIR}/tokenize_end_to_end)
set_tests_properties(tokenize_end_to_end PROPERTIES LABELS L0 TIMEOUT 300 SKIP_RETURN_CODE 77)
