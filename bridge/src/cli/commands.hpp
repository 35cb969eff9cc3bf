#pragma once
// The subcommands of the wopbridge program. Each returns the process exit code:
// 0 success, 1 failure at run time, 2 usage or configuration error.

#include <string>
#include <vector>

namespace wopbridge::cli {

int run_serve(const std::vector<std::string>& args);
int run_check_config(const std::vector<std::string>& args);
int run_reload(const std::vector<std::string>& args);
int run_connectors(const std::vector<std::string>& args);
int run_connector_check(const std::vector<std::string>& args);
int run_host_key(const std::vector<std::string>& args);
int run_send(const std::vector<std::string>& args);
int run_check_store(const std::vector<std::string>& args);

// "--name value" / "--name=value" lookup; nullopt-like empty string when absent.
struct arg_parser {
    explicit arg_parser(const std::vector<std::string>& args);
    bool flag(const std::string& name) const;
    std::string value(const std::string& name) const;
    std::vector<std::string> values(const std::string& name) const;
    const std::vector<std::string>& positional() const noexcept { return positional_; }
    std::string error; // set when an option that needs a value has none

private:
    std::vector<std::pair<std::string, std::string>> options_;
    std::vector<std::string> positional_;
};

} // namespace wopbridge::cli
