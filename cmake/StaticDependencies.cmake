# Static twins of the dependencies that Debian also ships as archives (.a), for the `tracefuse`
# executable alone: the dynamic loader's work (Debian's Abseil alone is dozens of shared
# libraries, each mapped, relocated and faulted in) was half of a run's start-up CPU, a fixed
# cost that weighs on small traces (docs/performance.md, "Small files"). The Python module must
# link shared libraries, and the other programs and the tests keep them too.
#
# tracefuse_static_twins(TARGET...) creates, for each imported TARGET and what it links, an
# imported twin named tracefuse_static::<target> that links the archives instead; a target without
# an archive gets no twin. tracefuse_static_or_shared(OUT LIB...) sets OUT to LIB... with each LIB
# that has a twin replaced by a generator expression that picks the twin for a target whose
# TRACEFUSE_STATIC_DEPENDENCIES property is true ($<TARGET_PROPERTY:...> in a link interface names
# the target being linked, so stage libraries can say it once for every program).

# The archive beside a shared library (libfoo.so or libfoo.so.1.2 -> libfoo.a), or "" when Debian
# ships none.
function(_tracefuse_archive_of library out)
  set(archive "")
  if(library MATCHES "^(.*)\\.so(\\.[0-9.]*)?$")
    # Not in the same if(): ${CMAKE_MATCH_1} is expanded before MATCHES sets it.
    if(EXISTS "${CMAKE_MATCH_1}.a")
      set(archive "${CMAKE_MATCH_1}.a")
    endif()
  endif()
  set(${out} "${archive}" PARENT_SCOPE)
endfunction()

function(_tracefuse_twin_name target out)
  string(REPLACE "::" "_" name "${target}")
  set(${out} "tracefuse_static::${name}" PARENT_SCOPE)
endfunction()

# A link item as the twins link it: a target's twin, a shared library's archive, else the item.
function(_tracefuse_static_item item out)
  if(TARGET "${item}")
    tracefuse_static_twins("${item}")
    _tracefuse_twin_name("${item}" twin)
    if(TARGET "${twin}")
      set(item "${twin}")
    endif()
  else()
    _tracefuse_archive_of("${item}" archive)
    if(archive)
      set(item "${archive}")
    endif()
  endif()
  set(${out} "${item}" PARENT_SCOPE)
endfunction()

function(tracefuse_static_twins)
  foreach(target IN LISTS ARGN)
    _tracefuse_twin_name("${target}" twin)
    get_target_property(imported "${target}" IMPORTED)
    if(TARGET "${twin}" OR NOT imported)
      continue()
    endif()
    get_target_property(type "${target}" TYPE)
    if(type STREQUAL "INTERFACE_LIBRARY")
      add_library("${twin}" INTERFACE IMPORTED)
    else()
      get_target_property(location "${target}" LOCATION)
      _tracefuse_archive_of("${location}" archive)
      if(NOT archive)
        continue()
      endif()
      add_library("${twin}" STATIC IMPORTED)
      set_target_properties("${twin}" PROPERTIES IMPORTED_LOCATION "${archive}")
    endif()
    foreach(property INCLUDE_DIRECTORIES SYSTEM_INCLUDE_DIRECTORIES COMPILE_DEFINITIONS
                     COMPILE_OPTIONS COMPILE_FEATURES LINK_OPTIONS)
      get_target_property(value "${target}" INTERFACE_${property})
      if(value)
        set_target_properties("${twin}" PROPERTIES INTERFACE_${property} "${value}")
      endif()
    endforeach()
    get_target_property(links "${target}" INTERFACE_LINK_LIBRARIES)
    set(static_links "")
    foreach(item IN LISTS links)
      if(item)
        _tracefuse_static_item("${item}" item)
        list(APPEND static_links "${item}")
      endif()
    endforeach()
    set_target_properties("${twin}" PROPERTIES INTERFACE_LINK_LIBRARIES "${static_links}")
  endforeach()
endfunction()

function(tracefuse_static_or_shared out)
  set(result "")
  foreach(library IN LISTS ARGN)
    _tracefuse_twin_name("${library}" twin)
    if(TARGET "${twin}")
      set(library
          "$<IF:$<BOOL:$<TARGET_PROPERTY:TRACEFUSE_STATIC_DEPENDENCIES>>,${twin},${library}>")
    endif()
    list(APPEND result "${library}")
  endforeach()
  set(${out} "${result}" PARENT_SCOPE)
endfunction()
