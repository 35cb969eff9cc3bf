#pragma once
// schemas/openapi.json, embedded at build time (openapi_document.cpp is generated from it by
// bridge/src/http/embed_openapi.cmake; a unit test fails when the two differ).

#include <string_view>

namespace wopbridge::http {

std::string_view openapi_document() noexcept;

} // namespace wopbridge::http
