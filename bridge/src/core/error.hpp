#pragma once
// Errors as values: every fallible core operation returns boost::system::result<T>.
// The codes below are the bridge's own; they map to HTTP statuses and envelope codes in exactly one
// place (http/error_mapping).

#include <boost/system/error_code.hpp>
#include <boost/system/result.hpp>

#include <string>
#include <system_error>

namespace wopbridge {

enum class errc {
    ok = 0,
    not_found,               // no such object (or another tenant's)
    invalid_argument,        // caller input failed validation
    conflict,                // state does not allow the operation (e.g. subscription not active)
    already_exists,          // unique id taken
    signature_invalid,       // verification refused the request
    store_unavailable,       // the store cannot commit right now (disk full, read-only, connection lost)
    overloaded,              // bounded work queue full
    internal,                // a bug or an impossible state; logged
    permanent_failure,       // a delivery attempt that must not be retried
    transient_failure,       // a delivery attempt that may be retried
    unsupported,             // capability not provided
    shutting_down,           // the process is stopping
};

const boost::system::error_category& bridge_category() noexcept;

inline boost::system::error_code make_error_code(errc e) noexcept {
    return {static_cast<int>(e), bridge_category()};
}

// result<T>: a value or an error code. result<T, error_info> (or another typed error) where the
// caller needs the reason as well as the kind, instead of an out-parameter string.
template <class T, class E = boost::system::error_code>
using result = boost::system::result<T, E>;

// An error code plus a human message. The message never contains secrets or inbound content.
struct error_info {
    errc code = errc::internal;
    std::string message;
};

// The bridge's own code inside `ec`; internal for a code of another category.
errc errc_of(const boost::system::error_code& ec) noexcept;

// What result<T, error_info>::value() throws on an error (found by argument-dependent lookup).
[[noreturn]] void throw_exception_from_error(const error_info& e,
                                             const boost::source_location& where);

} // namespace wopbridge

namespace boost::system {
template <>
struct is_error_code_enum<wopbridge::errc> : std::true_type {};
} // namespace boost::system
