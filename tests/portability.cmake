# portability.cmake - what holds on any x86-64 CPU, asked of the machine (and run again under the
# CPU profiles of scripts/cpu_profiles.sh, which cap hp, oneDNN and OpenBLAS at a narrower level):
# every command and flag of `hp --help` ends with exit 0, 1 or 2 and a line, never on a signal
# (bf16 and oneDNN among the values); HP_CPU_ISA caps hp's answers and a bad cap is refused.
add_test(NAME every_flag_exits_cleanly
         COMMAND ${Python3_EXECUTABLE} ${CMAKE_SOURCE_DIR}/tests/check_every_flag.py $<TARGET_FILE:hp>)
set_tests_properties(every_flag_exits_cleanly PROPERTIES LABELS L0 TIMEOUT 600)

# HP_CPU_ISA: a bad value is one line and exit 2 before any work; a cap is named by hp --version
add_test(NAME cpu_isa_bad_value
         COMMAND sh ${CMAKE_CURRENT_LIST_DIR}/expect_exit.sh 2
                 "HP_CPU_ISA=avx3: the cap must be one of sse4_1, avx, avx2, avx512, avx512_bf16, amx"
                 -- $<TARGET_FILE:hp> run --steps 1)
set_tests_properties(cpu_isa_bad_value PROPERTIES LABELS L0 TIMEOUT 30 ENVIRONMENT "HP_CPU_ISA=avx3")
add_test(NAME cpu_isa_cap
         COMMAND sh ${CMAKE_SOURCE_DIR}/tests/run_cpu_isa_cap.sh $<TARGET_FILE:hp>)
set_tests_properties(cpu_isa_cap PROPERTIES LABELS L0 TIMEOUT 120)
