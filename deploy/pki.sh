#!/bin/sh
# Writes a CA and one certificate per node name with openssl:
#   deploy/pki.sh OUTDIR NAME...
# OUTDIR/ca.crt, and OUTDIR/NAME.crt, OUTDIR/NAME.key for each NAME, each with CN=NAME and
# subjectAltName DNS:NAME, DNS:localhost, IP:127.0.0.1, URI:spiffe://logrelay/NAME,
# email:NAME@logrelay.test. Existing files are kept (safe to run again: a one-shot compose service).
#
# The CA key never lands in OUTDIR: it lives in PKI_CA_DIR (default OUTDIR-ca, beside it), which
# compose gives a volume of its own that no node mounts. Keys are 0600; PKI_OWNER (uid:gid) makes
# them the node user's. PKI_PER_NODE=1 writes OUTDIR/NAME/{ca.crt,NAME.crt,NAME.key} instead, so
# each node's volume holds its own key and nobody else's.
set -eu
umask 077
out=${1%/}; shift
ca_dir=${PKI_CA_DIR:-$out-ca}
mkdir -p "$out" "$ca_dir"
chmod 0755 "$out"
if [ ! -f "$ca_dir/ca.crt" ]; then
  openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 825 \
    -subj "/CN=logrelay-ca" -keyout "$ca_dir/ca.key" -out "$ca_dir/ca.crt" 2>/dev/null
fi
chmod 0600 "$ca_dir/ca.key"
for name in "$@"; do
  dir=$out
  [ "${PKI_PER_NODE:-0}" = 1 ] && dir=$out/$name
  mkdir -p "$dir"
  chmod 0755 "$dir"
  cp "$ca_dir/ca.crt" "$dir/ca.crt"
  chmod 0644 "$dir/ca.crt"
  [ -f "$dir/$name.crt" ] && [ -f "$dir/$name.key" ] && continue
  ext="$ca_dir/$name.ext"
  printf 'subjectAltName=DNS:%s,DNS:localhost,IP:127.0.0.1,URI:spiffe://logrelay/%s,email:%s@logrelay.test\nextendedKeyUsage=serverAuth,clientAuth\n' \
    "$name" "$name" "$name" > "$ext"
  openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj "/CN=$name" \
    -keyout "$dir/$name.key" -out "$ca_dir/$name.csr" 2>/dev/null
  openssl x509 -req -in "$ca_dir/$name.csr" -CA "$ca_dir/ca.crt" -CAkey "$ca_dir/ca.key" -CAcreateserial \
    -days 825 -extfile "$ext" -out "$dir/$name.crt" 2>/dev/null
  rm -f "$ca_dir/$name.csr" "$ext"
  chmod 0644 "$dir/$name.crt"
  chmod 0600 "$dir/$name.key"
  if [ -n "${PKI_OWNER:-}" ]; then chown "$PKI_OWNER" "$dir/$name.key" "$dir/$name.crt"; fi
done
