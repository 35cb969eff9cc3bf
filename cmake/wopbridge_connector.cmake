# wopbridge_add_connector(<name> SOURCES ... [LIBRARIES ...]): a connector module, built as a MODULE
# with hidden visibility and a version script (only the entry symbol is exported), placed at
# <build>/lib/wopbridge/connectors/<name>.so and installed to <prefix>/lib/wopbridge/connectors/<name>.so.
# Works in the wopbridge tree and, through find_package(wopbridge), out of tree.
include(GNUInstallDirs)

function(wopbridge_add_connector name)
  cmake_parse_arguments(ARG "" "" "SOURCES;LIBRARIES" ${ARGN})
  if(NOT ARG_SOURCES)
    message(FATAL_ERROR "wopbridge_add_connector(${name}): SOURCES is required")
  endif()
  if(DEFINED WOPBRIDGE_MODULE_DIR)
    set(out_dir ${WOPBRIDGE_MODULE_DIR})
  else()
    set(out_dir ${CMAKE_BINARY_DIR}/lib/wopbridge/connectors)
  endif()
  add_library(${name} MODULE ${ARG_SOURCES})
  set_target_properties(${name} PROPERTIES
    PREFIX ""
    OUTPUT_NAME ${name}
    LIBRARY_OUTPUT_DIRECTORY ${out_dir}
    CXX_VISIBILITY_PRESET hidden
    C_VISIBILITY_PRESET hidden
    VISIBILITY_INLINES_HIDDEN ON)
  target_compile_features(${name} PRIVATE cxx_std_20)
  # wopbridge::sdk carries the version script and --exclude-libs for MODULE targets.
  target_link_libraries(${name} PRIVATE wopbridge::sdk ${ARG_LIBRARIES})
  target_link_options(${name} PRIVATE -Wl,--no-undefined)
  # A fixed lib/ (not the multiarch libdir): the executable looks in ../lib/wopbridge/connectors.
  # In the wopbridge tree, WOPBRIDGE_CONNECTOR_COMPONENT puts a module in its own package.
  if(DEFINED WOPBRIDGE_CONNECTOR_COMPONENT)
    set(component ${WOPBRIDGE_CONNECTOR_COMPONENT})
  else()
    set(component runtime)
  endif()
  install(TARGETS ${name} LIBRARY DESTINATION lib/wopbridge/connectors COMPONENT ${component})
endfunction()
