# Writes a man page (section 1, gzip-compressed) from a program's own --help,
# so that the page and the help never disagree: there is no second text to
# keep in step. Run as a script (cmake/ManPages.cmake does, at build time):
#
#   cmake -DPROGRAM=path/to/payretry -DNAME=payretry -DSUMMARY="..." -DVERSION=0.1.0
#         [-DSEE_ALSO=payretry-sim] [-DSUBCOMMANDS=ON] -DOUTPUT=man/payretry.1.gz
#         -P cmake/help_to_man.cmake
#
# The help's layout is the one payretry's programs use: a "usage:" paragraph
# (the SYNOPSIS), prose paragraphs (filled, so that man reflows them), indented
# blocks such as option tables and examples (kept line for line), and
# "Heading:" lines alone above an indented block (a section of their own).
# With SUBCOMMANDS=ON, every command listed under "Commands:" gets its own
# `PROGRAM COMMAND --help` in a COMMAND DETAILS section, without the
# paragraphs that the main help already holds (the config and exit codes).
cmake_minimum_required(VERSION 3.22)

foreach(required PROGRAM NAME SUMMARY VERSION OUTPUT)
  if(NOT DEFINED ${required})
    message(FATAL_ERROR "help_to_man.cmake: -D${required}=... is required")
  endif()
endforeach()

# CMake lists split on ';', group on '[' ']' and escape with '\', all of which
# help text has ("[options]", "1d; the unit", "METHOD \n TARGET"): they travel
# as control characters while the text is cut into paragraphs and lines, and
# come back when the page is written. Another one marks paragraph breaks.
string(ASCII 1 semicolon_mark)
string(ASCII 2 open_mark)
string(ASCII 3 close_mark)
string(ASCII 4 backslash_mark)
string(ASCII 5 paragraph_mark)

# A sanitizer build (PAYRETRY_SANITIZE) runs its programs here too: a leak is
# for the tests to report (ctest runs the CLI with detect_leaks=1), not a
# reason to fail the build at its man page.
set(ENV{ASAN_OPTIONS} "detect_leaks=0")

# help_text(<out> <args>...): PROGRAM <args> --help, exit code 0, as one string.
function(help_text out)
  execute_process(COMMAND ${PROGRAM} ${ARGN} --help
    OUTPUT_VARIABLE text ERROR_VARIABLE err RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0 OR text STREQUAL "")
    string(JOIN " " shown ${ARGN})
    message(FATAL_ERROR "help_to_man.cmake: `${PROGRAM} ${shown} --help` exited ${rc}: ${err}")
  endif()
  string(REPLACE "\\" "${backslash_mark}" text "${text}")
  string(REPLACE ";" "${semicolon_mark}" text "${text}")
  string(REPLACE "[" "${open_mark}" text "${text}")
  string(REPLACE "]" "${close_mark}" text "${text}")
  set(${out} "${text}" PARENT_SCOPE)
endfunction()

# paragraphs(<out> <text>): the text cut at blank lines, each paragraph one
# list element with its lines joined by newlines.
function(paragraphs out text)
  string(REGEX REPLACE "\n[ \t]*\n(\n|[ \t]*\n)*" "${paragraph_mark}" text "${text}")
  string(REGEX REPLACE "^\n+|\n+$" "" text "${text}")
  string(REPLACE "${paragraph_mark}" ";" list "${text}")
  set(${out} "${list}" PARENT_SCOPE)
endfunction()

# roff(<out> <text>): text safe for troff: a backslash printed as one, '-' as
# the minus sign (so that options copied from the page work), and a line that
# starts with '.' or "'" not read as a request.
function(roff out text)
  string(REPLACE "${backslash_mark}" "\\e" text "${text}")
  string(REPLACE "-" "\\-" text "${text}")
  string(REGEX REPLACE "(^|\n)([.'])" "\\1\\\\&\\2" text "${text}")
  set(${out} "${text}" PARENT_SCOPE)
endfunction()

# render(<out> <paragraphs> <sections>): the paragraphs as roff. With
# sections TRUE a "Heading:" line alone opens a section (.SH); in a command's
# own help (FALSE) it stays a line of its block.
function(render out paras sections)
  set(page "")
  foreach(para IN LISTS paras)
    string(REPLACE "\n" ";" lines "${para}")
    list(GET lines 0 first)
    if(sections AND first MATCHES "^([A-Za-z][^:]*):$")
      set(heading "${CMAKE_MATCH_1}")
      if(heading MATCHES "^[A-Za-z ]+$")
        string(TOUPPER "${heading}" heading)
        string(APPEND page ".SH ${heading}\n")
      else()
        roff(heading "${heading}")
        string(REPLACE "\"" "\\(dq" heading "${heading}")
        string(APPEND page ".SS \"${heading}\"\n")
      endif()
      list(REMOVE_AT lines 0)
      if(NOT lines)
        continue()
      endif()
      string(REPLACE ";" "\n" para "${lines}")
      set(first "  ")
    endif()
    roff(text "${para}")
    if(first MATCHES "^[ \t]" OR para MATCHES "\n[ \t]")
      # Indented lines (tables of options, examples) or a heading above an
      # indented block, as in the help: line for line.
      string(APPEND page ".PP\n.nf\n${text}\n.fi\n")
    else()
      string(APPEND page ".PP\n${text}\n")
    endif()
  endforeach()
  set(${out} "${page}" PARENT_SCOPE)
