#pragma once
// A throwaway PostgreSQL server for tests: initdb into a temp dir, listen on 127.0.0.1 on a free
// port, trust authentication, removed with everything on destruction. As root the server binaries
// run as the `postgres` system user (initdb refuses root). Tests that need it call
// postgres_server::shared() and GTEST_SKIP() with shared_unavailable_reason() when it is null.

#include <filesystem>
#include <memory>
#include <string>

namespace wopbridge::testing {

class postgres_server {
  public:
    // Starts a server; nullptr with a reason when the binaries are missing or it does not start.
    static std::unique_ptr<postgres_server> launch(std::string& why);
    // One server per test binary run, started on first use and stopped at exit.
    static postgres_server* shared();
    static std::string shared_unavailable_reason();

    ~postgres_server();
    postgres_server(const postgres_server&) = delete;
    postgres_server& operator=(const postgres_server&) = delete;

    int port() const noexcept { return port_; }
    // The cluster's data directory (its pg_wal/ holds the write-ahead log).
    std::filesystem::path data_dir() const { return dir_ / "data"; }
    std::string url(const std::string& database) const;

    // A new, empty database with a unique name; empty string on failure.
    std::string create_database();
    // Runs one SQL statement through psql; `output` gets the unaligned tuples-only result.
    bool sql(const std::string& database, const std::string& statement,
             std::string* output = nullptr);

    bool stop();  // fast shutdown, waits until it is down
    bool start(); // same data, same port; waits (bounded) until it accepts connections

  private:
    postgres_server() = default;
    bool wait_ready();
    std::string server_command(const std::string& program) const;
    std::string client_command(const std::string& program) const;

    std::filesystem::path bin_dir_;
    std::filesystem::path dir_;
    int port_ = 0;
    bool as_postgres_user_ = false;
    int next_database_ = 0;
};

} // namespace wopbridge::testing
