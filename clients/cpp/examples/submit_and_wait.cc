// Submits one witness, waits for the proof, writes proof.json and public.json.
// usage: submit_and_wait ENDPOINT CLIENT.secret BROKER.pub CIRCUIT WITNESS.wtns
#include <fstream>
#include <iostream>
#include "zkfleet/client.h"

int main(int argc, char** argv) {
  if (argc != 6) return std::cerr << "usage: submit_and_wait ENDPOINT CLIENT.secret BROKER.pub CIRCUIT WITNESS\n", 2;
  zkfleet::client::Options options;
  options.endpoint = argv[1];
  options.curve_secret_key_file = argv[2];
  options.broker_public_key_file = argv[3];
  std::unique_ptr<zkfleet::client::Client> client;
  zkfleet::client::Job job;
  zkfleet::proto::JobResult result;
  zkfleet::client::Status s = zkfleet::client::Client::Open(options, &client);
  if (s.ok()) s = client->Submit({.circuit = argv[4]}, {zkfleet::client::Witness::FromFile(argv[5])}, &job);
  if (s.ok()) s = client->WaitResult(job.job_seq, std::chrono::minutes(5), &result);
  if (!s.ok()) return std::cerr << s.ToString() << '\n', 1;
  std::ofstream("proof.json") << result.partitions(0).proof_json();
  std::ofstream("public.json") << result.partitions(0).public_json();
  std::cout << "job " << job.job_seq << " proved\n";
}
