# model_config.cmake - what a Hugging Face config.json brings into a run: Llama 3.1's
# rope_scaling applied (verified under tp x dp_shard, a loss of its own, named in the dump, a
# checkpoint that refuses to resume under plain RoPE); other rope types are refused (bad_inputs).
add_test(NAME rope_scaling_llama3
         COMMAND sh ${CMAKE_SOURCE_DIR}/tests/run_rope_scaling.sh $<TARGET_FILE:hp>
                 ${CMAKE_CURRENT_BINARY_DIR}/rope_scaling_llama3)
set_tests_properties(rope_scaling_llama3 PROPERTIES LABELS L0 TIMEOUT 120 PROCESSORS 2)
