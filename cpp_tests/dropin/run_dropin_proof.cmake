# Proves that an unmodified LevelDB program gets leveldb-bloom's policy from the drop-in,
# and that nothing it writes or reads changes. Run with cmake -P:
#
#   cmake -DPROGRAM=name -DSTOCK=exe -DDROPIN_SO=path -DWORK_DIR=dir [-DSHARED=exe]
#         [-DSTATIC=exe] [-DSTATIC_NO_U=exe -DSTATIC_NO_U_SERVED_BY=stock|dropin]
#         [-DCOMPACT=ON] [-DBLOOM_WRITER=text] [-DCOMPACT_WRITER=text] [-DSTATIC_WRITER=text]
#         [-DCOMPACT_BUILDS=bloom]
#         [-DPRELOAD_SERVES=OFF] [-DPRELOAD=OFF] [-DDECLINED=ON] [-DCROSS_READ=ON]
#         [-DPRELOAD_FIRST=lib] [-DLAUNCHER=cmd|arg|...] -P run_dropin_proof.cmake
#
# COMPACT adds an arrangement, preload_compact: STOCK preloaded with LEVELDB_BLOOM_FORMAT=compact
# (same output, its own tables). The statistics must say, for every LevelDB served, who wrote
# its filters: BLOOM_WRITER for Bloom filters preloaded or linked ahead, COMPACT_WRITER for
# compact ones, STATIC_WRITER for the static route (each by default "its C API writes": the
# LevelDB's own C wrapper; a LevelDB without one: "its own Bloom policy writes"), and the
# statistics' format must be the one asked for, or COMPACT_BUILDS where the LevelDB's own
# Bloom policy writes in compact's place. PRELOAD_SERVES=OFF is for a program with LevelDB compiled in, whose calls
# never leave the executable: preloaded, the drop-in must change nothing and its statistics
# file must say served=no. DECLINED=ON is for a LevelDB whose Bloom policy does not speak the
# format (a fork that gives LevelDB's name to another filter): every drop-in arrangement must
# say so once on standard error and in the statistics (served=declined and the reason), and
# the LevelDB's own policy writes and answers (tables byte-identical to stock in both formats).
# PRELOAD=OFF leaves out the preloaded arrangements (a statically linked program, which no
# preload reaches). CROSS_READ=ON (a program with --read: dropin_c_program) then has each
# database read by the others: stock's by the drop-in preloaded (each format), every drop-in
# arrangement's by stock; each read must print what stock's read of its own prints.
#
# PRELOAD_FIRST (sanitized builds: the ASan or TSan runtime) is preloaded ahead of DROPIN_SO;
# LAUNCHER (a '|'-separated command, e.g. valgrind and its options) runs the preloaded and
# the static arrangements (the shared drop-in in each format, and the static one).
#
# STOCK is the program linked with LevelDB alone; SHARED the same source linked against
# libleveldb_bloom_dropin.so ahead of libleveldb.so; STATIC linked against
# libleveldb_bloom_dropin.a ahead of libleveldb.a. The program (dropin_c_program or
# dropin_cxx_program) knows nothing of leveldb-bloom. Four arrangements (five with STATIC_NO_U)
# run, each on a new database and each with LEVELDB_BLOOM_STATS_FILE set:
#
#   stock     STOCK as it is                      -> must write NO statistics file
#   preload   STOCK with LD_PRELOAD=DROPIN_SO     -> statistics file expected
#   shared    SHARED (optional)                   -> statistics file expected
#   static    STATIC (optional)                   -> statistics file expected
#   static_no_u  (optional) STATIC_NO_U: linked like STATIC but without
#             -Wl,-u,_ZN7leveldb20NewBloomFilterPolicyEi and -Wl,-u,leveldb_filterpolicy_create
#             -> STATIC_NO_U_SERVED_BY says whose policy runs: "stock" (a C program:
#             nothing pulls the drop-in's archive member in, libleveldb.a's bloom.o serves
#             c.o's call) or "dropin" (a C++ program, whose own reference pulls it in, and
#             whose link leaves LevelDB's C API out: the drop-in writes the strings it proves
#             it may). This pins why dropin_static carries the first -u.
#
# The stock binary itself must not name any leveldb-bloom symbol (leveldb_bloom_... or the
# drop-in's entry points). Paths are not checked: a sanitized build embeds source paths, and
# a checkout directory may be called anything.
#
# Assertions for every drop-in arrangement:
#   - the program's output (counts and an FNV-1a digest of every key/value pair) equals the
#     stock run's, and every table file (*.ldb) is byte-identical to the stock run's, under
#     the same name. The workload is deterministic (no memtable fills up, so every table is
#     written by CompactRange in program order, never by a background compaction racing the
#     writes). Identical tables mean identical filter blocks: the drop-in's filters are
#     bit-identical to LevelDB's;
#   - the statistics prove the drop-in's policy built and answered those filters:
#       dropin_policies == bloom_policies_created (each NewBloomFilterPolicy call served);
#       filters_built > 0;
#       keys_added >= puts + deletes (every write lands in a memtable that is flushed into
#         a table, whose filter gets its key), and in fact keys_added == puts + deletes +
#         live_keys: the two memtable flushes plus the final compaction that rewrites the
#         live keys. Every key of every table ever written went through the drop-in;
#       no_match <= absent_lookups (a present key is never rejected, else the program
#         fails) and no_match * 10 >= absent_lookups * 9: after the final compaction all
#         tables sit in one level without overlap, so each absent lookup inside a table's
#         key range asks exactly one filter, which at 10 bits per key rejects about 99%;
#       queries >= present_lookups + no_match (each present lookup asks one filter too).

