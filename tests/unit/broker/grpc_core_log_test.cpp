// TlsRefusalReason: which of gRPC core's log lines report a TLS handshake the
// front door refused, and why (the lines as gRPC 1.51 writes them).
#include <gtest/gtest.h>

#include "zkfleet/broker/grpc_core_log.hpp"

namespace zkfleet::broker {
namespace {

TEST(GrpcCoreLog, RefusedHandshakesAreToldApartFromOtherLines) {
  EXPECT_EQ(TlsRefusalReason("Handshake failed with fatal error SSL_ERROR_SSL: error:0A0000C7:SSL "
                             "routines::peer did not return a certificate."),
            "no_certificate");
  EXPECT_EQ(TlsRefusalReason("Handshake failed with fatal error SSL_ERROR_SSL: error:0A000086:SSL "
                             "routines::certificate verify failed."),
            "certificate_not_trusted");
  EXPECT_EQ(TlsRefusalReason("Handshake failed with fatal error SSL_ERROR_SSL: error:0A00010B:SSL "
                             "routines::wrong version number."),
            "other");
  EXPECT_EQ(TlsRefusalReason("No address added out of total 1 resolved for '0.0.0.0:9443'"), std::nullopt);
  EXPECT_EQ(TlsRefusalReason(""), std::nullopt);
}

}  // namespace
}  // namespace zkfleet::broker
