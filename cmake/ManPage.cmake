# Writes OUTPUT, the man page tracefuse.1, from the CLI's own help (the one place that defines
# the options): help2man lays out `tracefuse --help` and `--version`, and a COMMANDS section
# holds each subcommand's `--help`, in the order `tracefuse --help` lists them.
execute_process(COMMAND "${TRACEFUSE}" --help OUTPUT_VARIABLE help RESULT_VARIABLE failed)
if(failed)
  message(FATAL_ERROR "${TRACEFUSE} --help failed")
endif()
string(REGEX REPLACE ".*\nSubcommands:\n" "" listed "${help}")
string(REGEX REPLACE "\n\n.*" "" listed "${listed}")
string(REPLACE "\n" ";" lines "${listed}")
set(include "[COMMANDS]\n")
foreach(line IN LISTS lines)
  string(REGEX MATCH "^  ([a-z]+)" found "${line}")
  if(NOT found)
    continue()
  endif()
  set(command "${CMAKE_MATCH_1}")
  execute_process(COMMAND "${TRACEFUSE}" ${command} --help OUTPUT_VARIABLE command_help)
  string(REPLACE "Usage: ${TRACEFUSE} " "Usage: tracefuse " command_help "${command_help}")
  string(REPLACE "\\" "\\\\" command_help "${command_help}")
  # A line that starts with a dot would be a troff request.
  string(REPLACE "\n." "\n\\&." command_help "\n${command_help}")
  string(APPEND include ".SS ${command}\n.nf${command_help}.fi\n")
endforeach()
file(WRITE "${OUTPUT}.h2m" "${include}")
execute_process(
  COMMAND help2man --no-info --no-discard-stderr --section=1
          "--name=compare GPU kernel fusion across PyTorch profiler traces"
          "--include=${OUTPUT}.h2m" "--output=${OUTPUT}" "${TRACEFUSE}"
  RESULT_VARIABLE failed)
if(failed)
  message(FATAL_ERROR "help2man failed on ${TRACEFUSE}")
endif()