cmake_minimum_required(VERSION 3.16)
include("${CMAKE_CURRENT_LIST_DIR}/script_arguments.cmake")
dropin_script_arguments(run_dropin_proof.cmake PROGRAM STOCK DROPIN_SO WORK_DIR)
if(NOT DEFINED PRELOAD)
  set(PRELOAD ON)
endif()
set(arrangements stock)
if(PRELOAD)
  list(APPEND arrangements preload)
endif()
foreach(var SHARED STATIC)
  if(DEFINED ${var} AND NOT "${${var}}" STREQUAL "")
    string(TOLOWER "${var}" arrangement)
    list(APPEND arrangements ${arrangement})
  endif()
endforeach()
if(COMPACT AND PRELOAD)
  list(APPEND arrangements preload_compact)
endif()
if(NOT DEFINED PRELOAD_SERVES)
  set(PRELOAD_SERVES ON)
endif()
set(expected_served yes)
if(DECLINED)
  set(expected_served declined)
endif()
if(NOT DEFINED BLOOM_WRITER)
  set(BLOOM_WRITER "its C API writes")
endif()
if(NOT DEFINED COMPACT_WRITER)
  set(COMPACT_WRITER "its C API writes")
endif()
if(NOT DEFINED STATIC_WRITER)
  set(STATIC_WRITER "its C API writes")
endif()
if(NOT DEFINED COMPACT_BUILDS)
  set(COMPACT_BUILDS compact)
endif()
if(DEFINED STATIC_NO_U AND NOT "${STATIC_NO_U}" STREQUAL "")
  if(NOT STATIC_NO_U_SERVED_BY MATCHES "^(stock|dropin)$")
    message(FATAL_ERROR "run_dropin_proof.cmake: -DSTATIC_NO_U_SERVED_BY=stock|dropin is required")
  endif()
  list(APPEND arrangements static_no_u)
endif()

execute_process(COMMAND nm "${STOCK}" OUTPUT_VARIABLE stock_symbols ERROR_QUIET)
string(REGEX MATCHALL "[^\n]*leveldb_bloom[^\n]*" ours "${stock_symbols}")
if(ours)
  message(FATAL_ERROR "${PROGRAM}: the stock binary ${STOCK} names leveldb-bloom symbols: ${ours}")
endif()

set(failures 0)
macro(fail_check what)
  message(SEND_ERROR "${PROGRAM} [${arrangement}]: expected ${what}")
  math(EXPR failures "${failures} + 1")
endmacro()

# Parses "name=value" lines of `text` into variables ${prefix}_name.
function(parse_lines prefix text)
  string(REPLACE "\n" ";" lines "${text}")
  foreach(line IN LISTS lines)
    if(line MATCHES "^([a-z0-9_]+)=(.*)$")
      set(${prefix}_${CMAKE_MATCH_1} "${CMAKE_MATCH_2}" PARENT_SCOPE)
    endif()
  endforeach()
endfunction()


