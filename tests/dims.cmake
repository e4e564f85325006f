# dims.cmake - parallel degrees, their validation and the device mesh (all L0, no MPI), plus
# the `hp` command line: `hp plan` prints the worked tables of torchtitan-semantics.md §2, every
# dims negative case of recipes.md exits 2 with one line naming the rule and the numbers.
add_executable(test_mesh ${CMAKE_CURRENT_LIST_DIR}/test_mesh.c)
target_link_libraries(test_mesh PRIVATE hyperpar)
add_test(NAME dims_mesh COMMAND test_mesh)
add_executable(test_dims ${CMAKE_CURRENT_LIST_DIR}/test_dims.c)
target_link_libraries(test_dims PRIVATE hyperpar)
add_test(NAME dims_validate COMMAND test_dims)
set_tests_properties(dims_mesh dims_validate PROPERTIES LABELS L0 TIMEOUT 60)

# hp_cli_test(NAME CODE ERR_PATTERN [OUT_PATTERN ...] -- HP_ARGS ...)
# Runs `hp HP_ARGS` through tests/expect_exit.sh (see there: '-' = any stderr, F:text = fixed
# string). Non-zero CODE also demands exactly one line on stderr.
set(HP_EXPECT_EXIT ${CMAKE_CURRENT_LIST_DIR}/expect_exit.sh)
function(hp_cli_test name code err)
  set(args)
  foreach(a ${ARGN})
    if(a STREQUAL "--")
      list(APPEND args -- $<TARGET_FILE:hp>)
    else()
      list(APPEND args "${a}")
    endif()
  endforeach()
  add_test(NAME ${name} COMMAND sh ${HP_EXPECT_EXIT} ${code} "${err}" ${args})
  set(one_line 0)
  if(NOT code EQUAL 0)
    set(one_line 1)
  endif()
  set_tests_properties(${name} PROPERTIES LABELS L0 TIMEOUT 30 ENVIRONMENT "HP_EXPECT_ONE_LINE=${one_line}")
endfunction()

# §2.1 worked example (dense): W=8, (R,S,C,T) = (1,2,2,2)
hp_cli_test(cli_plan_worked_dense 0 -
  "world 8"
  "F:hp run --nproc 8 --tp 2 --cp 2 --dp-shard 2"
  "F:{0,1} {2,3} {4,5} {6,7}"
  "^ +cp +4 x 2 +[{]0,2[}] [{]1,3[}] [{]4,6[}] [{]5,7[}]$"
  "^ +dp_shard +4 x 2 +[{]0,4[}] [{]1,5[}] [{]2,6[}] [{]3,7[}]$"
  "^ +tp +4 x 2 +[{]0,1[}] [{]2,3[}] [{]4,5[}] [{]6,7[}]$"
  "^ +fsdp +2 x 4 +[{]0,2,4,6[}] [{]1,3,5,7[}]$"
  "^ +loss +2 x 4 +[{]0,2,4,6[}] [{]1,3,5,7[}]$"
  "^ +pp +8 x 1 +[(]size 1[)]"
  "^ +6 +0 +0 +1 +0 +1 +0 +3 +1 +3 "
  "tok_embeddings[.]weight"
  -- plan --tp 2 --cp 2 --dp-shard 2)
# §2.2 rows 1 and 2 (MoE on the same 8 ranks)
hp_cli_test(cli_plan_worked_moe_etp1 0 -
  "^ +ep +2 x 4 +[{]0,1,2,3[}] [{]4,5,6,7[}]$"
  "^ +efsdp +4 x 2 +[{]0,4[}] [{]1,5[}] [{]2,6[}] [{]3,7[}]$"
  "sparse +\\[pp, dp_replicate, efsdp, ep, etp\\] += \\[1, 1, 2, 4, 1\\]"
  "layers[.]0[.]moe[.]experts"
  -- plan --model tiny-moe --tp 2 --cp 2 --dp-shard 2 --ep 4 --etp 1 --rank 5 --params all)
# by default the blocks' parameters read one row per kind, with the layers it stands for
hp_cli_test(cli_plan_params_kinds 0 -
  "^  layers[.][*][.]moe[.]experts[.]w1 x2 .* layers 0[.][.]1$"
  "^  tok_embeddings[.]weight "
  -- plan --model tiny-moe --tp 2 --cp 2 --dp-shard 2 --ep 4 --etp 1 --rank 5)
