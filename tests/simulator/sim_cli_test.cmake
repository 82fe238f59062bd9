# cmake -P script run by ctest (shardplan_sim_cli): checks shardplan-sim end to end.
# Inputs: SIM (the binary), DATA (tests/simulator/data).
function(expect_contains haystack needle what)
  string(FIND "${haystack}" "${needle}" pos)
  if(pos EQUAL -1)
    message(FATAL_ERROR "${what}: expected to find '${needle}' in:\n${haystack}")
  endif()
endfunction()

# 1. evaluate on the example file: exit 0, JSON with the prediction.
execute_process(COMMAND ${SIM} evaluate --request ${DATA}/llama70b_16gpu.yaml
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "evaluate exited ${rc}: ${err}")
endif()
expect_contains("${out}" "\"outputTokensPerS\"" "evaluate")
expect_contains("${out}" "\"prediction\"" "evaluate")
expect_contains("${out}" "\"placement\"" "evaluate")
expect_contains("${out}" "\"name\": \"llama-3.1-70b\"" "evaluate")

# 2. megatron on the same file.
execute_process(COMMAND ${SIM} megatron --request ${DATA}/llama70b_16gpu.yaml
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "megatron exited ${rc}: ${err}")
endif()
expect_contains("${out}" "\"outputTokensPerS\"" "megatron")

# 3. stdin ("-") gives the same answer as the file.
execute_process(COMMAND ${SIM} evaluate --request -
                INPUT_FILE ${DATA}/llama70b_16gpu.yaml
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "evaluate from stdin exited ${rc}: ${err}")
endif()
expect_contains("${out}" "\"outputTokensPerS\"" "evaluate from stdin")

# 3b. a workload with a request rate gets the open-loop prediction, as from
# EvaluatePlan: the published MLPerf Llama-3.1-8B run on one H100 at 39.64
# requests/s, which the model says this plan does not carry within the SLOs.
execute_process(COMMAND ${SIM} evaluate
                        --request ${DATA}/published/mlperf_llama3_1_8b_vllm.yaml
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "evaluate at a request rate exited ${rc}: ${err}")
endif()
expect_contains("${out}" "\"maxRequestRate\"" "evaluate at a request rate")
expect_contains("${out}" "workload.request_rate 39.64 requests/s exceeds"
                "evaluate at a request rate")

# 4. a bad file exits 2 and names the field and the value.
execute_process(COMMAND ${SIM} evaluate --request ${DATA}/bad_tp.yaml
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 2)
  message(FATAL_ERROR "bad request: expected exit 2, got ${rc} (stderr: ${err})")
endif()
expect_contains("${err}" "plan.operator_sharding[0].dim" "bad request")
expect_contains("${err}" "diagonal" "bad request")

# 5. a missing file and a usage error exit 2 too; --version works.
execute_process(COMMAND ${SIM} evaluate --request ${DATA}/does-not-exist.yaml
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 2)
  message(FATAL_ERROR "missing file: expected exit 2, got ${rc}")
endif()
execute_process(COMMAND ${SIM} evaluate RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 2)
  message(FATAL_ERROR "missing --request: expected exit 2, got ${rc}")
endif()
execute_process(COMMAND ${SIM} --version RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "--version exited ${rc}")
endif()
expect_contains("${out}${err}" "shardplan-sim" "--version")
