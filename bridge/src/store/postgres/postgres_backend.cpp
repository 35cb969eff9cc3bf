// The PostgreSQL backend's registration: `store.postgres` in the config file and how serve and
// check-config open it. Several nodes share one database, so a node's files live beside its
// config file and no node holds the store alone.
#include "store/postgres/postgres_backend.hpp"

#include "config/config_reader.hpp"
#include "store/store_backend.hpp"

namespace wopbridge {
namespace {

class configured_postgres_store final : public configured_store {
public:
    explicit configured_postgres_store(postgres_store_settings s) : s_(std::move(s)) {}

    const postgres_store_settings& settings() const { return s_; }

    std::string_view backend_name() const override { return "postgres"; }
    std::string display_name() const override { return "postgres"; }
    // The server is checked by connecting (open): nothing on this machine to look at first.
    void check_environment(const config&, std::vector<config_error>&) const override {}
    bool exists() const override { return true; }

    result<std::unique_ptr<store>, error_info> open(store_open_mode) const override {
        postgres_options po;
        po.url = s_.url;
        return open_postgres_store(po);
    }

    std::filesystem::path node_files_directory(const config& c) const override {
        return c.base_dir;
    }
    bool one_process_per_store() const override { return false; }
    millis node_timeout() const override { return s_.node_timeout_ms; }
    std::optional<std::string> checkable_file() const override { return std::nullopt; }
    std::string_view own_checks() const override {
        return "pg_amcheck for indexes, data checksums for pages";
    }

private:
    postgres_store_settings s_;
};

std::shared_ptr<const configured_store> read_postgres_section(config_detail::reader& r,
                                                              const YAML::Node& pg) {
    postgres_store_settings s;
    if (config_detail::reader::present(pg) && r.expect_map(pg, "store.postgres")) {
        r.check_keys(pg, "store.postgres", {"url", "nodeTimeout"});
        // Past this silence a node's claims are freed for the others: at least a few beats.
        r.duration(pg, "nodeTimeout", "store.postgres", s.node_timeout_ms, 3000);
        std::string url;
        if (r.str(pg, "url", "store.postgres", url, true, true)) {
            if (url.rfind("postgresql://", 0) != 0 && url.rfind("postgres://", 0) != 0) {
                r.error(pg["url"].Mark(), "store.postgres.url: expected a postgresql:// URL");
            } else {
                s.url = url;
            }
        }
    }
    return std::make_shared<configured_postgres_store>(std::move(s));
}

} // namespace

const store_backend postgres_store_backend{"postgres", &read_postgres_section};

const postgres_store_settings* postgres_settings_of(const store_config& s) {
    const auto* pg = dynamic_cast<const configured_postgres_store*>(s.backend.get());
    return pg != nullptr ? &pg->settings() : nullptr;
}

} // namespace wopbridge
