#!/bin/sh
# Writes a CA and one certificate per node name with openssl:
#   deploy/pki.sh OUTDIR NAME...
# OUTDIR/ca.crt, OUTDIR/ca.key, and OUTDIR/NAME.crt, OUTDIR/NAME.key for each NAME, each with
# CN=NAME and subjectAltName DNS:NAME, DNS:localhost, IP:127.0.0.1, URI:spiffe://logrelay/NAME,
# email:NAME@logrelay.test. Existing files are kept (safe to run again: a one-shot compose service).
set -eu
out=$1; shift
mkdir -p "$out"
if [ ! -f "$out/ca.crt" ]; then
  openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 825 \
    -subj "/CN=logrelay-ca" -keyout "$out/ca.key" -out "$out/ca.crt" 2>/dev/null
fi
for name in "$@"; do
  [ -f "$out/$name.crt" ] && continue
  ext="$out/$name.ext"
  printf 'subjectAltName=DNS:%s,DNS:localhost,IP:127.0.0.1,URI:spiffe://logrelay/%s,email:%s@logrelay.test\nextendedKeyUsage=serverAuth,clientAuth\n' \
    "$name" "$name" "$name" > "$ext"
  openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj "/CN=$name" \
    -keyout "$out/$name.key" -out "$out/$name.csr" 2>/dev/null
  openssl x509 -req -in "$out/$name.csr" -CA "$out/ca.crt" -CAkey "$out/ca.key" -CAcreateserial \
    -days 825 -extfile "$ext" -out "$out/$name.crt" 2>/dev/null
  rm -f "$out/$name.csr" "$ext"
done
chmod 0644 "$out"/*.crt "$out"/*.key
