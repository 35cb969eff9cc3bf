// The client subcommands: subscriptions, deliveries, dead-letters, runs. They talk to a running
// `wopbridge serve` over its HTTP API and print aligned tables (or the raw JSON with --json).
#include "cli/client_http.hpp"
#include "cli/commands.hpp"

#include <boost/json.hpp>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <unistd.h>
#include <vector>

namespace wopbridge::cli {
namespace {
namespace json = boost::json;

enum exit_code { ok = 0, failure = 1, usage = 2, not_found = 3, refused = 4 };

constexpr const char* common_help =
    "options:\n"
    "  --url URL       the bridge (default $WOPBRIDGE_URL or http://127.0.0.1:8080)\n"
    "  --api-key KEY   bearer API key (default $WOPBRIDGE_API_KEY)\n"
    "  --json          print the raw JSON response\n"
    "  --help          this text\n"
    "exit codes: 0 ok, 1 server/transport error, 2 usage, 3 not found, 4 conflict/refused\n";

const char* help_for(const std::string& group) {
    if (group == "subscriptions") {
        return "usage: wopbridge subscriptions [list]|show ID|pause ID|resume ID|delete ID "
               "[options]\n";
    }
    if (group == "deliveries") {
        return "usage: wopbridge deliveries list SUBSCRIPTION [options]\n";
    }
    if (group == "dead-letters") {
        return "usage: wopbridge dead-letters list SUBSCRIPTION [options]\n"
               "       wopbridge dead-letters replay SUBSCRIPTION (ATTEMPT_EVENT_ID | --all) "
               "[--rate N] [options]\n";
    }
    return "usage: wopbridge runs [list] [--subscription ID] [--workflow ID] [--status S]\n"
           "                      [--from RFC3339] [--to RFC3339] [--limit N] [--cursor C] "
           "[options]\n"
           "       wopbridge runs show RUN_ID [options]\n"
           "       wopbridge runs output RUN_ID [options]   a local workflow command's output\n"
           "  list: newest first; S is pending|running|completed|failed; when more runs match,\n"
           "  the next page's --cursor is printed on stderr\n";
}

std::string env_or(const char* name, std::string fallback) {
    const char* v = std::getenv(name);
    return v && *v ? std::string(v) : std::move(fallback);
}

std::string text_of(const json::value* v) {
    if (!v || v->is_null()) {
        return "-";
    }
    if (v->is_string()) {
        return std::string(v->as_string());
    }
    return json::serialize(*v);
}

std::string field(const json::object& o, std::initializer_list<const char*> names) {
    for (const char* n : names) {
        if (auto* v = o.if_contains(n)) {
            return text_of(v);
        }
    }
    return "-";
}

void print_table(const std::vector<std::string>& head, const std::vector<std::vector<std::string>>& rows) {
    std::vector<std::size_t> width(head.size());
    for (std::size_t i = 0; i < head.size(); ++i) {
        width[i] = head[i].size();
        for (const auto& r : rows) {
            width[i] = std::max(width[i], r[i].size());
        }
    }
    auto line = [&](const std::vector<std::string>& cells) {
        std::string out;
        for (std::size_t i = 0; i < cells.size(); ++i) {
            out += cells[i];
            if (i + 1 < cells.size()) {
                out += std::string(width[i] - cells[i].size() + 2, ' ');
            }
        }
        std::printf("%s\n", out.c_str());
    };
    line(head);
    for (const auto& r : rows) {
        line(r);
    }
}

// Maps an HTTP answer to an exit code, printing the error envelope's message on failure.
int check(const client_response& r) {
    if (r.status == 0) {
        std::fprintf(stderr, "wopbridge: cannot reach the bridge: %s\n", r.transport_error.c_str());
        return failure;
    }
    if (r.status >= 200 && r.status < 300) {
        return ok;
    }
    std::string message = r.body;
    boost::system::error_code ec;
    auto v = json::parse(r.body, ec);
    if (!ec && v.is_object()) {
        message = field(v.as_object(), {"error"}) + ": " + field(v.as_object(), {"message"});
    }
    std::fprintf(stderr, "wopbridge: HTTP %ld %s\n", r.status, message.c_str());
    if (r.status == 404) {
        return not_found;
    }
    if (r.status == 400 || r.status == 401 || r.status == 403 || r.status == 409) {
        return refused;
    }
    return failure;
}

json::object parse_object(const std::string& body) {
    boost::system::error_code ec;
    auto v = json::parse(body, ec);
    return !ec && v.is_object() ? v.as_object() : json::object{};
}

json::array array_of(const json::object& o, std::initializer_list<const char*> names) {
    for (const char* n : names) {
        if (auto* v = o.if_contains(n); v && v->is_array()) {
            return v->as_array();
        }
    }
    return {};
}

std::string path_segment(const std::string& s) {
    std::string out;
    for (unsigned char c : s) {
        if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~') {
            out += static_cast<char>(c);
        } else {
            char buf[4];
            std::snprintf(buf, sizeof buf, "%%%02X", c);
            out += buf;
        }
    }
    return out;
}

// One item of GET /v1/ops/subscriptions: {subscription, workflowId, createdAt, ...}.
std::vector<std::string> subscription_row(const json::object& item) {
    json::object s;
    if (auto* v = item.if_contains("subscription"); v && v->is_object()) {
        s = v->as_object();
    }
    return {field(s, {"subscriptionId"}), field(s, {"state"}), field(s, {"source"}),
            field(item, {"workflowId"}), field(item, {"createdAt"})};
}

int subscriptions(const client_options& o, const std::vector<std::string>& pos) {
    const std::string& verb = pos[0];
    const std::string base = "/v1/trigger-subscriptions";
    if (verb == "list" && pos.size() == 1) {
        if (o.json) {
            auto r = http_call(o, "GET", base);
            int rc = check(r);
            if (rc == ok) {
                std::printf("%s\n", r.body.c_str());
            }
            return rc;
        }
        // The TriggerSubscription record has neither the workflow nor the creation time; the
        // operator overview carries both.
        auto r = http_call(o, "GET", "/v1/ops/subscriptions");
        if (int rc = check(r); rc != ok) {
            return rc;
        }
        std::vector<std::vector<std::string>> rows;
        for (const auto& s : array_of(parse_object(r.body), {"subscriptions"})) {
            if (s.is_object()) {
                rows.push_back(subscription_row(s.as_object()));
            }
        }
        print_table({"ID", "STATE", "SOURCE", "WORKFLOW", "CREATED"}, rows);
        return ok;
    }
    if (pos.size() != 2) {
        std::fputs(help_for("subscriptions"), stderr);
        return usage;
    }
    const std::string path = base + "/" + path_segment(pos[1]);
    client_response r;
    if (verb == "show") {
        r = http_call(o, "GET", path);
    } else if (verb == "pause" || verb == "resume") {
        r = http_call(o, "PATCH", path,
                      verb == "pause" ? R"({"state":"paused"})" : R"({"state":"active"})");
    } else if (verb == "delete") {
        r = http_call(o, "DELETE", path);
    } else {
        std::fputs(help_for("subscriptions"), stderr);
        return usage;
    }
    int rc = check(r);
    if (rc != ok) {
        return rc;
    }
    if (o.json) {
        std::printf("%s\n", r.body.empty() ? "{}" : r.body.c_str());
        return ok;
    }
    if (verb == "delete") {
        std::printf("deleted %s\n", pos[1].c_str());
        return ok;
    }
    auto body = parse_object(r.body);
    json::object sub;
    if (auto* s = body.if_contains("subscription"); s && s->is_object()) {
        sub = s->as_object();
    }
    for (const auto& [k, v] : sub) {
        std::printf("%-20s %s\n", std::string(k).c_str(), text_of(&v).c_str());
    }
    if (verb == "show") {
        std::vector<std::vector<std::string>> rows;
        for (const auto& d : array_of(body, {"deliveries"})) {
            if (d.is_object()) {
                const auto& x = d.as_object();
                rows.push_back({field(x, {"deliveryId", "id"}), field(x, {"status"}),
                                field(x, {"attempts"}), field(x, {"receivedAt"}),
                                field(x, {"runId"})});
            }
        }
        std::printf("\nrecent deliveries:\n");
        print_table({"DELIVERY", "STATUS", "ATTEMPTS", "RECEIVED", "RUN"}, rows);
    }
    return ok;
}

int deliveries(const client_options& o, const std::vector<std::string>& pos) {
    if (pos.size() != 2 || pos[0] != "list") {
        std::fputs(help_for("deliveries"), stderr);
        return usage;
    }
    auto r = http_call(o, "GET", "/v1/trigger-subscriptions/" + path_segment(pos[1]) + "/deliveries");
    if (int rc = check(r); rc != ok || o.json) {
        if (rc == ok) {
            std::printf("%s\n", r.body.c_str());
        }
        return rc;
    }
    std::vector<std::vector<std::string>> rows;
    for (const auto& d : array_of(parse_object(r.body), {"deliveries", "items"})) {
        if (d.is_object()) {
            const auto& x = d.as_object();
            rows.push_back({field(x, {"deliveryId", "id"}), field(x, {"status"}),
                            field(x, {"attempts"}), field(x, {"receivedAt"}), field(x, {"dueAt"}),
                            field(x, {"runId"}), field(x, {"lastError"})});
        }
    }
    print_table({"DELIVERY", "STATUS", "ATTEMPTS", "RECEIVED", "DUE", "RUN", "LAST ERROR"}, rows);
    return ok;
}

int replay_job_progress(const client_options& o, const std::string& job_id) {
    bool tty = isatty(fileno(stderr)) != 0;
    for (;;) {
        auto r = http_call(o, "GET", "/v1/replay-jobs/" + path_segment(job_id));
        if (int rc = check(r); rc != ok) {
            return rc;
        }
        auto job = parse_object(r.body);
        std::string state = field(job, {"state"});
        if (tty) {
            std::fprintf(stderr, "\rreplay %s: %s  %s/%s replayed, %s delivered, %s failed   ",
                         job_id.c_str(), state.c_str(), field(job, {"replayed"}).c_str(),
                         field(job, {"total"}).c_str(), field(job, {"delivered"}).c_str(),
                         field(job, {"failed"}).c_str());
        }
        if (state != "running") {
            if (tty) {
                std::fputc('\n', stderr);
            }
            if (o.json) {
                std::printf("%s\n", r.body.c_str());
            } else {
                std::printf("job %s %s: %s of %s replayed, %s failed\n", job_id.c_str(),
                            state.c_str(), field(job, {"replayed"}).c_str(),
                            field(job, {"total"}).c_str(), field(job, {"failed"}).c_str());
            }
            return state == "completed" ? ok : refused;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(500));
    }
}

int dead_letters(const client_options& o, const std::vector<std::string>& pos, bool all,
                 const std::string& rate) {
    if (pos.size() < 2 || (pos[0] != "list" && pos[0] != "replay")) {
        std::fputs(help_for("dead-letters"), stderr);
        return usage;
    }
    const std::string base = "/v1/trigger-subscriptions/" + path_segment(pos[1]) + "/dead-letters";
    if (pos[0] == "list") {
        if (pos.size() != 2) {
            std::fputs(help_for("dead-letters"), stderr);
            return usage;
        }
        // The operator view: each dead letter with the delivery its replay created, if any.
        auto r = http_call(o, "GET",
                           "/v1/ops/subscriptions/" + path_segment(pos[1]) + "/dead-letters");
        if (int rc = check(r); rc != ok || o.json) {
            if (rc == ok) {
                std::printf("%s\n", r.body.c_str());
            }
            return rc;
        }
        std::vector<std::vector<std::string>> rows;
        for (const auto& item : array_of(parse_object(r.body), {"deadLetters"})) {
            if (!item.is_object()) {
                continue;
            }
            json::object x;
            if (auto* d = item.as_object().if_contains("deadLetter"); d && d->is_object()) {
                x = d->as_object();
            }
            std::string replay = "-";
            if (auto* rp = item.as_object().if_contains("replay"); rp && rp->is_object()) {
                replay = field(rp->as_object(), {"status"}) + " " +
                         field(rp->as_object(), {"runId"});
            } else if (field(x, {"reason"}) != "retries_exhausted") {
                replay = "not replayable";
            }
            rows.push_back({field(x, {"attemptEventId"}), field(x, {"reason"}),
                            field(x, {"deadLetteredAt"}), field(x, {"expiresAt"}), replay});
        }
        print_table({"ATTEMPT EVENT", "REASON", "DEAD-LETTERED", "EXPIRES", "REPLAY"}, rows);
        return ok;
    }
    if ((pos.size() == 3) == all || pos.size() > 3) {
        std::fputs(help_for("dead-letters"), stderr);
        return usage;
    }
    if (pos.size() == 3) {
        auto r = http_call(o, "POST", base + "/" + path_segment(pos[2]) + "/replay", "{}");
        int rc = check(r);
        if (rc == ok) {
            if (o.json) {
                std::printf("%s\n", r.body.c_str());
            } else {
                auto b = parse_object(r.body);
                std::printf("replayed as delivery %s, run %s\n", field(b, {"deliveryId"}).c_str(),
                            field(b, {"runId"}).c_str());
            }
        }
        return rc;
    }
    json::object req{{"all", true}};
    if (!rate.empty()) {
        char* end = nullptr;
        double n = std::strtod(rate.c_str(), &end);
        if (!end || *end || !(n > 0)) {
            std::fputs("wopbridge: --rate needs a positive number\n", stderr);
            return usage;
        }
        req["rate"] = n;
    }
    auto r = http_call(o, "POST", base + "/replay", json::serialize(req));
    if (int rc = check(r); rc != ok) {
        return rc;
    }
    std::string job = field(parse_object(r.body), {"jobId"});
    return replay_job_progress(o, job);
}

std::string query_part(const std::string& name, const std::string& value) {
    std::string out = name + "=";
    for (unsigned char c : value) {
        if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~' || c == ':') {
            out += static_cast<char>(c);
        } else {
            char buf[4];
            std::snprintf(buf, sizeof buf, "%%%02X", c);
            out += buf;
        }
    }
    return out;
}

