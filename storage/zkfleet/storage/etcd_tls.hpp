// TLS to etcd's members: which files, shared by the client
// (etcd_client.hpp) and the journal's options (journal.hpp).
#pragma once

#include <string>

namespace zkfleet::storage {

// etcd's --cert-file/--key-file on the members, and with --client-cert-auth
// its --trusted-ca-file: PEM files, read when a client is made. Empty
// ca_file: plaintext HTTP/2 (a private network only).
struct EtcdTls {
  std::string ca_file;    // the CA that signs the members' certificates
  std::string cert_file;  // this client's certificate chain (mutual TLS), with key_file
  std::string key_file;
  bool enabled() const { return !ca_file.empty(); }
};

}  // namespace zkfleet::storage
