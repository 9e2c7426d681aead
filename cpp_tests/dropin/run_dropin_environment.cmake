# The drop-in in a hostile environment: nothing it meets may end the program it serves or
# write where it must not. Run with cmake -P:
#
#   cmake -DPROGRAM=exe -DDROPIN_SO=path -DWORK_DIR=dir [-DSETUID_PROGRAM=exe]
#         [-DPRELOAD_FIRST=lib] [-DLAUNCHER=cmd|arg|...] -P run_dropin_environment.cmake
#
# PROGRAM is the stock C program (dropin_c_stock), run with LD_PRELOAD=DROPIN_SO:
#   - standard error closed, and every variable invalid (which makes the drop-in warn): the
#     program still runs to its end, exit status 0;
#   - LEVELDB_BLOOM_BITS_PER_KEY=2147483647 (a typo that would make gigabyte filters): one
#     warning, and the program's own bits per key;
#   - LEVELDB_BLOOM_STATS_FILE naming a symlink: the file it points to is not written.
# SETUID_PROGRAM (dropin_c_shared, linked with the drop-in) is copied to a scratch directory
# of /tmp, made set-user-ID root and run as nobody: it must not write LEVELDB_BLOOM_STATS_FILE. That needs root: without it
# the script exits 77, which ctest reports as a skipped test.

cmake_minimum_required(VERSION 3.16)
include("${CMAKE_CURRENT_LIST_DIR}/script_arguments.cmake")
include("${CMAKE_CURRENT_LIST_DIR}/../support/run_checked.cmake")
dropin_script_arguments(run_dropin_environment.cmake PROGRAM DROPIN_SO WORK_DIR)
file(REMOVE_RECURSE "${WORK_DIR}")
file(MAKE_DIRECTORY "${WORK_DIR}")

if(DEFINED SETUID_PROGRAM AND NOT "${SETUID_PROGRAM}" STREQUAL "")
  execute_process(COMMAND id -u OUTPUT_VARIABLE uid OUTPUT_STRIP_TRAILING_WHITESPACE)
  if(NOT uid STREQUAL "0")
    message("set-user-ID check skipped: it needs root")
    cmake_language(EXIT 77)
  endif()
  # The copy, owned by root and set-user-ID, and its database, in a scratch directory of
  # /tmp that nobody can reach: the build tree may sit in a directory only root can enter
  # (mode 0700, as root's home is), and LevelDB checks a database's files with access(),
  # which uses the real user, nobody.
  execute_process(COMMAND mktemp -d /tmp/leveldb-bloom-setuid.XXXXXX
                  OUTPUT_VARIABLE dir OUTPUT_STRIP_TRAILING_WHITESPACE RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "mktemp -d /tmp/leveldb-bloom-setuid.XXXXXX failed")
  endif()
  file(MAKE_DIRECTORY "${dir}/db")
  file(COPY "${SETUID_PROGRAM}" DESTINATION "${dir}")
  get_filename_component(name "${SETUID_PROGRAM}" NAME)
  execute_process(COMMAND chmod 4755 "${dir}/${name}")
  execute_process(COMMAND chmod 0777 "${dir}" "${dir}/db")
  execute_process(
    COMMAND ${CMAKE_COMMAND} -E env "LEVELDB_BLOOM_STATS_FILE=${dir}/stats"
            setpriv --reuid=nobody --regid=nogroup --clear-groups "${dir}/${name}" "${dir}/db/x"
    RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  set(wrote_stats FALSE)
  if(EXISTS "${dir}/stats")
    set(wrote_stats TRUE)
  endif()
  file(REMOVE_RECURSE "${dir}")
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "set-user-ID program failed (${rc}): ${out}${err}")
  endif()
  if(wrote_stats)
    message(FATAL_ERROR "a set-user-ID program wrote LEVELDB_BLOOM_STATS_FILE")
  endif()
  message("set-user-ID program: ran, wrote no statistics file")
  return()
endif()

# 1. Closed standard error and invalid values everywhere.
run_checked("with standard error closed the program" out err
  ${CMAKE_COMMAND} -E env "LD_PRELOAD=${preload}" LEVELDB_BLOOM_FORMAT=bogus
  LEVELDB_BLOOM_BITS_PER_KEY=ten LEVELDB_BLOOM_SIMD=bogus
  "LEVELDB_BLOOM_STATS_FILE=${WORK_DIR}/stats-closed"
  sh -c "exec \"$@\" 2>&-" sh ${launcher} "${PROGRAM}" "${WORK_DIR}/closed")
if(NOT EXISTS "${WORK_DIR}/stats-closed")
  message(FATAL_ERROR "with standard error closed the drop-in did not serve the program")
endif()
message("closed standard error: the program ran to its end")

# 2. Bits per key that could only be a mistake.
run_checked("huge bits per key: the program" out err
  ${CMAKE_COMMAND} -E env "LD_PRELOAD=${preload}" LEVELDB_BLOOM_BITS_PER_KEY=2147483647
  "LEVELDB_BLOOM_STATS_FILE=${WORK_DIR}/stats-huge"
  ${launcher} "${PROGRAM}" "${WORK_DIR}/huge")
string(REGEX MATCHALL "LEVELDB_BLOOM_BITS_PER_KEY" said "${err}")
list(LENGTH said times)
file(READ "${WORK_DIR}/stats-huge" stats)
if(NOT times EQUAL 1 OR NOT stats MATCHES "bits_per_key=program")
  message(FATAL_ERROR "huge bits per key: expected one warning and the program's bits per key;"
                      " stderr: ${err}; statistics: ${stats}")
endif()
message("2147483647 bits per key: one warning, the program's bits per key")

# 3. The statistics file a symlink: its target is left alone.
file(WRITE "${WORK_DIR}/target" "untouched\n")
file(CREATE_LINK "${WORK_DIR}/target" "${WORK_DIR}/stats-link" SYMBOLIC)
execute_process(
  COMMAND ${CMAKE_COMMAND} -E env "LD_PRELOAD=${preload}"
          "LEVELDB_BLOOM_STATS_FILE=${WORK_DIR}/stats-link"
          ${launcher} "${PROGRAM}" "${WORK_DIR}/link"
  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
file(READ "${WORK_DIR}/target" target)
if(NOT rc EQUAL 0 OR NOT target STREQUAL "untouched\n")
  message(FATAL_ERROR "statistics file through a symlink: exit ${rc}, target now: ${target}")
endif()
message("a symlinked statistics file: not followed")
