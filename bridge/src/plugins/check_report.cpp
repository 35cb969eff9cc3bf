#include "plugins/check_report.hpp"

#include "wopbridge/connector.h"

#include <boost/json.hpp>

#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <utility>
#include <vector>

namespace wopbridge {
namespace check_kit {

std::string one_line(std::string_view text, std::size_t max) {
    std::string out;
    out.reserve(std::min(text.size(), max));
    for (char c : text) {
        if (out.size() >= max) {
            out += "...";
            break;
        }
        out += (c == '\n' || c == '\r' || c == '\t') ? ' ' : c;
    }
    return out;
}

std::string status_name(int st) {
    switch (st) {
    case WB_OK:
        return "WB_OK";
    case WB_ERR_INVALID:
        return "WB_ERR_INVALID";
    case WB_ERR_UNSUPPORTED:
        return "WB_ERR_UNSUPPORTED";
    case WB_ERR_INTERNAL:
        return "WB_ERR_INTERNAL";
    case WB_ERR_BUSY:
        return "WB_ERR_BUSY";
    case WB_ERR_STATE:
        return "WB_ERR_STATE";
    default:
        return "status " + std::to_string(st);
    }
}

std::string buf_text(const std::array<char, 512>& buf) {
    return one_line(std::string_view(buf.data(), ::strnlen(buf.data(), buf.size())));
}

// The wire format: "B\tname" (begin) and "R\tRESULT\tname\treason"; one_line keeps a reason
// free of the tabs and newlines that frame it.
void reporter::begin(std::string_view name) {
    write("B\t" + std::string(name) + "\n");
}

void reporter::report(check_result r, std::string_view name, std::string_view reason) {
    write("R\t" + std::string(to_string(r)) + "\t" + std::string(name) + "\t" + one_line(reason) +
          "\n");
}

void reporter::write(const std::string& line) {
    std::size_t off = 0;
    while (off < line.size()) {
        const ssize_t n = ::write(fd_, line.data() + off, line.size() - off);
        if (n <= 0) {
            return;
        }
        off += static_cast<std::size_t>(n);
    }
}

void report_reader::feed(std::string_view bytes) {
    buffer_.append(bytes);
    std::size_t nl;
    while ((nl = buffer_.find('\n')) != std::string::npos) {
        const std::string line = buffer_.substr(0, nl);
        buffer_.erase(0, nl + 1);
        std::vector<std::string> parts;
        std::size_t start = 0;
        for (;;) {
            const auto tab = line.find('\t', start);
            if (tab == std::string::npos || parts.size() == 3) {
                parts.push_back(line.substr(start));
                break;
            }
            parts.push_back(line.substr(start, tab - start));
            start = tab + 1;
        }
        if (parts.size() == 2 && parts[0] == "B") {
            current_ = parts[1];
        } else if (parts.size() == 4 && parts[0] == "R") {
            check_line l;
            l.result = parts[1] == "PASS"   ? check_result::pass
                       : parts[1] == "FAIL" ? check_result::fail
                                            : check_result::skip;
            l.name = parts[2];
            l.reason = parts[3];
            report_.checks.push_back(std::move(l));
        }
    }
}

} // namespace check_kit

std::string_view to_string(check_result r) noexcept {
    switch (r) {
    case check_result::pass:
        return "PASS";
    case check_result::fail:
        return "FAIL";
    case check_result::skip:
        return "SKIP";
    }
    return "SKIP";
}

std::size_t connector_check_report::count(check_result r) const noexcept {
    return static_cast<std::size_t>(std::count_if(
        checks.begin(), checks.end(), [&](const check_line& l) { return l.result == r; }));
}

int connector_check_report::exit_code() const noexcept {
    return count(check_result::fail) == 0 ? 0 : 1;
}

std::string format_check_text(const connector_check_report& report) {
    std::string out;
    for (const auto& l : report.checks) {
        std::string name = l.name;
        if (name.size() < 32) {
            name.resize(32, ' ');
        }
        out += std::string(to_string(l.result)) + "  " + name + " " + l.reason + "\n";
    }
    out += std::to_string(report.count(check_result::pass)) + " passed, " +
           std::to_string(report.count(check_result::fail)) + " failed, " +
           std::to_string(report.count(check_result::skip)) + " skipped\n";
    return out;
}

std::string format_check_json(const connector_check_report& report, std::string_view module) {
    boost::json::object doc;
    doc["module"] = module;
    boost::json::array checks;
    for (const auto& l : report.checks) {
        checks.push_back(boost::json::object{
            {"result", to_string(l.result)}, {"name", l.name}, {"reason", l.reason}});
    }
    doc["checks"] = std::move(checks);
    doc["passed"] = report.count(check_result::pass);
    doc["failed"] = report.count(check_result::fail);
    doc["skipped"] = report.count(check_result::skip);
    doc["ok"] = report.exit_code() == 0;
    return boost::json::serialize(doc) + "\n";
}

} // namespace wopbridge
