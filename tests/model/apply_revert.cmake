# Writes a copy of one source file of the library with one of its rules
# reverted, for a model generator that must show what the rule prevents:
#
#   cmake -DSOURCE=<src/...cpp> -DPATCH=<reverts/RULE.patch> -DOUTPUT=<copy>
#         -DPATCH_EXECUTABLE=<patch> -P apply_revert.cmake
#
# The patch must apply exactly (no fuzz). The copy ends with the definition of
# payretry_model_revert_problem, which gen_tables.cpp reads: empty when the
# patch applied; otherwise the copy is the unpatched source and the string
# says why, so that the generator, and with it the CTest test, fails with that
# message instead of the model passing on code that was never reverted. The
# build itself never breaks on it: other targets do not wait for a patch
# someone must refresh.
foreach(v SOURCE PATCH OUTPUT)
  if(NOT DEFINED ${v})
    message(FATAL_ERROR "apply_revert.cmake: -D${v}=... is required")
  endif()
endforeach()
get_filename_component(dir "${OUTPUT}" DIRECTORY)
file(MAKE_DIRECTORY "${dir}")
file(REMOVE "${OUTPUT}.new" "${OUTPUT}.rej")

set(problem "")
if(NOT PATCH_EXECUTABLE OR NOT EXISTS "${PATCH_EXECUTABLE}")
  set(problem "the program patch was not found: ${PATCH} cannot be applied (apt-get install patch)")
else()
  execute_process(
    COMMAND "${PATCH_EXECUTABLE}" --batch --fuzz=0 --no-backup-if-mismatch -r "${OUTPUT}.rej" -o "${OUTPUT}.new"
            "${SOURCE}" "${PATCH}"
    RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    set(problem "${PATCH} no longer applies to ${SOURCE}: refresh the patch (the build log has patch's words)")
    message(WARNING "tests/model: ${problem}\n${out}${err}")
  endif()
endif()

if(problem STREQUAL "")
  file(READ "${OUTPUT}.new" text)
else()
  file(READ "${SOURCE}" text)
endif()
file(REMOVE "${OUTPUT}.new" "${OUTPUT}.rej")
string(REPLACE "\\" "/" problem "${problem}")
string(REPLACE "\"" "'" problem "${problem}")
string(APPEND text "
// Added by tests/model/apply_revert.cmake: empty when the patch applied.
extern \"C\" const char* const payretry_model_revert_problem = \"${problem}\";
")
file(WRITE "${OUTPUT}" "${text}")
