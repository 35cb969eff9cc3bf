# wopbridge_add_connector(<name> SOURCES ...): a connector module, built as a MODULE with hidden
# visibility (only the entry symbol is exported), placed at <build>/lib/wopbridge/<name>.so and
# installed to <prefix>/lib/wopbridge/<name>.so.
function(wopbridge_add_connector name)
  cmake_parse_arguments(ARG "" "" "SOURCES;LIBRARIES" ${ARGN})
  add_library(${name} MODULE ${ARG_SOURCES})
  set_target_properties(${name} PROPERTIES
    PREFIX ""
    OUTPUT_NAME ${name}
    LIBRARY_OUTPUT_DIRECTORY ${WOPBRIDGE_MODULE_DIR}
    CXX_VISIBILITY_PRESET hidden
    C_VISIBILITY_PRESET hidden
    VISIBILITY_INLINES_HIDDEN ON)
  target_link_libraries(${name} PRIVATE wopbridge::sdk ${ARG_LIBRARIES})
  target_link_options(${name} PRIVATE -Wl,--no-undefined)
  install(TARGETS ${name} LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}/wopbridge)
endfunction()
