#include "plugins/settings_schemas.hpp"

#include <boost/json/parse.hpp>

namespace wopbridge {
namespace {

constexpr const char* config_ref = "config-settings.json";
constexpr const char* subscription_ref = "subscription-settings.json";

bool blank(const std::string& s) {
    return s.find_first_not_of(" \t\r\n") == std::string::npos;
}

} // namespace

module_result<settings_schemas> settings_schemas::compile(const loaded_module& m) {
    auto reg = std::make_shared<schema_registry>();
    settings_schemas out;
    out.module_ = m.name;
    auto add = [&](const std::string& text, const char* ref, const char* what,
                   secret_fields& secrets) -> module_result<void> {
        boost::system::error_code ec;
        auto doc = boost::json::parse(text, ec);
        if (ec) {
            return module_error{errc::invalid_argument,
                                m.path + ": its " + what + " is not JSON: " + ec.message()};
        }
        secrets = secret_fields::from_schema(doc);
        if (auto r = reg->add(std::move(doc), ref); !r) {
            return module_error{errc::invalid_argument,
                                m.path + ": its " + what + " is not a usable JSON Schema"};
        }
        return {};
    };
    if (!blank(m.config_schema_json)) {
        if (auto r = add(m.config_schema_json, config_ref, "config schema", out.config_secrets_);
            !r) {
            return r.error();
        }
        out.config_ = true;
    }
    if (!blank(m.subscription_schema_json)) {
        if (auto r = add(m.subscription_schema_json, subscription_ref, "subscription schema",
                         out.subscription_secrets_);
            !r) {
            return r.error();
        }
        out.subscription_ = true;
    }
    out.registry_ = std::move(reg);
    return out;
}

namespace {

settings_violation first_violation(const std::vector<validation_error>& errors) {
    for (const auto& e : errors) {
        if (e.kind != schema_error_kind::unresolved_ref) {
            const auto slash = e.schema_path.rfind('/');
            return {e.instance_path,
                    slash == std::string::npos ? e.schema_path : e.schema_path.substr(slash + 1)};
        }
    }
    return {};
}

module_result<void> check(const schema_registry& reg, const char* ref, std::string_view json,
                          const std::string& subject, const std::string& module,
                          const char* which, settings_violation* where) {
    boost::system::error_code ec;
    auto value = boost::json::parse(json, ec);
    if (ec) {
        return module_error{errc::invalid_argument, subject + " are not JSON"};
    }
    auto errors = reg.validate(value, ref);
    std::vector<validation_error> bad_schema;
    std::vector<validation_error> invalid;
    for (auto& e : errors) {
        (e.kind == schema_error_kind::bad_schema ? bad_schema : invalid).push_back(std::move(e));
    }
    if (!bad_schema.empty()) {
        return module_error{errc::invalid_argument, "module " + module + "'s " + which +
                                                        " schema is not valid: " +
                                                        format_errors(bad_schema)};
    }
    if (has_errors(invalid, true)) {
        if (where != nullptr) {
            *where = first_violation(invalid);
        }
        std::string why = format_errors(invalid);
        while (!why.empty() && why.back() == '\n') {
            why.pop_back();
        }
        for (auto& ch : why) {
            ch = ch == '\n' ? ';' : ch;
        }
        return module_error{errc::invalid_argument, subject + " do not match module " + module +
                                                        "'s " + which + " schema: " + why};
    }
    return {};
}

} // namespace

module_result<void> settings_schemas::check_config(std::string_view settings_json,
                                                   const std::string& instance,
                                                   settings_violation* where) const {
    if (!config_) {
        return {};
    }
    return check(*registry_, config_ref, settings_json,
                 "settings of connector instance '" + instance + "'", module_, "config", where);
}

module_result<void> settings_schemas::check_subscription(std::string_view settings_json,
                                                         const std::string& subscription_id,
                                                         settings_violation* where) const {
    if (!subscription_) {
        return {};
    }
    return check(*registry_, subscription_ref, settings_json,
                 "settings of subscription " + subscription_id, module_, "subscription", where);
}

} // namespace wopbridge