set(stock_output "")
set(stock_tables "")
foreach(arrangement IN LISTS arrangements)
  set(dir "${WORK_DIR}/${PROGRAM}_${arrangement}")
  file(REMOVE_RECURSE "${dir}")
  file(MAKE_DIRECTORY "${dir}")
  set(stats_file "${dir}/stats.txt")

  set(format bloom)
  if(arrangement STREQUAL "stock")
    set(exe "${STOCK}")
    set(env --unset=LD_PRELOAD)
  elseif(arrangement STREQUAL "preload")
    set(exe "${STOCK}")
    set(env "LD_PRELOAD=${preload}")
  elseif(arrangement STREQUAL "preload_compact")
    set(exe "${STOCK}")
    set(format compact)
    set(env "LD_PRELOAD=${preload}" LEVELDB_BLOOM_FORMAT=compact)
  elseif(arrangement STREQUAL "shared")
    set(exe "${SHARED}")
    set(env --unset=LD_PRELOAD)
  elseif(arrangement STREQUAL "static")
    set(exe "${STATIC}")
    set(env --unset=LD_PRELOAD)
  else()
    set(exe "${STATIC_NO_U}")
    set(env --unset=LD_PRELOAD)
  endif()

  # The launcher (valgrind) runs each build of the drop-in's code: the preloaded shared
  # library (each format) and the static one. The stock run holds none of it; the
  # linked-ahead run loads the very library the preload does, and the run without -u links
  # the same archive as the static one.
  set(run_launcher ${launcher})
  if(arrangement MATCHES "^(stock|shared|static_no_u)$")
    set(run_launcher "")
  endif()
  execute_process(
    COMMAND "${CMAKE_COMMAND}" -E env --unset=LEVELDB_BLOOM_FORMAT
            --unset=LEVELDB_BLOOM_BITS_PER_KEY ${env} "LEVELDB_BLOOM_STATS_FILE=${stats_file}"
            ${run_launcher} "${exe}" "${dir}/db"
    RESULT_VARIABLE rc
    OUTPUT_VARIABLE output
    ERROR_VARIABLE errors)
  if(NOT rc STREQUAL "0")
    message(FATAL_ERROR "${PROGRAM} [${arrangement}]: ${exe} failed (${rc}):\n${errors}")
  endif()
  string(REGEX MATCHALL "leveldb-bloom: declined the LevelDB" said_declined "${errors}")
  list(LENGTH said_declined times_declined)
  if(NOT arrangement STREQUAL "stock" AND DECLINED AND NOT times_declined EQUAL 1)
    fail_check("one line on standard error saying the LevelDB was declined, got:\n${errors}")
  endif()
  if((arrangement STREQUAL "stock" OR NOT DECLINED) AND NOT times_declined EQUAL 0)
    fail_check("no LevelDB declined, got:\n${errors}")
  endif()

  # The table files, by name, with their sizes.
  file(GLOB tables RELATIVE "${dir}/db" "${dir}/db/*.ldb")
  list(SORT tables)
  set(table_sizes "")
  foreach(t IN LISTS tables)
    file(SIZE "${dir}/db/${t}" size)
    list(APPEND table_sizes "${t}:${size}")
  endforeach()
  string(REPLACE ";" " " table_sizes "${table_sizes}")

  if(arrangement STREQUAL "stock")
    set(stock_output "${output}")
    set(stock_tables "${tables}")
    set(stock_dir "${dir}")
    parse_lines(out "${output}")
    foreach(f bloom_policies_created puts deletes live_keys present_lookups absent_lookups)
      if(NOT "${out_${f}}" MATCHES "^[0-9]+$")
        message(FATAL_ERROR "${PROGRAM} [stock]: output lacks ${f}=N:\n${output}")
      endif()
    endforeach()
    if("${tables}" STREQUAL "")
      fail_check("a table file")
    endif()
    if(EXISTS "${stats_file}")
      fail_check("no statistics file: the stock run must not load the drop-in")
    endif()
    string(STRIP "${output}" shown)
    string(REPLACE "\n" " " shown "${shown}")
    message(STATUS "${PROGRAM} [stock]: ${shown}")
    message(STATUS "${PROGRAM} [stock]: tables ${table_sizes}; no statistics file")
    continue()
  endif()

  if(NOT "${output}" STREQUAL "${stock_output}")
    fail_check("the stock run's output\n--- stock:\n${stock_output}--- ${arrangement}:\n${output}")
  endif()
  if(NOT "${tables}" STREQUAL "${stock_tables}")
    fail_check("the stock run's table files (${stock_tables}), got (${tables})")
  endif()
  set(identical 0)
  # Compact filters are other bytes by design: the same output is their proof.
  set(compared_tables "${tables}")
  if(format STREQUAL "compact" AND NOT DECLINED)
    set(compared_tables "")
  endif()
  foreach(t IN LISTS compared_tables)
    if(EXISTS "${stock_dir}/db/${t}")
      execute_process(COMMAND "${CMAKE_COMMAND}" -E compare_files
                              "${stock_dir}/db/${t}" "${dir}/db/${t}"
                      RESULT_VARIABLE differ)
      if(differ EQUAL 0)
        math(EXPR identical "${identical} + 1")
      else()
        fail_check("${t} byte-identical to the stock run's")
      endif()
    endif()
  endforeach()

  if(arrangement STREQUAL "static_no_u" AND STATIC_NO_U_SERVED_BY STREQUAL "stock")
    if(EXISTS "${stats_file}")
      fail_check("no statistics file: without -u the drop-in's archive member is not linked")
    endif()
    message(STATUS "${PROGRAM} [${arrangement}]: output identical; ${identical} tables "
                   "byte-identical; no statistics file: without -u stock LevelDB's policy ran")
    continue()
  endif()
  if(NOT EXISTS "${stats_file}")
    message(SEND_ERROR "${PROGRAM} [${arrangement}]: no statistics file: the drop-in was not used")
    math(EXPR failures "${failures} + 1")
    continue()
  endif()
  file(READ "${stats_file}" stats_text)
  foreach(f served format bits_per_key dropin_policies policies_served policies_declined
            policies_refused filters_built keys_added queries no_match)
    unset(st_${f})
  endforeach()
  parse_lines(st "${stats_text}")
  string(STRIP "${stats_text}" shown)
  string(REPLACE "\n" " " shown "${shown}")
  if(arrangement MATCHES "^preload" AND NOT PRELOAD_SERVES)
    # LevelDB compiled into the program: its call never reaches the drop-in.
    if(NOT "${st_served}" STREQUAL "no" OR NOT "${st_dropin_policies}" STREQUAL "0")
      fail_check("served=no and dropin_policies=0 in the statistics file:\n${stats_text}")
    endif()
    message(STATUS "${PROGRAM} [${arrangement}]: output identical; ${identical} tables "
                   "byte-identical; the statistics file says the drop-in did not serve: ${shown}")
    continue()
  endif()
  # The program's bits per key, in the arrangement's format (what a declined LevelDB's own
  # policy builds is not the drop-in's to say).
  set(built "${format}")
  if(format STREQUAL "compact" AND NOT DECLINED)
    set(built "${COMPACT_BUILDS}")
  endif()
  if(NOT "${st_format}" STREQUAL "${built}" OR NOT "${st_bits_per_key}" STREQUAL "program"
     OR NOT "${st_served}" STREQUAL "${expected_served}")
    message(FATAL_ERROR "${PROGRAM} [${arrangement}]: statistics file names format "
                        "'${st_format}', bits per key '${st_bits_per_key}', served "
                        "'${st_served}':\n${stats_text}")
  endif()
  if(DECLINED)
    if(NOT st_policies_declined EQUAL st_dropin_policies OR NOT st_filters_built EQUAL 0
       OR NOT st_queries EQUAL 0
       OR NOT stats_text MATCHES "\ndeclined=the LevelDB in [^\n]+\n")
      fail_check("every policy declined, with its reason, its own policy writing and answering:\n${stats_text}")
    endif()
  else()
    if(NOT "${st_policies_declined}" STREQUAL "0" OR NOT "${st_policies_refused}" STREQUAL "0")
      fail_check("no policy declined or refused:\n${stats_text}")
    endif()
    # Who wrote the filters of every LevelDB served.
    if(arrangement STREQUAL "static_no_u")
      # Neither -u: a C++ program's LevelDB without its C API.
      set(writer "the drop-in writes")
    elseif(arrangement STREQUAL "static")
      set(writer "${STATIC_WRITER}")
    elseif(format STREQUAL "compact")
      set(writer "${COMPACT_WRITER}")
    else()
      set(writer "${BLOOM_WRITER}")
    endif()
    string(REGEX REPLACE "([][+.*()^$?|\\])" "\\\\\\1" writer_pattern "${writer}")
    string(REGEX MATCHALL "\nleveldb=[^\n]+" served_lines "\n${stats_text}")
    string(REGEX MATCHALL "\nleveldb=[^\n]+: served, ${writer_pattern}[^\n]*" written_so
           "\n${stats_text}")
    list(LENGTH served_lines n_served)
    list(LENGTH written_so n_written)
    if(n_served EQUAL 0 OR NOT n_served EQUAL n_written)
      fail_check("every LevelDB served with \"${writer}\":\n${stats_text}")
    endif()
  endif()
  foreach(f dropin_policies policies_served filters_built keys_added queries no_match)
    if(NOT DEFINED st_${f} OR NOT "${st_${f}}" MATCHES "^[0-9]+$")
      message(FATAL_ERROR "${PROGRAM} [${arrangement}]: statistics file lacks ${f}:\n${stats_text}")
    endif()
  endforeach()

  math(EXPR written "${out_puts} + ${out_deletes}")
  math(EXPR written_and_live "${written} + ${out_live_keys}")
  math(EXPR answered "${out_present_lookups} + ${st_no_match}")
  math(EXPR no_match_x10 "${st_no_match} * 10")
  math(EXPR absent_x9 "${out_absent_lookups} * 9")
  if(NOT st_dropin_policies EQUAL out_bloom_policies_created)
    fail_check("dropin_policies (${st_dropin_policies}) == the program's NewBloomFilterPolicy calls (${out_bloom_policies_created})")
  endif()
  if(NOT DECLINED)
    if(NOT st_filters_built GREATER 0)
      fail_check("filters_built > 0")
    endif()
    if(st_keys_added LESS written)
      fail_check("keys_added (${st_keys_added}) >= puts + deletes (${written})")
    endif()
    if(NOT st_keys_added EQUAL written_and_live)
      fail_check("keys_added (${st_keys_added}) == puts + deletes + live_keys (${written_and_live})")
    endif()
    if(st_no_match GREATER out_absent_lookups)
      fail_check("no_match (${st_no_match}) <= absent_lookups (${out_absent_lookups})")
    endif()
    if(no_match_x10 LESS absent_x9)
      fail_check("no_match (${st_no_match}) >= 90% of absent_lookups (${out_absent_lookups})")
    endif()
    if(st_queries LESS answered)
      fail_check("queries (${st_queries}) >= present_lookups + no_match (${answered})")
    endif()
  endif()

  list(LENGTH compared_tables n_tables)
  set(tables_said "${identical}/${n_tables} tables byte-identical (${table_sizes})")
  if(format STREQUAL "compact" AND NOT DECLINED)
    set(tables_said "compact tables (${table_sizes})")
  endif()
  message(STATUS "${PROGRAM} [${arrangement}]: output identical; ${tables_said}; stats: ${shown}")
