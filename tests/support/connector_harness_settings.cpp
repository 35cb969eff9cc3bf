// settings_from_config: a connector's settings as the host would hand them over, read from an
// example's YAML (with ${ENV} substituted) and turned into JSON.
#include "support/connector_harness.hpp"

#include <boost/json/serialize.hpp>
#include <boost/json/value.hpp>

#include <cstdlib>
#include <stdexcept>
#include <string>

#include <yaml-cpp/yaml.h>

namespace wopbridge::testing {

namespace {

std::string substitute_env(const std::string& text) {
    std::string out;
    std::size_t pos = 0;
    while (pos < text.size()) {
        const auto open = text.find("${", pos);
        const auto close = open == std::string::npos ? std::string::npos : text.find('}', open);
        if (close == std::string::npos) {
            out.append(text, pos, std::string::npos);
            break;
        }
        out.append(text, pos, open - pos);
        out += "test-" + text.substr(open + 2, close - open - 2);
        pos = close + 1;
    }
    return out;
}

boost::json::value yaml_to_json(const YAML::Node& node) {
    switch (node.Type()) {
    case YAML::NodeType::Map: {
        boost::json::object obj;
        for (const auto& kv : node) {
            obj[kv.first.as<std::string>()] = yaml_to_json(kv.second);
        }
        return obj;
    }
    case YAML::NodeType::Sequence: {
        boost::json::array arr;
        for (const auto& item : node) {
            arr.push_back(yaml_to_json(item));
        }
        return arr;
    }
    case YAML::NodeType::Scalar: {
        const std::string text = node.Scalar();
        if (node.Tag() != "!") { // plain (unquoted) scalars may be numbers or booleans
            if (text == "true" || text == "false") {
                return text == "true";
            }
            if (!text.empty() && text.find_first_not_of("-0123456789") == std::string::npos) {
                try {
                    return std::stoll(text);
                } catch (...) {
                }
            }
        }
        return boost::json::string(substitute_env(text));
    }
    default:
        return nullptr;
    }
}

} // namespace

std::string settings_from_config(const std::string& yaml_path, std::string_view connector_name,
                                 bool subscription) {
    const YAML::Node root = YAML::LoadFile(yaml_path);
    const char* list = subscription ? "subscriptions" : "connectors";
    const char* key = subscription ? "id" : "name";
    for (const auto& entry : root[list]) {
        if (entry[key] && entry[key].as<std::string>() == connector_name) {
            if (!entry["settings"]) {
                return "{}";
            }
            return boost::json::serialize(yaml_to_json(entry["settings"]));
        }
    }
    throw std::runtime_error(yaml_path + ": no " + list + " entry " + std::string(connector_name));
}

} // namespace wopbridge::testing
