# What the drop-in's test scripts (run_dropin_*.cmake) share: their required -D arguments,
# and from DROPIN_SO, PRELOAD_FIRST (a sanitizer runtime preloaded ahead of the drop-in) and
# LAUNCHER (a '|'-separated command such as valgrind and its options) the variables `preload`
# (an LD_PRELOAD value) and `launcher` (a list).
#
#   include(script_arguments.cmake)
#   dropin_script_arguments(run_dropin_x.cmake PROGRAM DROPIN_SO WORK_DIR)

macro(dropin_script_arguments script)
  foreach(_var ${ARGN})
    if(NOT DEFINED ${_var} OR "${${_var}}" STREQUAL "")
      message(FATAL_ERROR "${script}: -D${_var}=... is required")
    endif()
  endforeach()
  set(launcher "")
  if(DEFINED LAUNCHER AND NOT "${LAUNCHER}" STREQUAL "")
    string(REPLACE "|" ";" launcher "${LAUNCHER}")
  endif()
  set(preload "${DROPIN_SO}")
  if(DEFINED PRELOAD_FIRST AND NOT "${PRELOAD_FIRST}" STREQUAL "")
    set(preload "${PRELOAD_FIRST}:${DROPIN_SO}")
  endif()
endmacro()
