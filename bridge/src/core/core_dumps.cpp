#include "core/core_dumps.hpp"

#include <sys/prctl.h>
#include <sys/resource.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <string_view>

namespace wopbridge {

core_dump_policy apply_core_dump_policy() {
    core_dump_policy p;
    const char* opt_in = std::getenv("WOPBRIDGE_ALLOW_CORE_DUMPS");
    p.allowed = opt_in != nullptr && std::string_view(opt_in) == "1";
    if (p.allowed) {
        p.applied = true;
        p.detail = "allowed (WOPBRIDGE_ALLOW_CORE_DUMPS=1); keys stay excluded (MADV_DONTDUMP)";
        return p;
    }
    const rlimit none{0, 0};
    const bool no_core = ::setrlimit(RLIMIT_CORE, &none) == 0;
    const int core_errno = errno;
#if defined(__SANITIZE_ADDRESS__)
    // LeakSanitizer's exit check attaches to the process's threads with ptrace, which a
    // non-dumpable process refuses without CAP_SYS_PTRACE: the sanitizer build keeps RLIMIT_CORE 0.
    const bool not_dumpable = true;
    p.detail = "off (RLIMIT_CORE 0; PR_SET_DUMPABLE kept in the sanitizer build)";
#else
    const bool not_dumpable = ::prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) == 0;
    p.detail = "off (RLIMIT_CORE 0, PR_SET_DUMPABLE 0)";
#endif
    p.applied = no_core && not_dumpable;
    if (!no_core) {
        p.detail = std::string("RLIMIT_CORE could not be lowered: ") + std::strerror(core_errno);
    } else if (!not_dumpable) {
        p.detail = "PR_SET_DUMPABLE 0 refused";
    }
    return p;
}

} // namespace wopbridge
