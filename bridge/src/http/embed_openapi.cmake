# Regenerates openapi_document.cpp from schemas/openapi.json:
#   cmake -DINPUT=schemas/openapi.json -DOUTPUT=bridge/src/http/openapi_document.cpp \
#         -P bridge/src/http/embed_openapi.cmake
# (usable as an add_custom_command; until the build wires it, the generated file is committed and
# the unit test OpenApiTest.EmbeddedCopyMatchesSchemaFile fails when the two differ.)
file(READ "${INPUT}" content)
string(FIND "${content}" ")openapi_json\"" clash)
if(NOT clash EQUAL -1)
  message(FATAL_ERROR "openapi.json contains the raw-string delimiter")
endif()
file(WRITE "${OUTPUT}" "// Generated from schemas/openapi.json by embed_openapi.cmake. Do not edit.\n")
file(APPEND "${OUTPUT}" "#include \"http/openapi_document.hpp\"\n\nnamespace wopbridge::http {\n\n")
file(APPEND "${OUTPUT}" "namespace {\nconst char document[] = R\"openapi_json(")
file(APPEND "${OUTPUT}" "${content}")
file(APPEND "${OUTPUT}" ")openapi_json\";\n} // namespace\n\n")
file(APPEND "${OUTPUT}" "std::string_view openapi_document() noexcept {\n")
file(APPEND "${OUTPUT}" "    return std::string_view(document, sizeof(document) - 1);\n}\n\n")
file(APPEND "${OUTPUT}" "} // namespace wopbridge::http\n")