endforeach()

# Every database read by the others.
if(CROSS_READ)
  set(readers "stock|--unset=LD_PRELOAD")
  if(PRELOAD)
    list(APPEND readers "preload|LD_PRELOAD=${preload}"
                        "preload_compact|LD_PRELOAD=${preload}|LEVELDB_BLOOM_FORMAT=compact")
  endif()
  set(read_by_stock "")
  foreach(arrangement IN LISTS arrangements)
    foreach(reader IN LISTS readers)
      string(REPLACE "|" ";" reader "${reader}")
      list(POP_FRONT reader reader_name)
      if(reader_name STREQUAL arrangement AND NOT arrangement STREQUAL "stock")
        continue()
      endif()
      if(NOT arrangement STREQUAL "stock" AND NOT reader_name STREQUAL "stock")
        continue()
      endif()
      execute_process(
        COMMAND "${CMAKE_COMMAND}" -E env --unset=LEVELDB_BLOOM_FORMAT ${reader}
                "${STOCK}" --read "${WORK_DIR}/${PROGRAM}_${arrangement}/db"
        RESULT_VARIABLE rc OUTPUT_VARIABLE output ERROR_VARIABLE errors)
      if(arrangement STREQUAL "stock" AND reader_name STREQUAL "stock")
        set(read_by_stock "${output}")
      endif()
      if(NOT rc STREQUAL "0" OR NOT "${output}" STREQUAL "${read_by_stock}")
        fail_check("${arrangement}'s database read by ${reader_name} as stock reads its own "
                   "(exit ${rc}):\n${output}${errors}--- stock's own:\n${read_by_stock}")
      endif()
    endforeach()
  endforeach()
  message(STATUS "${PROGRAM}: every database read by the others: ${read_by_stock}")
endif()

if(failures GREATER 0)
  message(FATAL_ERROR "${PROGRAM}: ${failures} check(s) failed")
endif()
message(STATUS "${PROGRAM}: all arrangements agree with stock LevelDB")