int runs_list(const client_options& o, const arg_parser& p) {
    std::string query;
    const std::pair<const char*, const char*> params[] = {
        {"subscription", "subscriptionId"}, {"workflow", "workflowId"}, {"status", "status"},
        {"from", "from"}, {"to", "to"}, {"limit", "limit"}, {"cursor", "cursor"}};
    for (const auto& [opt, name] : params) {
        if (auto v = p.value(opt); !v.empty()) {
            query += (query.empty() ? "?" : "&") + query_part(name, v);
        }
    }
    auto r = http_call(o, "GET", "/v1/runs" + query);
    if (int rc = check(r); rc != ok || o.json) {
        if (rc == ok) {
            std::printf("%s\n", r.body.c_str());
        }
        return rc;
    }
    auto body = parse_object(r.body);
    std::vector<std::vector<std::string>> rows;
    for (const auto& run : array_of(body, {"runs"})) {
        if (run.is_object()) {
            const auto& x = run.as_object();
            std::string replay = "-";
            if (auto* rp = x.if_contains("replayOf"); rp && rp->is_object()) {
                replay = field(rp->as_object(), {"attemptEventId"});
            }
            rows.push_back({field(x, {"runId"}), field(x, {"status"}), field(x, {"workflowId"}),
                            field(x, {"subscriptionId"}), field(x, {"createdAt"}), replay});
        }
    }
    print_table({"RUN", "STATUS", "WORKFLOW", "SUBSCRIPTION", "CREATED", "REPLAY OF"}, rows);
    if (auto* next = body.if_contains("nextCursor"); next && next->is_string()) {
        std::fprintf(stderr, "more runs: --cursor %s\n", std::string(next->as_string()).c_str());
    }
    return ok;
}

