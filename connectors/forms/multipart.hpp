#pragma once
// The forms connector's names for the SDK's multipart/form-data parser (wopbridge/multipart.hpp).
// The parser lives in the SDK so the email connector shares it without including this connector.

#include <wopbridge/multipart.hpp>

namespace wopbridge::forms {

using http::boundary_of;
using http::form_part_info;
using http::form_part_info_of;
using http::header_value;
using http::multipart_error;
using http::multipart_limits;
using http::multipart_part;
using http::multipart_result;
using http::param_list;
using http::parse_header_block;
using http::parse_header_value;
using http::parse_multipart;
using http::to_string;

} // namespace wopbridge::forms
