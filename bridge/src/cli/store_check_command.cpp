// `wopbridge check-store`: SQLite's full consistency check of the store a config names, for an
// operator (after a crash, a disk error, before a backup is trusted). Reads only; runs beside a
// serving node too (a WAL reader sees one snapshot; the WAL is not checkpointed past it meanwhile).
#include "cli/commands.hpp"
#include "config/config.hpp"
#include "store/store_backend.hpp"
#include "store/sqlite/sqlite_check.hpp"
#include "store/sqlite/sqlite_connection.hpp"
#include "store/sqlite/wal_check.hpp"

#include <cstdio>
#include <cstdlib>
#include <filesystem>

namespace wopbridge::cli {

int run_check_store(const std::vector<std::string>& args) {
    arg_parser p(args);
    const std::string path = p.value("config");
    if (p.flag("help") || path.empty() || !p.error.empty()) {
        std::fputs(
            "usage: wopbridge check-store --config FILE [--quick] [--max-findings N]\n"
            "Checks the SQLite store FILE names with PRAGMA integrity_check (pages, records,\n"
            "constraints, and every index against its table; 12-24 s per GiB on 2 cores)\n"
            "or, with --quick, PRAGMA quick_check (pages and records only, 1.5-11 s per GiB),\n"
            "and its WAL's checksums (figures: warm to cold page cache). Reads only; a\n"
            "serving node may keep serving.\n"
            "Prints each finding; exit 0 ok, 1 damaged, 2 usage or config error.\n",
            p.flag("help") ? stdout : stderr);
        return p.flag("help") ? 0 : 2;
    }
    auto loaded = load_config(path);
    for (const auto& e : loaded.errors) {
        std::fprintf(stderr, "%s\n", e.to_string().c_str());
    }
    if (!loaded.errors.empty() || !loaded.value) {
        return 2;
    }
    const auto file = loaded.value->store.backend->checkable_file();
    if (!file) {
        std::fprintf(stderr,
                     "%s: store: check-store checks a SQLite store; %s checks its own (%s)\n",
                     path.c_str(), std::string(loaded.value->store.backend->backend_name()).c_str(),
                     std::string(loaded.value->store.backend->own_checks()).c_str());
        return 2;
    }
    const std::string db = *file;
    long max_findings = 100;
    if (auto n = p.value("max-findings"); !n.empty()) {
        char* end = nullptr;
        max_findings = std::strtol(n.c_str(), &end, 10);
        if (*end != '\0' || max_findings < 1 || max_findings > 100000) {
            std::fprintf(stderr, "check-store: --max-findings: expected 1 to 100000\n");
            return 2;
        }
    }
    std::error_code ec;
    if (!std::filesystem::is_regular_file(db, ec)) {
        std::fprintf(stderr, "%s: store: %s does not exist\n", path.c_str(), db.c_str());
        return 2;
    }
    int damaged = 0;
    auto wal = sqlite::find_wal_damage(db);
    if (!wal) {
        std::printf("%s-wal: cannot be read: %s\n", db.c_str(), wal.error().message.c_str());
        return 1;
    }
    if (*wal) {
        const auto& damage = **wal;
        std::printf("%s-wal: frame %u of %u fails its checksum; SQLite's recovery would discard "
                    "the %u committed transaction(s) after it\n",
                    db.c_str(), damage.first_bad_frame, damage.frames, damage.commits_after);
        return 1; // opening the file now would run that recovery
    }
    auto c = sqlite::connection::open(db, false, 5000);
    if (!c) {
        std::printf("%s: cannot be opened: %s\n", db.c_str(), c.error().message.c_str());
        return 1;
    }
    (void)(*c)->exec("PRAGMA query_only=1");
    const auto depth =
        p.flag("quick") ? sqlite_startup_check::quick : sqlite_startup_check::integrity;
    auto report = sqlite::run_check(**c, depth, static_cast<int>(max_findings));
    const double mib = static_cast<double>(std::filesystem::file_size(db, ec)) / (1024.0 * 1024.0);
    if (!report.error.empty()) {
        std::printf("%s: %s could not finish: %s\n", db.c_str(), sqlite::check_name(depth),
                    report.error.c_str());
        return 1;
    }
    for (const auto& f : report.findings) {
        std::printf("%s: %s\n", db.c_str(), f.c_str());
        ++damaged;
    }
    std::printf("%s: %s (%s, %.0f MiB in %.1f s)\n", db.c_str(),
                damaged == 0 ? "ok" : (std::to_string(damaged) + " finding(s)").c_str(),
                sqlite::check_name(depth), mib, report.seconds);
    return damaged == 0 ? 0 : 1;
}

} // namespace wopbridge::cli
