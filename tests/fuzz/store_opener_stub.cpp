// The store backends' rows (store/store_backends.cpp) read their `store:` sections, which the
// config fuzzer exercises, and also open stores, which it never does: these stand-ins keep
// config_fuzz from linking SQLite, libpq and the whole store.
#include "store/store.hpp"

#include <cstdlib>

namespace wopbridge {

result<std::unique_ptr<store>, error_info> open_sqlite_store(const sqlite_options&) {
    std::abort();
}
result<std::unique_ptr<store>, error_info> open_postgres_store(const postgres_options&) {
    std::abort();
}

} // namespace wopbridge