int runs(const client_options& o, const std::vector<std::string>& pos, const arg_parser& p) {
    if (pos.empty() || (pos.size() == 1 && pos[0] == "list")) {
        return runs_list(o, p);
    }
    if (pos.size() == 2 && pos[0] == "output") {
        auto out = http_call(o, "GET", "/v1/runs/" + path_segment(pos[1]) + "/output");
        if (int rc = check(out); rc != ok) {
            return rc;
        }
        std::fwrite(out.body.data(), 1, out.body.size(), stdout);
        return ok;
    }
    if (pos.size() != 2 || pos[0] != "show") {
        std::fputs(help_for("runs"), stderr);
        return usage;
    }
    const std::string path = "/v1/runs/" + path_segment(pos[1]);
    auto snap = http_call(o, "GET", path);
    if (int rc = check(snap); rc != ok) {
        return rc;
    }
    auto evs = http_call(o, "GET", path + "/events/poll?timeout=1");
    if (int rc = check(evs); rc != ok) {
        return rc;
    }
    if (o.json) {
        std::printf("{\"run\":%s,\"events\":%s}\n", snap.body.c_str(), evs.body.c_str());
        return ok;
    }
    for (const auto& [k, v] : parse_object(snap.body)) {
        if (k == "replayOf" && v.is_object()) {
            // Provenance of a replayed run: which dead letter it replays.
            std::printf("%-16s dead letter %s of subscription %s\n", "replayOf",
                        field(v.as_object(), {"attemptEventId"}).c_str(),
                        field(v.as_object(), {"subscriptionId"}).c_str());
            continue;
        }
        std::printf("%-16s %s\n", std::string(k).c_str(), text_of(&v).c_str());
    }
    std::vector<std::vector<std::string>> rows;
    for (const auto& e : array_of(parse_object(evs.body), {"events"})) {
        if (e.is_object()) {
            const auto& x = e.as_object();
            rows.push_back({field(x, {"sequence"}), field(x, {"type"}), field(x, {"timestamp"}),
                            field(x, {"eventId"}), field(x, {"causationId"})});
        }
    }
    std::printf("\nevents:\n");
    print_table({"SEQ", "TYPE", "TIMESTAMP", "EVENT", "CAUSATION"}, rows);
    return ok;
}

} // namespace

