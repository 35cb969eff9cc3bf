// Every store backend of this build, the default first. A new backend is one row here plus its
// own folder under store/ (its store, its section reader and its checks: see store_backend.hpp).
#include "store/store_backend.hpp"

namespace wopbridge {

std::span<const store_backend> store_backends() {
    static const store_backend all[] = {sqlite_store_backend, postgres_store_backend};
    return all;
}

} // namespace wopbridge
