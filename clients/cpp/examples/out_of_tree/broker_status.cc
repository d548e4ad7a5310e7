// An application outside the zkfleet tree, built against an installed client
// (CMakeLists.txt beside this file, or pkg-config: docs/clients.md, "C++:
// installing and linking"). Asks a broker for its counters.
// usage: broker_status [ENDPOINT [CLIENT.secret BROKER.pub]]  (no keys: plaintext)
// Exits 0 with the counters, 3 when no broker answered in time, 1 on another error.
#include <iostream>
#include <string>
#include "zkfleet/client.h"

int main(int argc, char** argv) {
  if (argc > 4 || argc == 3 || (argc > 1 && std::string(argv[1]) == "--help")) {
    std::cerr << "usage: broker_status [ENDPOINT [CLIENT.secret BROKER.pub]]  (no keys: plaintext)\n";
    return argc > 1 && std::string(argv[1]) == "--help" ? 0 : 2;
  }
  zkfleet::client::Options options;
  if (argc > 1) options.endpoint = argv[1];
  if (argc == 4) {
    options.curve_secret_key_file = argv[2];
    options.broker_public_key_file = argv[3];
  } else {
    options.insecure_plaintext = true;
  }
  options.reply_timeout = std::chrono::seconds(2);
  std::unique_ptr<zkfleet::client::Client> client;
  zkfleet::proto::StatusReply status;
  zkfleet::client::Status s = zkfleet::client::Client::Open(options, &client);
  if (s.ok()) s = client->GetStatus(&status);
  if (!s.ok()) {
    std::cerr << s.ToString() << '\n';
    return s.code() == zkfleet::client::Code::kTimeout ? 3 : 1;
  }
  std::cout << "jobs submitted " << status.jobs_submitted() << ", completed " << status.jobs_completed() << ", failed "
            << status.jobs_failed() << "; " << status.workers_size() << " workers\n";
}
