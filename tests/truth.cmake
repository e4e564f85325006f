# truth.cmake - every line hp prints is true (issue 37, "Lines that are true", "Stale docs"):
# the planner's labels name the dtype it predicted, --verify follows an explicit --steps (or
# refuses a second number), the help says the world size with every degree, and the docs'
# flags and features exist (tests/check_docs_true.py). hp_cli_test comes from dims.cmake.
# (Patterns hold no ';': CMake would split them. A '.' stands for it.)

# hp plan --memory under the bf16 policy: the header names it and says which buffers are 2 bytes
# and which stay 4; the time model's wire assumption names the 2-byte gathers (no "fp32
# everywhere"); --json names the policy. fp32 keeps its label.
hp_cli_test(plan_memory_label_bf16 0 -
  "^memory on rank 0 \\(predicted. the bf16 policy. docs/planner.md"
  "^  2 bytes an element: the activations the blocks keep"
  "^  4 bytes \\(fp32\\): the master parameters, gradients, optimizer state"
  "F:assume: wire bytes by comm.h's rules, as hyperpar moves them (the bf16 policy: gathered values"
  "!F:fp32, 4 bytes an element" "!F:fp32 everywhere"
  -- plan --memory --dp-shard 2 --tp 2 --mixed-precision-param bfloat16 --hw cpu)
hp_cli_test(plan_memory_label_bf16_float8 0 -
  "^memory on rank 0 \\(predicted. the bf16 policy. docs/planner.md"
  "F:2 bytes an element: the units kept gathered apart and the send copies of the pp stream"
  "F:float8 keeps them in fp32" "!F:fp32, 4 bytes an element"
  -- plan --memory --pp 2 --dp-shard 2 --mixed-precision-param bfloat16 --float8 tensorwise)
hp_cli_test(plan_memory_label_fp32 0 -
  "^memory on rank 0 \\(predicted. fp32, 4 bytes an element. docs/planner.md\\)$"
  "F:(fp32 everywhere, 4 bytes an element)" "!F:bf16 policy"
  -- plan --memory --dp-shard 2 --tp 2 --hw cpu)
hp_cli_test(plan_json_names_policy 0 - "\"mixed_precision_param\":[[:space:]]*\"bfloat16\""
  -- plan --memory --dp-shard 2 --mixed-precision-param bfloat16 --json -)

# --verify's trajectory follows an explicit --steps: 8 losses compared (the issue's command), the
# default 5 without it; --steps and --verify-steps with two numbers are refused with one line
hp_cli_test(run_verify_follows_steps 0 -
  "^loss trajectory \\(step: parallel / reference\\):( [0-9]+: [0-9.]+/[0-9.]+){8}$" "F: 8: "
  -- run --nproc 2 --steps 8 --verify)
hp_cli_test(run_verify_default_steps 0 -
  "^loss trajectory \\(step: parallel / reference\\):( [0-9]+: [0-9.]+/[0-9.]+){5}$"
  -- run --verify)
hp_cli_test(run_verify_steps_conflict 2
  "F:hp: --verify compares --verify-steps 3 losses, but --steps asks for 8: give one of them, or the same number"
  -- run --steps 8 --verify-steps 3 --verify)
hp_cli_test(run_verify_steps_too_many 2 "F:hp: --verify follows --steps 1001, more than the 1000 losses"
  -- run --steps 1001 --verify)
hp_cli_test(run_help_verify_steps 0 - "F:--verify-steps N, else --steps N of the command line, else"
  "F:--steps and --verify-steps that differ are refused" -- run --help)
# the world size with every degree that multiplies it (ulysses and pp too)
hp_cli_test(help_world_formula 0 - "F:world = dp_replicate*dp_shard*ulysses*cp*tp*pp ranks"
  "F:parallel degrees (world = dp_replicate*dp_shard*ulysses*cp*tp*pp;"
  "!F:world = dp_replicate*dp_shard*cp*tp ranks" -- run --help)

# examples/README.md's lists of what is implemented (each with the recipes that prove it) and
# what is not are generated from the recipe table (hp matrix --features-markdown) and must not
# drift; the documents' flags, "not implemented" claims and job-file descriptions are true
add_test(NAME examples_features_table
         COMMAND sh ${CMAKE_CURRENT_LIST_DIR}/check_readme_table.sh $<TARGET_FILE:hp>
                 ${CMAKE_SOURCE_DIR}/examples/README.md features --features-markdown)
add_test(NAME docs_true COMMAND python3 ${CMAKE_CURRENT_LIST_DIR}/check_docs_true.py $<TARGET_FILE:hp> ${CMAKE_SOURCE_DIR})
set_tests_properties(examples_features_table docs_true PROPERTIES LABELS L0 TIMEOUT 60)

# docs/flags.md is every command's --help as the flag table prints it: the reference and hp
# cannot drift (scripts/regen_tables.sh rewrites it)
add_test(NAME flags_doc
         COMMAND sh -c "sh '${CMAKE_SOURCE_DIR}/scripts/flags_doc.sh' '$<TARGET_FILE:hp>' | diff -u '${CMAKE_SOURCE_DIR}/docs/flags.md' - && echo 'PASS: docs/flags.md is hp --help' || { echo 'FAIL: docs/flags.md drifted from hp --help (run scripts/regen_tables.sh)'; exit 1; }")
set_tests_properties(flags_doc PROPERTIES LABELS L0 TIMEOUT 60)
