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

TEST(GrpcCoreLog, TheTcpTracersReadLinesNameTheirPeer) {
  EXPECT_EQ(TcpTraceReadPeer("READ 0x7e08e801cb60 (peer=ipv4:127.0.0.1:49320) error=OK"), "ipv4:127.0.0.1:49320");
  EXPECT_EQ(TcpTraceReadPeer("READ 0x7e08 (peer=ipv6:[::1]:5000) error=OK"), "ipv6:[::1]:5000");
  // Writes, other lines, and damaged read lines name nobody.
  EXPECT_EQ(TcpTraceReadPeer("WRITE 0x7e08e801cb60 (peer=ipv4:127.0.0.1:49320)"), std::nullopt);
  EXPECT_EQ(TcpTraceReadPeer("READ 0x7e08 (peer=) error=OK"), std::nullopt);
  EXPECT_EQ(TcpTraceReadPeer("READ 0x7e08 (peer=ipv4:1.2.3.4:5"), std::nullopt);
  EXPECT_EQ(TcpTraceReadPeer("SERVER_CONNECT: incoming connection: ipv4:127.0.0.1:49314"), std::nullopt);

  EXPECT_TRUE(IsTcpTraceLine("./src/core/lib/iomgr/tcp_posix.cc", "READ 0x7e08 (peer=ipv4:1.2.3.4:5) error=OK"));
  EXPECT_TRUE(IsTcpTraceLine("./src/core/lib/iomgr/tcp_server_posix.cc", "SERVER_CONNECT: incoming connection"));
  EXPECT_TRUE(IsTcpTraceLine("./src/core/lib/gprpp/ref_counted.h", "tcp:0x7e08 ./src/core/lib/iomgr/tcp_posix.cc:1151 ref 2 -> 3 read"));
  EXPECT_FALSE(IsTcpTraceLine("./src/core/lib/gprpp/ref_counted.h", "chttp2_refcount:0x7e08 ref 1 -> 2"));
  EXPECT_FALSE(IsTcpTraceLine("./src/core/tsi/ssl_transport_security.cc",
                              "Handshake failed with fatal error SSL_ERROR_SSL: error:0A0000C7"));
}

}  // namespace
}  // namespace zkfleet::broker
