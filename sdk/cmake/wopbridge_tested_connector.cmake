# In-tree connectors with a static library under the module: the library holds the connector's
# code so the unit tests link it without a host; the module sits on top. Not installed: the
# deferred link reaches this tree's unit_tests only.
#
#   wopbridge_add_tested_connector(<module> LIBRARY <target> LIBRARY_SOURCES <src>...
#                                  SOURCES <src>... [LINK <target>...])
function(wopbridge_add_tested_connector module)
  cmake_parse_arguments(arg "" "LIBRARY" "LIBRARY_SOURCES;SOURCES;LINK" ${ARGN})
  add_library(${arg_LIBRARY} STATIC ${arg_LIBRARY_SOURCES})
  target_include_directories(${arg_LIBRARY} PUBLIC ${CMAKE_CURRENT_SOURCE_DIR}/..)
  target_link_libraries(${arg_LIBRARY} PUBLIC wopbridge::sdk ${arg_LINK})
  set_target_properties(${arg_LIBRARY} PROPERTIES
    CXX_VISIBILITY_PRESET hidden VISIBILITY_INLINES_HIDDEN ON)
  wopbridge_add_connector(${module} SOURCES ${arg_SOURCES} LIBRARIES ${arg_LIBRARY})
  # unit_tests is defined later (tests/ is added after connectors/): link it at the end of the
  # top directory so the tests reach the library and find the built module. Deferred arguments
  # are read when the call runs, so the names are written into the call now (EVAL).
  cmake_language(EVAL CODE "cmake_language(DEFER DIRECTORY [[${PROJECT_SOURCE_DIR}]]
    CALL _wopbridge_link_unit_tests [[${arg_LIBRARY}]] [[${module}]])")
endfunction()

function(_wopbridge_link_unit_tests library module)
  if(TARGET unit_tests)
    target_link_libraries(unit_tests PRIVATE ${library})
    add_dependencies(unit_tests ${module})
  endif()
endfunction()
