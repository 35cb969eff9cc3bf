#include "store/sqlite/sqlite_check.hpp"

#include "store/sqlite/sqlite_connection.hpp"

#include <chrono>

namespace wopbridge::sqlite {

const char* check_name(sqlite_startup_check depth) noexcept {
    return depth == sqlite_startup_check::quick ? "quick_check" : "integrity_check";
}

check_report run_check(connection& c, sqlite_startup_check depth, int max_findings) {
    check_report report;
    const auto began = std::chrono::steady_clock::now();
    // The PRAGMA takes no bound parameter; the number is ours.
    const std::string sql = std::string("PRAGMA ") + check_name(depth) + "(" +
                            std::to_string(max_findings < 1 ? 1 : max_findings) + ")";
    auto st = c.prepare(sql.c_str());
    for (;;) {
        auto row = st.step();
        if (!row) {
            const std::string err = c.last_error();
            report.error = err.empty() ? "cannot be read" : err;
            break;
        }
        if (!*row) {
            break;
        }
        std::string line = st.text(0);
        if (line != "ok") {
            report.findings.push_back(line.substr(0, 300));
        }
    }
    report.seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - began).count();
    return report;
}

} // namespace wopbridge::sqlite
