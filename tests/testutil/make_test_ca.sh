#!/usr/bin/env bash
# A test CA for the gRPC front door's TLS and mTLS tests (openssl CLI only).
#
#   tests/testutil/make_test_ca.sh OUTDIR [CLIENT ...]
#
# Writes into OUTDIR:
#   ca.pem, ca.key                 the test CA
#   server.pem, server.key         the broker: CN=localhost, SAN DNS:localhost, IP:127.0.0.1
#   NAME.pem, NAME.key             a client certificate per CLIENT (CN=NAME), signed by the CA
#                                  (default clients: alice bob olga adam)
#   expired.pem, expired.key       CN=alice, signed by the CA, valid 2000-01-01 .. 2000-01-02
#   other-ca.pem, stranger.pem/.key  another CA, and a client CN=alice signed by it
#   twonames.pem, twonames.key     CN=alice and CN=nobody in one subject, signed by the CA
# Keys are EC P-256. Idempotent per OUTDIR: an existing ca.pem is kept.
set -euo pipefail
OUT=${1:?usage: make_test_ca.sh OUTDIR [CLIENT ...]}
shift
CLIENTS=("$@")
[[ ${#CLIENTS[@]} -gt 0 ]] || CLIENTS=(alice bob olga adam)
mkdir -p "$OUT"
cd "$OUT"

key() { openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$1" 2>/dev/null; }

# sign NAME CN CA_PREFIX EXTFILE [extra openssl x509 args]
sign() {
  local name=$1 cn=$2 ca=$3 ext=$4
  shift 4
  key "$name.key"
  openssl req -new -key "$name.key" -subj "/CN=$cn" -out "$name.csr" 2>/dev/null
  openssl x509 -req -in "$name.csr" -CA "$ca.pem" -CAkey "$ca.key" -CAcreateserial \
    -extfile "$ext" "$@" -out "$name.pem" 2>/dev/null
  rm -f "$name.csr"
}

if [[ ! -f ca.pem ]]; then
  key ca.key
  openssl req -x509 -new -key ca.key -subj "/CN=zkfleet test CA" -days 3650 -out ca.pem \
    -addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign,cRLSign" 2>/dev/null
  key other-ca.key
  openssl req -x509 -new -key other-ca.key -subj "/CN=another CA" -days 3650 -out other-ca.pem \
    -addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign,cRLSign" 2>/dev/null

  printf 'basicConstraints=CA:FALSE\nkeyUsage=digitalSignature,keyEncipherment\nextendedKeyUsage=serverAuth\nsubjectAltName=DNS:localhost,IP:127.0.0.1\n' > server.ext
  printf 'basicConstraints=CA:FALSE\nkeyUsage=digitalSignature,keyEncipherment\nextendedKeyUsage=clientAuth\n' > client.ext
  sign server localhost ca server.ext -days 3650
  sign stranger alice other-ca client.ext -days 3650
  # Expired: valid for one day in 2000. OpenSSL 3.0's x509 cannot set the
  # dates, so `openssl ca` signs it, with a throwaway database.
  key expired.key
  openssl req -new -key expired.key -subj "/CN=alice" -out expired.csr 2>/dev/null
  mkdir -p ca-db && : > ca-db/index.txt && echo 1000 > ca-db/serial
  cat > ca-db/ca.cnf <<CNF
[ca]
default_ca = test
[test]
dir = ca-db
database = ca-db/index.txt
serial = ca-db/serial
new_certs_dir = ca-db
certificate = ca.pem
private_key = ca.key
default_md = sha256
policy = any
copy_extensions = none
[any]
commonName = supplied
CNF
  openssl ca -batch -config ca-db/ca.cnf -in expired.csr -out expired.pem -notext \
    -startdate 20000101000000Z -enddate 20000102000000Z -extfile client.ext 2>/dev/null
  rm -rf expired.csr ca-db
fi
for c in "${CLIENTS[@]}"; do
  [[ -f "$c.pem" ]] || sign "$c" "$c" ca client.ext -days 3650
done
# Two common names in one subject (CN=alice, then CN=nobody): a caller whose
# name is ambiguous, signed by the CA all the same.
if [[ ! -f twonames.pem ]]; then
  key twonames.key
  openssl req -new -key twonames.key -subj "/CN=alice/CN=nobody" -out twonames.csr 2>/dev/null
  openssl x509 -req -in twonames.csr -CA ca.pem -CAkey ca.key -CAcreateserial -extfile client.ext -days 3650 \
    -out twonames.pem 2>/dev/null
  rm -f twonames.csr
fi
