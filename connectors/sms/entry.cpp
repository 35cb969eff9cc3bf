// The module's C ABI edge: the descriptor and trampolines into sms::connector. Nothing throws
// past this file; every failure becomes a wb_status and a one-line reason.

#include "sms/connector.hpp"
#include "sms/settings.hpp"

#include <wopbridge/connector.h>

#include <cstddef>
#include <cstdio>
#include <new>
#include <string>

namespace wopbridge::sms {
namespace {

std::string_view view(wb_str s) {
    return s.size == 0 ? std::string_view{} : std::string_view(s.data, s.size);
}

void write_error(char* buf, std::size_t size, std::string_view message) {
    if (buf != nullptr && size > 0) {
        std::snprintf(buf, size, "%.*s", static_cast<int>(message.size()), message.data());
    }
}

connector* self(wb_connector* c) {
    return reinterpret_cast<connector*>(c);
}

wb_status validate(wb_str config_json, char* error_buf, std::size_t error_buf_size) noexcept {
    try {
        std::string error;
        if (!parse_connector_settings(view(config_json), error)) {
            write_error(error_buf, error_buf_size, error);
            return WB_ERR_INVALID;
        }
        return WB_OK;
    } catch (...) {
        write_error(error_buf, error_buf_size, "internal error while validating settings");
        return WB_ERR_INTERNAL;
    }
}

wb_status create(const wb_host_api* api, wb_host* host, wb_str config_json, wb_connector** out,
                 char* error_buf, std::size_t error_buf_size) noexcept {
    try {
        // The functions this connector calls must all be present in the host's table.
        if (api == nullptr || out == nullptr ||
            api->struct_size < offsetof(wb_host_api, register_subscription) ||
            api->abi_major != WOPBRIDGE_ABI_MAJOR || api->submit == nullptr ||
            api->respond == nullptr || api->now_ms == nullptr) {
            write_error(error_buf, error_buf_size, "host API table is missing or too old");
            return WB_ERR_INVALID;
        }
        std::string error;
        auto parsed = parse_connector_settings(view(config_json), error);
        if (!parsed) {
            write_error(error_buf, error_buf_size, error);
            return WB_ERR_INVALID;
        }
        *out = reinterpret_cast<wb_connector*>(new connector(api, host, std::move(*parsed)));
        return WB_OK;
    } catch (...) {
        write_error(error_buf, error_buf_size, "internal error while creating the connector");
        return WB_ERR_INTERNAL;
    }
}

wb_status start(wb_connector* c) noexcept {
    return c == nullptr ? WB_ERR_INVALID : WB_OK;
}

wb_status subscribe(wb_connector* c, const wb_subscription* sub, char* error_buf,
                    std::size_t error_buf_size) noexcept {
    if (c == nullptr || sub == nullptr || sub->struct_size < sizeof(wb_subscription)) {
        write_error(error_buf, error_buf_size, "missing subscription");
        return WB_ERR_INVALID;
    }
    try {
        std::string error;
        const wb_status st = self(c)->subscribe(*sub, error);
        if (st != WB_OK) {
            write_error(error_buf, error_buf_size, error);
        }
        return st;
    } catch (...) {
        write_error(error_buf, error_buf_size, "internal error while subscribing");
        return WB_ERR_INTERNAL;
    }
}

wb_status unsubscribe(wb_connector* c, wb_str id) noexcept {
    if (c == nullptr) {
        return WB_ERR_INVALID;
    }
    try {
        self(c)->unsubscribe(view(id));
        return WB_OK;
    } catch (...) {
        return WB_ERR_INTERNAL;
    }
}

void on_http_request(wb_connector* c, wb_request_ctx* ctx, const wb_http_request* request) noexcept {
    // connector::on_http_request catches everything and always answers.
    if (c == nullptr || request == nullptr) {
        return;
    }
    self(c)->on_http_request(ctx, *request);
}

wb_status stop(wb_connector* c, std::int64_t deadline_ms) noexcept {
    if (c == nullptr) {
        return WB_ERR_INVALID;
    }
    try {
        self(c)->stop(deadline_ms);
        return WB_OK;
    } catch (...) {
        return WB_ERR_INTERNAL;
    }
}

void destroy(wb_connector* c) noexcept {
    delete self(c);
}

// Built on first use: the schema strings live in another translation unit.
wb_connector_descriptor make_descriptor() {
    return wb_connector_descriptor{
    sizeof(wb_connector_descriptor),
    WOPBRIDGE_ABI_MAJOR,
    WOPBRIDGE_ABI_MINOR,
    "sms",
    "0.1.0",
    "alpha",
    "Verifies X-Twilio-Signature (HMAC-SHA1 over the signed URL and sorted POST parameters, or "
    "the URL with bodySHA256 for JSON) with any configured auth token; no replay window exists, "
    "so MessageSid dedup is the replay guard.",
    WOPBRIDGE_SDK_BUILD_ID,
    "webhook",
    config_schema_json,
    subscription_schema_json,
    WB_CAP_HTTP_INGEST,
    &validate,
    &create,
    &start,
    &subscribe,
    &unsubscribe,
    &on_http_request,
    &stop,
    &destroy,
    };
}

} // namespace
} // namespace wopbridge::sms

extern "C" WOPBRIDGE_EXPORT const wb_connector_descriptor* wopbridge_connector_entry_v1(void) {
    static const wb_connector_descriptor descriptor = wopbridge::sms::make_descriptor();
    return &descriptor;
}