# a plan at 16k ranks reads in one screen: under 150 lines, the pp stages' layers apart
add_test(NAME cli_plan_405b_one_screen
         COMMAND sh -c "out=$(\"$0\" plan --model llama3-405b --pp 16 --tp 8 --dp-shard 128 --seq-len 8192 --batch 2048 --memory) || exit 1; n=$(printf '%s\\n' \"$out\" | wc -l); echo \"$n lines\"; [ \"$n\" -lt 150 ] && printf '%s\\n' \"$out\" | grep -Eq '^  layers[.][*][.]attention[.]wq[.]weight x118 .* layers 8[.][.]125$'"
                 $<TARGET_FILE:hp>)
set_tests_properties(cli_plan_405b_one_screen PROPERTIES LABELS L0 TIMEOUT 30)
hp_cli_test(cli_plan_worked_moe_etp2 0 -
  "^ +ep +2 x 4 +[{]0,2,4,6[}] [{]1,3,5,7[}]$"
  "^ +etp +4 x 2 +[{]0,1[}] [{]2,3[}] [{]4,5[}] [{]6,7[}]$"
  "^ +efsdp +8 x 1 +[(]size 1[)]"
  "^ +ep_etp +1 x 8 +[{]0,1,2,3,4,5,6,7[}]$"
  -- plan --model tiny-moe --tp 2 --cp 2 --dp-shard 2 --ep 4 --etp 2)
hp_cli_test(cli_plan_infer 0 - "F:dp_shard 4" "world 8" -- plan --tp 2 --nproc 8)
hp_cli_test(cli_plan_help 0 - "^usage: hp plan" "--dp-shard" -- plan --help)
hp_cli_test(cli_help 0 - "^usage: hp <command>" "plan" -- --help)
hp_cli_test(cli_version 0 - "^hp [(]hyperpar[)] [0-9]" -- --version)

# recipes.md negative cases that concern the degrees: exit 2, one line, rule + numbers
hp_cli_test(cli_neg_world 2 "F:world size: dp_replicate(1)*dp_shard(2)*cp(2)*tp(2)*pp(1) = 8 != 6 ranks launched"
  -- plan --nproc 6 --tp 2 --cp 2 --dp-shard 2)
hp_cli_test(cli_neg_degree 2 "F:degree must be >= 1 (except dp_shard): tp = 0" -- plan --tp 0)
hp_cli_test(cli_neg_degree_cp 2 "F:degree must be >= 1 (except dp_shard): cp = -1" -- plan --cp -1)
hp_cli_test(cli_neg_dp_shard0 2 "F:dp_shard must be -1 (infer) or >= 1: dp_shard = 0" -- plan --dp-shard 0)
hp_cli_test(cli_neg_dp_shard_m2 2 "F:dp_shard must be -1 (infer) or >= 1: dp_shard = -2" -- plan --dp-shard=-2)
hp_cli_test(cli_neg_pp 2 "F:pipeline: n_layers (2) must be >= pp*pp_virtual = 4*1 = 4 stages" -- plan --pp 4)
hp_cli_test(cli_neg_infer 2 "F:dp_shard inference: world size 6 is not a multiple of dp_replicate*cp*tp*pp = 1*1*4*1 = 4"
  -- plan --tp 4 --nproc 6)
hp_cli_test(cli_neg_etp_no_ep 2 "F:etp (2) > 1 needs ep > 1: ep = 1" -- plan --model tiny-moe --tp 2 --dp-shard 2 --etp 2)
hp_cli_test(cli_neg_etp_not_tp 2 "F:etp must be 1 or tp when ep > 1: etp = 4, tp = 2"
  -- plan --model tiny-moe --tp 2 --dp-shard 4 --ep 2 --etp 4)
hp_cli_test(cli_neg_ep_sct 2 "F:ep (4) must divide dp_shard*cp*tp = 2*1*1 = 2" -- plan --model tiny-moe --dp-shard 2 --ep 4)
hp_cli_test(cli_neg_ep_sc 2 "F:ep (4) must divide dp_shard*cp = 2*1 = 2 when etp = tp (2)"
  -- plan --model tiny-moe --dp-shard 2 --tp 2 --ep 4 --etp 2)
hp_cli_test(cli_neg_experts 2 "F:ep (3) must divide num_experts (8)" -- plan --model tiny-moe --dp-shard 3 --ep 3 --batch 9)
hp_cli_test(cli_neg_ep_dense 2 "F:ep (2) > 1 needs a MoE model: 'tiny' is dense (num_experts = 0)" -- plan --dp-shard 2 --ep 2)
hp_cli_test(cli_neg_heads 2 "F:tp (3) must divide n_heads (8)" -- plan --tp 3)
hp_cli_test(cli_neg_kv_heads 2 "F:tp (8) must divide n_kv_heads (4)" -- plan --tp 8)
hp_cli_test(cli_neg_seq_cp 2 "F:context parallel: 2*cp*tp = 2*2*2 = 8 must divide seq_len (30)" -- plan --cp 2 --tp 2 --seq-len 30)
hp_cli_test(cli_neg_seq_sp 2 "F:sequence parallel: tp (2) must divide seq_len (33)" -- plan --tp 2 --seq-len 33)
hp_cli_test(cli_neg_batch 2 "F:dp_replicate*dp_shard = 1*3 = 3 must divide the global batch (8)" -- plan --dp-shard 3)
hp_cli_test(cli_neg_token_split 2 "F:expert dispatch over tp: tp (2) must divide the tokens of one rank"
  -- plan --model tiny-moe --dp-shard 2 --tp 2 --ep 4 --no-sp --seq-len 31 --batch 2)
