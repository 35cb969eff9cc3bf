#include "intake/provider_catalogue.hpp"

#include <yaml-cpp/yaml.h>

#include <mutex>
#include <regex>

namespace wopbridge::providers {
namespace {

error_info refuse(std::string_view file, const std::string& what) {
    return {errc::invalid_argument, "bridge/providers/" + std::string(file) + ": " + what};
}

// {header: NAME} | {json: /pointer} | {param: KEY}; exactly one.
bool read_source(const YAML::Node& n, value_source& out, std::string& why, bool param_allowed) {
    if (!n) {
        return true;
    }
    if (!n.IsMap() || n.size() == 0) {
        why = "must be a map with header, json or param";
        return false;
    }
    int given = 0;
    for (const auto& [key, kind] : {std::pair{"header", value_source::kind::header},
                                    std::pair{"json", value_source::kind::json},
                                    std::pair{"param", value_source::kind::param}}) {
        if (n[key]) {
            ++given;
            out.from = kind;
            out.name = n[key].as<std::string>();
        }
    }
    if (given != 1 || out.name.empty()) {
        why = "names exactly one of header, json or param";
        return false;
    }
    if (out.from == value_source::kind::param && !param_allowed) {
        why = "param is only for the timestamp";
        return false;
    }
    if (out.from == value_source::kind::header) {
        for (auto& c : out.name) {
            c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
        }
    }
    if (out.from == value_source::kind::json && out.name.front() != '/') {
        why = "json is a JSON Pointer (starting with /)";
        return false;
    }
    return true;
}

bool parse_signs(std::string_view text, std::vector<signed_part>& out, std::string& why) {
    std::size_t i = 0;
    while (i < text.size()) {
        auto open = text.find('{', i);
        if (open != i) {
            auto end = open == std::string_view::npos ? text.size() : open;
            out.push_back({signed_part::kind::literal, std::string(text.substr(i, end - i))});
            i = end;
            continue;
        }
        auto close = text.find('}', open);
        if (close == std::string_view::npos) {
            why = "an unclosed {";
            return false;
        }
        auto token = text.substr(open + 1, close - open - 1);
        if (token == "body") {
            out.push_back({signed_part::kind::body, {}});
        } else if (token == "timestamp") {
            out.push_back({signed_part::kind::timestamp, {}});
        } else if (token.starts_with("header:") && token.size() > 7) {
            out.push_back({signed_part::kind::header, std::string(token.substr(7))});
        } else if (token.starts_with("json:/")) {
            out.push_back({signed_part::kind::json, std::string(token.substr(5))});
        } else {
            why = "unknown part {" + std::string(token) + "}";
            return false;
        }
        i = close + 1;
    }
    return true;
}

} // namespace

result<provider, error_info> parse_provider(std::string_view file, std::string_view yaml_text) {
    YAML::Node root;
    try {
        root = YAML::Load(std::string(yaml_text));
    } catch (const YAML::Exception& e) {
        return refuse(file, std::string("not YAML: ") + e.what());
    }
    if (!root.IsMap()) {
        return refuse(file, "not a map");
    }
    try {
        provider p;
        p.name = root["name"].as<std::string>("");
        p.docs = root["docs"].as<std::string>("");
        if (p.name.empty()) {
            return refuse(file, "name: missing");
        }
        const auto secret = root["secret"];
        p.secret_pattern = secret["pattern"].as<std::string>("");
        p.secret_describe = secret["describe"].as<std::string>("");
        if (p.secret_pattern.empty() || p.secret_describe.empty()) {
            return refuse(file, "secret: needs pattern and describe");
        }
        try {
            std::regex check(p.secret_pattern);
        } catch (const std::regex_error&) {
            return refuse(file, "secret.pattern: not a regular expression");
        }
        const auto sig = root["signature"];
        const auto alg = sig["algorithm"].as<std::string>("");
        if (alg == "standard-webhooks") {
            p.alg = algorithm::standard_webhooks;
        } else if (alg == "hmac-sha256") {
            p.alg = algorithm::hmac_sha256;
        } else if (alg == "hmac-sha1") {
            p.alg = algorithm::hmac_sha1;
        } else if (alg == "ed25519") {
            p.alg = algorithm::ed25519;
        } else if (alg == "token") {
            p.alg = algorithm::token;
        } else {
            return refuse(file, "signature.algorithm: '" + alg +
                                    "' (standard-webhooks, hmac-sha256, hmac-sha1, ed25519 or token)");
        }
        std::string why;
        if (p.alg != algorithm::standard_webhooks) {
            YAML::Node where(YAML::NodeType::Map);
            if (sig["header"]) {
                where["header"] = sig["header"];
            }
            if (sig["json"]) {
                where["json"] = sig["json"];
            }
            if (!read_source(where, p.signature, why, false) || !p.signature.present()) {
                return refuse(file, "signature: " + (why.empty() ? "needs header or json" : why));
            }
        }
        p.signature_prefix = sig["prefix"].as<std::string>("");
        p.signature_param = sig["param"].as<std::string>("");
        const auto enc = sig["encoding"].as<std::string>("hex");
        if (enc != "hex" && enc != "base64") {
            return refuse(file, "signature.encoding: '" + enc + "' (hex or base64)");
        }
        p.enc = enc == "hex" ? encoding::hex : encoding::base64;
        const bool mac = p.alg == algorithm::hmac_sha256 || p.alg == algorithm::hmac_sha1 ||
                         p.alg == algorithm::ed25519;
        if (mac && !parse_signs(sig["signs"].as<std::string>(""), p.signs, why)) {
            return refuse(file, "signature.signs: " + why);
        }
        if (mac && p.signs.empty()) {
            return refuse(file, "signature.signs: missing");
        }
        const auto ts = root["timestamp"];
        if (ts) {
            YAML::Node where(YAML::NodeType::Map);
            for (const char* k : {"header", "json", "param"}) {
                if (ts[k]) {
                    where[k] = ts[k];
                }
            }
            if (!read_source(where, p.timestamp, why, true)) {
                return refuse(file, "timestamp: " + why);
            }
            const auto unit = ts["unit"].as<std::string>("s");
            if (unit != "s" && unit != "ms") {
                return refuse(file, "timestamp.unit: '" + unit + "' (s or ms)");
            }
            p.timestamp_in_ms = unit == "ms";
            p.tolerance_s = ts["tolerance"].as<std::int64_t>(0);
            if (p.tolerance_s <= 0) {
                return refuse(file, "timestamp.tolerance: seconds, more than 0");
            }
        }
        for (const auto& part : p.signs) {
            if (part.what == signed_part::kind::timestamp && !p.timestamp.present()) {
                return refuse(file, "signature.signs: {timestamp} needs a timestamp");
            }
        }
        if (p.timestamp.from == value_source::kind::param && p.signature_param.empty()) {
            return refuse(file, "timestamp.param: needs signature.param (a k=v signature list)");
        }
        if (!read_source(root["deliveryId"], p.delivery_id, why, false)) {
            return refuse(file, "deliveryId: " + why);
        }
        if (!read_source(root["eventType"], p.event_type, why, false)) {
            return refuse(file, "eventType: " + why);
        }
        const auto hs = root["handshake"].as<std::string>("none");
        if (hs == "discord-ping") {
            p.handshake = handshake::discord_ping;
        } else if (hs == "zoom-url-validation") {
            p.handshake = handshake::zoom_url_validation;
        } else if (hs != "none") {
            return refuse(file, "handshake: '" + hs + "' (discord-ping or zoom-url-validation)");
        }
        if (p.handshake == handshake::zoom_url_validation && p.alg != algorithm::hmac_sha256) {
            return refuse(file, "handshake: zoom-url-validation answers with HMAC-SHA256");
        }
        return p;
    } catch (const YAML::Exception& e) {
        return refuse(file, std::string("a value of the wrong type: ") + e.what());
    }
}

namespace {
struct loaded {
    std::vector<provider> entries;
    std::vector<std::string> errors;
};
const loaded& load() {
    static const loaded all = [] {
        loaded out;
        for (const auto& f : provider_files()) {
            auto p = parse_provider(f.name, f.text);
            if (p) {
                out.entries.push_back(std::move(*p));
            } else {
                out.errors.push_back(p.error().message);
            }
        }
        return out;
    }();
    return all;
}
} // namespace

const std::vector<provider>& catalogue() { return load().entries; }
const std::vector<std::string>& catalogue_errors() { return load().errors; }

const provider* find(std::string_view name) {
    for (const auto& p : catalogue()) {
        if (p.name == name) {
            return &p;
        }
    }
    return nullptr;
}

std::vector<std::string> names() {
    std::vector<std::string> out;
    for (const auto& p : catalogue()) {
        out.push_back(p.name);
    }
    return out;
}

bool secret_fits(const provider& p, std::string_view secret) {
    return std::regex_match(secret.begin(), secret.end(), std::regex(p.secret_pattern));
}

} // namespace wopbridge::providers
