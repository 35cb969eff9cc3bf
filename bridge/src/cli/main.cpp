// wopbridge: the program. Subcommands are dispatched in cli/commands.cpp.
#include <cstdio>
#include <cstring>

int main(int argc, char** argv) {
    if (argc < 2 || std::strcmp(argv[1], "--help") == 0) {
        std::puts("usage: wopbridge <serve|check-config|connectors|connector-check|reload> [options]");
        return argc < 2 ? 2 : 0;
    }
    std::fprintf(stderr, "wopbridge: unknown command '%s'\n", argv[1]);
    return 2;
}
