#include "support/nats_server.hpp"

#include "support/local_server_process.hpp"

#include <nats/nats.h>

#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <unistd.h>

namespace wopbridge::testing {

bool nats_server::available() {
    return on_path("nats-server");
}

nats_server::nats_server(nats_server_options options)
    : options_(std::move(options)), port_(free_loopback_port_or_throw("nats_server")) {
    if (!options_.defer_start) {
        start();
    }
}

nats_server::~nats_server() {
    if (pid_ > 0) {
        kill();
    }
}

std::string nats_server::url() const {
    return "nats://127.0.0.1:" + std::to_string(port_);
}

std::string nats_server::client_url() const {
    if (!options_.user.empty()) {
        return "nats://" + options_.user + ":" + options_.password +
               "@127.0.0.1:" + std::to_string(port_);
    }
    if (!options_.token.empty()) {
        return "nats://" + options_.token + "@127.0.0.1:" + std::to_string(port_);
    }
    return url();
}

std::string nats_server::log_text() const {
    std::ifstream in(dir_.file("nats.log"));
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

void nats_server::start() {
    if (pid_ > 0) {
        return;
    }
    std::vector<std::string> args{"nats-server", "-js",
                                  "-a",          "127.0.0.1",
                                  "-p",          std::to_string(port_),
                                  "-sd",         dir_.file("store"),
                                  "-l",          dir_.file("nats.log")};
    if (!options_.user.empty()) {
        args.insert(args.end(), {"--user", options_.user, "--pass", options_.password});
    }
    if (!options_.token.empty()) {
        args.insert(args.end(), {"--auth", options_.token});
    }
    pid_t pid = -1;
    const int rc = spawn_server({.argv = args}, pid);
    if (rc != 0) {
        throw std::runtime_error(std::string("nats_server: spawn failed: ") + std::strerror(rc));
    }
    pid_ = pid;
    if (!wait_ready()) {
        kill();
        throw std::runtime_error("nats_server: JetStream not ready within 15 s on port " +
                                 std::to_string(port_) + ": " + log_text());
    }
}

bool nats_server::wait_ready() {
    return wait_ready_while_running(pid_, std::chrono::seconds(15), [&] {
        // JetStream is up once its API answers, not when the port opens.
        bool ready = false;
        natsConnection* nc = nullptr;
        natsOptions* o = nullptr;
        natsOptions_Create(&o);
        natsOptions_SetURL(o, client_url().c_str());
        natsOptions_SetTimeout(o, 500);
        natsOptions_SetAllowReconnect(o, false);
        if (natsConnection_Connect(&nc, o) == NATS_OK) {
            jsCtx* js = nullptr;
            jsAccountInfo* ai = nullptr;
            if (natsConnection_JetStream(&js, nc, nullptr) == NATS_OK &&
                js_GetAccountInfo(&ai, js, nullptr, nullptr) == NATS_OK) {
                ready = true;
                jsAccountInfo_Destroy(ai);
            }
            jsCtx_Destroy(js);
            natsConnection_Destroy(nc);
        }
        natsOptions_Destroy(o);
        return ready;
    });
}

void nats_server::stop() {
    signal_and_reap(pid_, SIGTERM);
}

void nats_server::kill() {
    signal_and_reap(pid_, SIGKILL);
}

nats_client::nats_client(const std::string& url) {
    natsConnection* nc = nullptr;
    natsOptions* o = nullptr;
    natsOptions_Create(&o);
    natsOptions_SetURL(o, url.c_str());
    natsOptions_SetTimeout(o, 2000);
    // The test client follows the broker through a restart, like any real producer.
    natsOptions_SetMaxReconnect(o, -1);
    natsOptions_SetReconnectWait(o, 100);
    auto s = natsConnection_Connect(&nc, o);
    natsOptions_Destroy(o);
    if (s != NATS_OK) {
        error = std::string("connect: ") + natsStatus_GetText(s);
        return;
    }
    jsCtx* js = nullptr;
    jsOptions jo;
    jsOptions_Init(&jo);
    jo.Wait = 5000;
    s = natsConnection_JetStream(&js, nc, &jo);
    if (s != NATS_OK) {
        error = std::string("jetstream: ") + natsStatus_GetText(s);
        natsConnection_Destroy(nc);
        return;
    }
    nc_ = nc;
    js_ = js;
}

nats_client::~nats_client() {
    if (js_ != nullptr) {
        jsCtx_Destroy(static_cast<jsCtx*>(js_));
    }
    if (nc_ != nullptr) {
        natsConnection_Destroy(static_cast<natsConnection*>(nc_));
    }
}

bool nats_client::add_stream(const std::string& name, const std::string& subjects) {
    jsStreamConfig sc;
    jsStreamConfig_Init(&sc);
    sc.Name = name.c_str();
    const char* subj[] = {subjects.c_str()};
    sc.Subjects = subj;
    sc.SubjectsLen = 1;
    sc.Storage = js_FileStorage;
    jsErrCode code = static_cast<jsErrCode>(0);
    const auto s = js_AddStream(nullptr, static_cast<jsCtx*>(js_), &sc, nullptr, &code);
    if (s != NATS_OK) {
        error = std::string("add stream: ") + natsStatus_GetText(s) + " " +
                std::to_string(static_cast<int>(code));
        return false;
    }
    return true;
}

std::optional<std::uint64_t>
nats_client::publish(const std::string& subject, const std::string& data,
                     const std::vector<std::pair<std::string, std::string>>& headers) {
    natsMsg* msg = nullptr;
    if (natsMsg_Create(&msg, subject.c_str(), nullptr, data.data(),
                       static_cast<int>(data.size())) != NATS_OK) {
        error = "message";
        return std::nullopt;
    }
    for (const auto& [k, v] : headers) {
        natsMsgHeader_Add(msg, k.c_str(), v.c_str());
    }
    jsPubAck* ack = nullptr;
    jsErrCode code = static_cast<jsErrCode>(0);
    const auto s = js_PublishMsg(&ack, static_cast<jsCtx*>(js_), msg, nullptr, &code);
    natsMsg_Destroy(msg);
    if (s != NATS_OK || ack == nullptr) {
        error = std::string("publish: ") + natsStatus_GetText(s);
        return std::nullopt;
    }
    const auto seq = ack->Sequence;
    jsPubAck_Destroy(ack);
    return seq;
}

std::optional<consumer_state> nats_client::consumer(const std::string& stream,
                                                    const std::string& durable) {
    jsConsumerInfo* ci = nullptr;
    jsErrCode code = static_cast<jsErrCode>(0);
    const auto s = js_GetConsumerInfo(&ci, static_cast<jsCtx*>(js_), stream.c_str(),
                                      durable.c_str(), nullptr, &code);
    if (s != NATS_OK || ci == nullptr) {
        error = std::string("consumer info: ") + natsStatus_GetText(s);
        return std::nullopt;
    }
    consumer_state out;
    out.num_pending = ci->NumPending;
    out.num_ack_pending = ci->NumAckPending;
    out.num_redelivered = ci->NumRedelivered;
    out.delivered_stream_seq = ci->Delivered.Stream;
    out.ack_floor_stream_seq = ci->AckFloor.Stream;
    jsConsumerInfo_Destroy(ci);
    return out;
}

bool nats_client::delete_consumer(const std::string& stream, const std::string& durable) {
    jsErrCode code = static_cast<jsErrCode>(0);
    const auto s = js_DeleteConsumer(static_cast<jsCtx*>(js_), stream.c_str(), durable.c_str(),
                                     nullptr, &code);
    if (s != NATS_OK) {
        error = std::string("delete consumer: ") + natsStatus_GetText(s);
        return false;
    }
    return true;
}

bool nats_client::fetch_and_forget(const std::string& stream, const std::string& durable, int n) {
    jsSubOptions so;
    jsSubOptions_Init(&so);
    so.Stream = stream.c_str();
    so.Consumer = durable.c_str();
    so.ManualAck = true;
    natsSubscription* sub = nullptr;
    auto s = js_PullSubscribe(&sub, static_cast<jsCtx*>(js_), nullptr, durable.c_str(), nullptr,
                              &so, nullptr);
    if (s != NATS_OK) {
        error = std::string("pull subscribe: ") + natsStatus_GetText(s);
        return false;
    }
    int got = 0;
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (got < n && std::chrono::steady_clock::now() < until) {
        natsMsgList list{nullptr, 0};
        s = natsSubscription_Fetch(&list, sub, n - got, 500, nullptr);
        got += list.Count;
        natsMsgList_Destroy(&list);
    }
    natsSubscription_Destroy(sub);
    if (got < n) {
        error = "fetched " + std::to_string(got) + " of " + std::to_string(n);
        return false;
    }
    return true;
}

} // namespace wopbridge::testing