hp_cli_test(cli_neg_rank 2 "F:--rank (8) must be in [0, 8)" -- plan --tp 2 --cp 2 --dp-shard 2 --rank 8)
# the command line itself
hp_cli_test(cli_unknown_flag 2 "F:hp: unknown flag '--foo' (see hp plan --help)" -- plan --foo 1)
hp_cli_test(cli_flag_prefix 2 "F:hp: unknown flag '--t' (see hp plan --help)" -- plan --t 2)
hp_cli_test(cli_bad_int 2 "F:hp: --tp expects an integer, got 'x'" -- plan --tp x)
hp_cli_test(cli_bad_int_tail 2 "F:hp: --dp-shard expects an integer, got '2x'" -- plan --dp-shard 2x)
hp_cli_test(cli_bad_float 2 "F:hp: --lr expects a number, got 'fast'" -- plan --lr fast)
hp_cli_test(cli_missing_value 2 "F:hp: --tp expects a value" -- plan --tp)
hp_cli_test(cli_bad_model 2 "F:hp: --model: unknown model 'huge' (known: tiny, tiny-moe" -- plan --model huge)
hp_cli_test(cli_bad_choice 2 "F:hp: --optimizer expects sgd or adamw, got 'lion'" -- plan --optimizer lion)
hp_cli_test(cli_bad_dispatcher 2 "F:hp: --dispatcher expects alltoall or allgather, got 'deepep'" -- plan --dispatcher deepep)
hp_cli_test(cli_positional 2 "F:hp: plan takes no positional arguments, got 'extra'" -- plan extra)
hp_cli_test(cli_unknown_cmd 2 "F:hp: unknown command 'train'" -- train)
hp_cli_test(cli_no_cmd 2 "^usage: hp" --)
set_tests_properties(cli_no_cmd PROPERTIES ENVIRONMENT "HP_EXPECT_ONE_LINE=0")

# the launcher: `hp run --nproc N` outside mpirun re-executes itself under mpirun
add_executable(test_launch ${CMAKE_CURRENT_LIST_DIR}/test_launch.c ${HP_LAUNCH_SOURCES})
target_include_directories(test_launch PRIVATE ${CMAKE_CURRENT_LIST_DIR}/../tools/hp ${CMAKE_CURRENT_LIST_DIR}/../src)
target_link_libraries(test_launch PRIVATE hyperpar)
foreach(mode ok exit7)
  add_test(NAME launch_self_${mode} COMMAND test_launch ${mode})
  set_tests_properties(launch_self_${mode} PROPERTIES LABELS L0 TIMEOUT 60)
endforeach()
# the binding rule: ranks x BLAS threads <= cores -> bound, else oversubscribed (launch_cores.c)
add_test(NAME launch_binding_rule COMMAND test_launch bind)
set_tests_properties(launch_binding_rule PROPERTIES LABELS L0 TIMEOUT 30)
# the launcher's stderr filter on recorded Open MPI and MPICH output (tests/launch_filter/*.err):
# after hp's line the MPI_ABORT banner, ORTE_ERROR_LOG / show_help.c / "Data unpack" noise and
# MPICH's MPI_Abort echo are gone, a killed rank is its one signal line without "PID 0" (a real
# PID kept), the exit-code banners are dropped, and before the job ends error logs, an
# unannounced MPI_ABORT and a failed copy with errno 1 pass unchanged (news_ompi)
file(GLOB HP_LAUNCH_FILTER_SAMPLES CONFIGURE_DEPENDS ${CMAKE_CURRENT_LIST_DIR}/launch_filter/*.err)
foreach(sample ${HP_LAUNCH_FILTER_SAMPLES})
  get_filename_component(name ${sample} NAME_WE)
  string(REGEX REPLACE "[.]err$" ".want" want ${sample})
  add_test(NAME launch_filter_${name} COMMAND sh -c "\"$0\" filter <\"$1\" | diff -u \"$2\" - && echo PASS"
           $<TARGET_FILE:test_launch> ${sample} ${want})
  set_tests_properties(launch_filter_${name} PROPERTIES LABELS L0 TIMEOUT 30)
endforeach()
