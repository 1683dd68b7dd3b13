# cmake -DHEADWAY=path/to/headway -DGGUF=model.gguf -DCACHE=cache.bin -P prompt_cache.cmake
# `headway generate --prompt-cache`: the first run saves the prompt's state, the second restores
# all of it and prints the same greedy text with no heap call; a longer prompt reuses the cached
# prefix; a prompt it does not begin and another plan's KV dtype or kv_rotation leave it unused,
# saying why.
file(REMOVE "${CACHE}")
function(run_generate name expect_err)
  execute_process(COMMAND ${HEADWAY} generate --gguf ${GGUF} --temp 0 --tokens 16 --json --prompt-cache ${CACHE}
                          ${ARGN}
                  RESULT_VARIABLE code OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT code EQUAL 0)
    message(FATAL_ERROR "${name}: exit ${code}\n${out}${err}")
  endif()
  if(NOT err MATCHES "${expect_err}")
    message(FATAL_ERROR "${name}: stderr does not match '${expect_err}'\n${err}")
  endif()
  set(${name}_out "${out}" PARENT_SCOPE)
  message(STATUS "${name}: ${err}")
endfunction()

set(chat --chat --prompt "What is the capital of France?")
run_generate(first "headway generate: 0 of [0-9]+ prompt tokens from --prompt-cache" ${chat})
string(JSON n_prompt LENGTH "${first_out}" prompt_ids)
run_generate(second "headway generate: ${n_prompt} of ${n_prompt} prompt tokens from --prompt-cache" ${chat})
string(JSON text1 GET "${first_out}" text)
string(JSON text2 GET "${second_out}" text)
string(JSON heap2 GET "${second_out}" heap_allocations)
if(NOT text1 STREQUAL text2 OR NOT heap2 EQUAL 0)
  message(FATAL_ERROR "the cached run printed '${text2}' with ${heap2} heap calls; the first '${text1}'")
endif()
if(NOT text1 MATCHES "Paris")
  message(FATAL_ERROR "the greedy answer is '${text1}'")
endif()

# The chat prompt's ids and two more: the cached prefix and 2 tokens prefilled.
string(JSON ids GET "${first_out}" prompt_ids)
string(REGEX REPLACE "[][ \t\r\n]" "" ids "${ids}")
math(EXPR n_longer "${n_prompt} + 2")
run_generate(longer "headway generate: ${n_prompt} of ${n_longer} prompt tokens from --prompt-cache"
             --prompt-ids "${ids},504,314")
run_generate(other_prompt "not used: .*: its ${n_longer} tokens do not begin this prompt's 3.*0 of 3 prompt tokens"
             --prompt-ids 1,2,3)
run_generate(other_plan "not used: .*: state: kv_dtype f16, this plan's q8_0.*0 of 3 prompt tokens"
             --prompt-ids 1,2,3 --kv-dtype q8_0)

# A Hadamard-rotated q8_0 cache: its state restores whole into the same plan (the same text, no
# heap call) and is refused by a plan without the rotation, whose rows it would misread.
file(REMOVE "${CACHE}")
set(rotated ${chat} --kv-dtype q8_0 --kv-rotate)
run_generate(rot_first "headway generate: 0 of ${n_prompt} prompt tokens from --prompt-cache" ${rotated})
run_generate(rot_second "headway generate: ${n_prompt} of ${n_prompt} prompt tokens from --prompt-cache" ${rotated})
string(JSON rtext1 GET "${rot_first_out}" text)
string(JSON rtext2 GET "${rot_second_out}" text)
string(JSON rheap2 GET "${rot_second_out}" heap_allocations)
if(NOT rtext1 STREQUAL rtext2 OR NOT rheap2 EQUAL 0)
  message(FATAL_ERROR "the cached rotated run printed '${rtext2}' with ${rheap2} heap calls; the first '${rtext1}'")
endif()
run_generate(rot_other_plan "not used: .*: state: kv_rotation hadamard, this plan's none.*0 of ${n_prompt} prompt tokens"
             ${chat} --kv-dtype q8_0)
file(REMOVE "${CACHE}")
