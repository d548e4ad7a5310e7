// A fresh CURVE key pair for the broker's socket tests (ZAP handler, ingress
// guard), as short members: pub, sec (Z85, 40 characters each).
#pragma once

#include <string>

#include <gtest/gtest.h>
#include <zmq.h>

namespace zkfleet::broker {

struct Keys {
  std::string pub;
  std::string sec;
};

inline Keys NewKeys() {
  char pub[41];
  char sec[41];
  EXPECT_EQ(zmq_curve_keypair(pub, sec), 0);
  return {pub, sec};
}

}  // namespace zkfleet::broker
