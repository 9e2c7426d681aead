# For the test scripts run with cmake -P: a command that must succeed, its output and errors
# kept for the checks that follow.
#
#   include(.../support/run_checked.cmake)
#   run_checked("what failed, in words" out_var err_var command args...)

function(run_checked what out_var err_var)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "${what} failed (${rc}): ${out}${err}")
  endif()
  set(${out_var} "${out}" PARENT_SCOPE)
  set(${err_var} "${err}" PARENT_SCOPE)
endfunction()
