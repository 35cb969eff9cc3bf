#include "core/error.hpp"

#include <boost/system/system_error.hpp>
#include <boost/throw_exception.hpp>

namespace wopbridge {
namespace {
class bridge_category_impl final : public boost::system::error_category {
public:
    const char* name() const noexcept override { return "wopbridge"; }
    std::string message(int ev) const override {
        switch (static_cast<errc>(ev)) {
        case errc::ok: return "ok";
        case errc::not_found: return "not found";
        case errc::invalid_argument: return "invalid argument";
        case errc::conflict: return "conflict";
        case errc::already_exists: return "already exists";
        case errc::signature_invalid: return "signature invalid";
        case errc::store_unavailable: return "store unavailable";
        case errc::overloaded: return "overloaded";
        case errc::internal: return "internal error";
        case errc::permanent_failure: return "permanent failure";
        case errc::transient_failure: return "transient failure";
        case errc::unsupported: return "unsupported";
        case errc::shutting_down: return "shutting down";
        }
        return "unknown";
    }
};
} // namespace

const boost::system::error_category& bridge_category() noexcept {
    static const bridge_category_impl instance;
    return instance;
}

errc errc_of(const boost::system::error_code& ec) noexcept {
    return ec.category() == bridge_category() ? static_cast<errc>(ec.value()) : errc::internal;
}

void throw_exception_from_error(const error_info& e, const boost::source_location& where) {
    boost::throw_exception(boost::system::system_error(make_error_code(e.code), e.message), where);
}
} // namespace wopbridge
