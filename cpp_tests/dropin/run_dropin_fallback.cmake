# The drop-in's fallback, where the caller's symbols do not tell its std::string layout
# (fallback.c). Run with cmake -P:
#
#   cmake -DWITH_LEVELDB=exe -DWITHOUT_LEVELDB=exe -DDROPIN_SO=path -DWORK_DIR=dir
#         [-DPRELOAD_FIRST=lib] [-DLAUNCHER=cmd|arg|...] -P run_dropin_fallback.cmake
#
# Both programs run with the drop-in preloaded and a statistics file. WITH_LEVELDB (linked
# with libleveldb) must get its policy object from libleveldb; WITHOUT_LEVELDB must get NULL.
# Each time: one line on standard error saying the drop-in cannot tell, and a statistics
# file with served=no, fallbacks=1 and the reason.

cmake_minimum_required(VERSION 3.16)
include("${CMAKE_CURRENT_LIST_DIR}/script_arguments.cmake")
dropin_script_arguments(run_dropin_fallback.cmake WITH_LEVELDB WITHOUT_LEVELDB DROPIN_SO WORK_DIR)
file(REMOVE_RECURSE "${WORK_DIR}")
file(MAKE_DIRECTORY "${WORK_DIR}")

foreach(case with without)
  if(case STREQUAL "with")
    set(exe "${WITH_LEVELDB}")
    set(expected "^policy_from=[^\n]*libleveldb[.]so")
    set(outcome "keeps its own Bloom policy")
  else()
    set(exe "${WITHOUT_LEVELDB}")
    set(expected "^policy=null\n$")
    set(outcome "no filters")
  endif()
  set(stats "${WORK_DIR}/stats-${case}")
  execute_process(
    COMMAND ${CMAKE_COMMAND} -E env "LD_PRELOAD=${preload}" "LEVELDB_BLOOM_STATS_FILE=${stats}"
            ${launcher} "${exe}"
    RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  string(REGEX MATCHALL "leveldb-bloom: cannot tell which std::string" said "${err}")
  list(LENGTH said times)
  if(NOT rc EQUAL 0 OR NOT out MATCHES "${expected}" OR NOT times EQUAL 1
     OR NOT err MATCHES "${outcome}")
    message(FATAL_ERROR "${case} LevelDB: exit ${rc}, output '${out}', standard error '${err}'")
  endif()
  file(READ "${stats}" text)
  if(NOT text MATCHES "served=no\n" OR NOT text MATCHES "\ndropin_policies=0\n"
     OR NOT text MATCHES "\nfallbacks=1\n" OR NOT text MATCHES "\nfallback=cannot tell[^\n]*${outcome}")
    message(FATAL_ERROR "${case} LevelDB: statistics file:\n${text}")
  endif()
  string(STRIP "${out}" out)
  message("${case} LevelDB: ${out}; said once: ${err}")
endforeach()
