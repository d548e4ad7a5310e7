#!/bin/sh
# Generates a throw-away PKI in DIR with the openssl CLI (for tests/unit/fetch
# and bench/fetch): ca.crt/ca.key (the test CA), server.crt/server.key (for
# 127.0.0.1 and localhost, by subjectAltName) and client.crt/client.key (a TLS
# client certificate from the same CA). P-256 keys: fast to make.
set -eu
dir=$1
openssl=${OPENSSL:-openssl}
cd "$dir"
$openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 2 \
  -subj /CN=zkfleet-test-ca -keyout ca.key -out ca.crt 2>/dev/null
printf 'subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth\n' > server.ext
$openssl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -subj /CN=localhost \
  -keyout server.key -out server.csr 2>/dev/null
$openssl x509 -req -in server.csr -CA ca.crt -CAkey ca.key -CAcreateserial -days 2 \
  -extfile server.ext -out server.crt 2>/dev/null
printf 'extendedKeyUsage=clientAuth\n' > client.ext
$openssl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -subj /CN=zkfleet-test-worker \
  -keyout client.key -out client.csr 2>/dev/null
$openssl x509 -req -in client.csr -CA ca.crt -CAkey ca.key -CAcreateserial -days 2 \
  -extfile client.ext -out client.crt 2>/dev/null