int run_client(const std::string& group, const std::vector<std::string>& args) {
    arg_parser p(args);
    if (p.flag("help")) {
        std::printf("%s%s", help_for(group), common_help);
        return ok;
    }
    if (!p.error.empty()) {
        std::fprintf(stderr, "wopbridge %s: %s\n", group.c_str(), p.error.c_str());
        return usage;
    }
    client_options o;
    o.url = p.value("url").empty() ? env_or("WOPBRIDGE_URL", "http://127.0.0.1:8080") : p.value("url");
    o.api_key = p.value("api-key").empty() ? env_or("WOPBRIDGE_API_KEY", "") : p.value("api-key");
    o.json = p.flag("json");
    const auto& pos = p.positional();
    if (group == "subscriptions") {
        // `wopbridge subscriptions` alone lists them.
        return subscriptions(o, pos.empty() ? std::vector<std::string>{"list"} : pos);
    }
    if (group == "runs") {
        return runs(o, pos, p);
    }
    if (pos.empty()) {
        std::fputs(help_for(group), stderr);
        return usage;
    }
    if (group == "deliveries") {
        return deliveries(o, pos);
    }
    if (group == "dead-letters") {
        return dead_letters(o, pos, p.flag("all"), p.value("rate"));
    }
    return usage;
}

} // namespace wopbridge::cli
