// wopbridge: the program. One binary, several subcommands; `serve` is the bridge itself.
#include "cli/client_http.hpp"
#include "cli/commands.hpp"
#include "wopbridge/connector.h"

#include <cstdio>
#include <cstring>
#include <exception>
#include <string>
#include <vector>

namespace {

void print_usage(std::FILE* out) {
    std::fputs("usage: wopbridge <command> [options]\n"
               "\n"
               "commands:\n"
               "  serve --config FILE [--module-path DIR] [--listen ADDR] [--init]\n"
               "                                             run the bridge\n"
               "  check-config FILE                          validate a config file without starting\n"
               "  check-store --config FILE [--quick]        check the SQLite store's pages and "
               "indexes\n"
               "  reload --config FILE                       make a running bridge re-read its "
               "subscriptions (SIGHUP)\n"
               "  connectors [--module-path DIR]             list connector modules on the module path\n"
               "  connector-check MODULE.so [--config JSON]  run the connector conformance kit on a "
               "module\n"
               "  host-key status|add|retire --config FILE   rotate the store's host key\n"
               "  send --config FILE SUBSCRIPTION            send a test event as its provider would\n"
               "  version                                    print the version\n"
               "  subscriptions [list]|show|pause|resume|delete  manage a running bridge (client)\n"
               "  deliveries list SUB                        a subscription's deliveries (client)\n"
               "  dead-letters list|replay SUB ...           dead letters and replay (client)\n"
               "  runs [list] [--status S ...]               runs, newest first, with filters (client)\n"
               "  runs show RUN                              a run's snapshot and event log (client)\n"
               "  runs output RUN                            a local workflow command's output "
               "(client)\n"
               "\n"
               "Every command accepts --help.\n",
               out);
}

} // namespace

int main(int argc, char** argv) {
    std::vector<std::string> args(argv + 1, argv + argc);
    if (args.empty()) {
        print_usage(stderr);
        return 2;
    }
    const std::string cmd = args.front();
    args.erase(args.begin());
    try {
        if (cmd == "--help" || cmd == "-h" || cmd == "help") {
            print_usage(stdout);
            return 0;
        }
        if (cmd == "version" || cmd == "--version") {
            // One version source: CMake's project() version; beside it the connector ABI this host
            // loads (modules built against the same major and an older or equal minor).
            std::printf("wopbridge %s (connector ABI %d.%d)\n", WOPBRIDGE_VERSION,
                        WOPBRIDGE_ABI_MAJOR, WOPBRIDGE_ABI_MINOR);
            return 0;
        }
        if (cmd == "serve") {
            return wopbridge::cli::run_serve(args);
        }
        if (cmd == "reload") {
            return wopbridge::cli::run_reload(args);
        }
        if (cmd == "check-config") {
            return wopbridge::cli::run_check_config(args);
        }
        if (cmd == "check-store") {
            return wopbridge::cli::run_check_store(args);
        }
        if (cmd == "connectors") {
            return wopbridge::cli::run_connectors(args);
        }
        if (cmd == "send") {
            return wopbridge::cli::run_send(args);
        }
        if (cmd == "host-key") {
            return wopbridge::cli::run_host_key(args);
        }
        if (cmd == "connector-check") {
            return wopbridge::cli::run_connector_check(args);
        }
        if (cmd == "subscriptions" || cmd == "deliveries" || cmd == "dead-letters" || cmd == "runs") {
            return wopbridge::cli::run_client(cmd, args);
        }
    } catch (const std::exception& e) {
        std::fprintf(stderr, "wopbridge %s: %s\n", cmd.c_str(), e.what());
        return 1;
    }
    std::fprintf(stderr, "wopbridge: unknown command '%s' (see wopbridge --help)\n", cmd.c_str());
    return 2;
}
