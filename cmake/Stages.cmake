# The stage libraries, one per folder of src/ (docs/architecture.md).
#
# tracefuse_stage(STAGE [SOURCES...] [PUBLIC...] [PRIVATE...]), called from src/STAGE/, declares
# the library tracefuse_STAGE. Its public headers, include/tracefuse/STAGE/, are exposed through a
# directory of their own (build/stage_include/STAGE/tracefuse/STAGE links there), so a stage sees
# its own headers and those of the stages it links, and nothing later: including a later stage's
# header fails to compile (tests/CMakeLists.txt checks every pair of stages). Its internal
# headers, src/STAGE/, are reached as "STAGE/..." by the stage's own sources alone (through
# build/stage_private/STAGE/STAGE).
set_property(GLOBAL PROPERTY TRACEFUSE_STAGES "")

# A symbolic link LINK to the directory TARGET (a directory left at LINK by an older build tree's
# layout is replaced).
function(_tracefuse_link_directory target link)
  if(IS_SYMLINK ${link})
    return()
  endif()
  if(IS_DIRECTORY ${link})
    file(REMOVE_RECURSE ${link})
  endif()
  get_filename_component(parent ${link} DIRECTORY)
  file(MAKE_DIRECTORY ${parent})
  file(CREATE_LINK ${target} ${link} SYMBOLIC)
endfunction()

function(tracefuse_stage stage)
  cmake_parse_arguments(ARG "" "" "SOURCES;PUBLIC;PRIVATE" ${ARGN})
  set(public_dir ${CMAKE_BINARY_DIR}/stage_include/${stage})
  _tracefuse_link_directory(${CMAKE_SOURCE_DIR}/include/tracefuse/${stage}
                            ${public_dir}/tracefuse/${stage})
  # What the layering tests read: the stages this one sees (itself and every stage it links,
  # transitively).
  set(sees ${stage})
  foreach(item IN LISTS ARG_PUBLIC ARG_PRIVATE)
    if(item MATCHES "^tracefuse_(.*)$")
      get_property(linked GLOBAL PROPERTY TRACEFUSE_STAGE_SEES_${CMAKE_MATCH_1})
      list(APPEND sees ${linked})
    endif()
  endforeach()
  list(REMOVE_DUPLICATES sees)
  set_property(GLOBAL PROPERTY TRACEFUSE_STAGE_SEES_${stage} ${sees})
  set_property(GLOBAL APPEND PROPERTY TRACEFUSE_STAGES ${stage})

  tracefuse_static_or_shared(ARG_PUBLIC ${ARG_PUBLIC})
  tracefuse_static_or_shared(ARG_PRIVATE ${ARG_PRIVATE})
  if(NOT ARG_SOURCES)
    add_library(tracefuse_${stage} INTERFACE)
    target_include_directories(tracefuse_${stage} INTERFACE ${public_dir})
    target_link_libraries(tracefuse_${stage} INTERFACE ${ARG_PUBLIC})
    return()
  endif()
  set(private_dir ${CMAKE_BINARY_DIR}/stage_private/${stage})
  _tracefuse_link_directory(${CMAKE_SOURCE_DIR}/src/${stage} ${private_dir}/${stage})
  add_library(tracefuse_${stage} STATIC ${ARG_SOURCES})
  target_include_directories(tracefuse_${stage} PUBLIC ${public_dir} PRIVATE ${private_dir})
  target_link_libraries(tracefuse_${stage} PUBLIC ${ARG_PUBLIC} PRIVATE ${ARG_PRIVATE})
endfunction()

# tracefuse_stage_internals(TARGET STAGE): TARGET (a test or a benchmark) also reaches STAGE's
# internal headers.
function(tracefuse_stage_internals target stage)
  target_include_directories(${target} PRIVATE ${CMAKE_BINARY_DIR}/stage_private/${stage})
endfunction()

# Data is embedded at build time: tracefuse_embed(VARIABLE SYMBOL COUNT HEADER WHAT FILE...) sets
# VARIABLE to the generated source that defines SYMBOL, the files' contents, and COUNT, declared
# in the internal header src/HEADER (cmake/EmbedFiles.cmake).
function(tracefuse_embed variable symbol count header what)
  set(files ${ARGN})
  string(REPLACE ".h" ".cc" output ${CMAKE_BINARY_DIR}/generated/${header})
  string(REPLACE ";" "|" inputs "${files}")
  add_custom_command(
    OUTPUT ${output}
    COMMAND ${CMAKE_COMMAND} -DOUTPUT=${output} "-DINPUTS=${inputs}" -DSYMBOL=${symbol}
            -DCOUNT=${count} -DHEADER=${header} -P ${CMAKE_SOURCE_DIR}/cmake/EmbedFiles.cmake
    DEPENDS ${files} ${CMAKE_SOURCE_DIR}/cmake/EmbedFiles.cmake
    COMMENT "Embedding ${what}"
    VERBATIM)
  set(${variable} ${output} PARENT_SCOPE)
endfunction()