endfunction()

# synopsis(<out> <paragraph>): the "usage:" paragraph without the word, its
# continuation lines without the indentation that lined them up under it.
function(synopsis out para)
  string(REGEX REPLACE "^usage: " "" para "${para}")
  string(REGEX REPLACE "\n       " "\n" para "${para}")
  roff(para "${para}")
  set(${out} ".nf\n${para}\n.fi\n" PARENT_SCOPE)
endfunction()

help_text(main_help)
paragraphs(main_paras "${main_help}")
list(GET main_paras 0 usage)
if(NOT usage MATCHES "^usage: ")
  message(FATAL_ERROR "help_to_man.cmake: `${PROGRAM} --help` does not start with \"usage: \"")
endif()
list(REMOVE_AT main_paras 0)

# The build's date, or SOURCE_DATE_EPOCH's when set (reproducible builds).
string(TIMESTAMP date "%Y-%m-%d" UTC)
string(TOUPPER "${NAME}" title)
roff(title "${title}")
roff(name_line "${NAME} - ${SUMMARY}")
synopsis(synopsis_text "${usage}")
render(description "${main_paras}" TRUE)
set(page ".\\\" Generated by cmake/help_to_man.cmake from `${NAME} --help`: edit the help, not this.\n")
string(APPEND page ".TH ${title} 1 ${date} \"payretry ${VERSION}\" \"User Commands\"\n")
string(APPEND page ".SH NAME\n${name_line}\n.SH SYNOPSIS\n${synopsis_text}.SH DESCRIPTION\n${description}")

if(SUBCOMMANDS)
  # The first word of each entry under "Commands:", once each (ledger list,
  # ledger show and ledger prune share `payretry ledger --help`).
  set(commands "")
  foreach(para IN LISTS main_paras)
    if(para MATCHES "^Commands:\n")
      string(REPLACE "\n" ";" lines "${para}")
      foreach(line IN LISTS lines)
        if(line MATCHES "^  ([a-z][a-z-]*)")
          list(APPEND commands "${CMAKE_MATCH_1}")
        endif()
      endforeach()
    endif()
  endforeach()
  list(REMOVE_DUPLICATES commands)
  if(NOT commands)
    message(FATAL_ERROR "help_to_man.cmake: SUBCOMMANDS=ON but `${PROGRAM} --help` lists no \"Commands:\"")
  endif()
  string(APPEND page ".SH COMMAND DETAILS\n")
  foreach(command IN LISTS commands)
    help_text(command_help ${command})
    paragraphs(command_paras "${command_help}")
    list(GET command_paras 0 command_usage)
    list(REMOVE_AT command_paras 0)
    set(own "")
    foreach(para IN LISTS command_paras)
      list(FIND main_paras "${para}" in_main)
      if(in_main EQUAL -1)
        list(APPEND own "${para}")
      endif()
    endforeach()
    synopsis(command_synopsis "${command_usage}")
    render(command_text "${own}" FALSE)
    roff(title "${NAME} ${command}")
    string(APPEND page ".SS \"${title}\"\n${command_synopsis}${command_text}")
  endforeach()
endif()

if(SEE_ALSO)
  set(refs "")
  foreach(ref IN LISTS SEE_ALSO)
    roff(ref "${ref}")
    list(APPEND refs ".BR ${ref} (1)")
  endforeach()
  string(JOIN ",\n" refs ${refs})
  string(APPEND page ".SH SEE ALSO\n${refs}\n")
endif()

string(REPLACE "${semicolon_mark}" ";" page "${page}")
string(REPLACE "${open_mark}" "[" page "${page}")
string(REPLACE "${close_mark}" "]" page "${page}")

get_filename_component(out_dir "${OUTPUT}" DIRECTORY)
string(REGEX REPLACE "\\.gz$" "" plain "${OUTPUT}")
file(WRITE "${plain}" "${page}")
# Debian installs man pages compressed (policy 12.1); man reads either.
file(ARCHIVE_CREATE OUTPUT "${OUTPUT}" PATHS "${plain}" FORMAT raw COMPRESSION GZip COMPRESSION_LEVEL 9)
