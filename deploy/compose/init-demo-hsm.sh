#!/bin/sh
# The demo HSM of docker-compose.yml: one SoftHSM2 token with an EC P-256 signing key, provisioned
# once, before any service instance opens it, on the volume both instances mount. Both instances
# must sign with the same key (a token issued by one is checked by the other), and a SoftHSM2 key
# cannot leave its token, so there is one token, not one per instance; provisioning runs here, in
# one process, because concurrent provisioning can create a second token with the same label.
# Idempotent: a completed provisioning leaves a marker, and later runs change nothing.
#
# Variables (defaults are the compose file's): DEMO_HSM_DIR, PKCS11_TOKEN_LABEL, JWT_KEY_LABEL,
# PKCS11_MODULE, PKCS11_PIN_FILE, PKCS11_SO_PIN_FILE. The PINs are read from files and never printed.
set -eu

dir=${DEMO_HSM_DIR:-/var/lib/platform/softhsm}
label=${PKCS11_TOKEN_LABEL:-platform}
key_label=${JWT_KEY_LABEL:-JWT_KEY}
module=${PKCS11_MODULE:-/usr/lib/softhsm/libsofthsm2.so}
pin=$(cat "${PKCS11_PIN_FILE:-/run/secrets/pkcs11_pin}")
so_pin=$(cat "${PKCS11_SO_PIN_FILE:-/run/secrets/pkcs11_so_pin}")
marker="$dir/provisioned"

if [ -f "$marker" ]; then
  echo "demo HSM: token \"$label\" in $dir is already provisioned; nothing to do"
  exit 0
fi

# No marker: no instance has ever used this folder (they start only after this script succeeded),
# so whatever an interrupted earlier run left is discarded and the token is made anew.
umask 077
rm -rf "$dir/tokens"
mkdir -p "$dir/tokens"
cat > "$dir/softhsm2.conf" <<CONF
directories.tokendir = $dir/tokens
objectstore.backend = file
log.level = ERROR
CONF
export SOFTHSM2_CONF="$dir/softhsm2.conf"

softhsm2-util --init-token --free --label "$label" --so-pin "$so_pin" --pin "$pin" > /dev/null
key_id=$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')
pkcs11-tool --module "$module" --token-label "$label" --login --pin "$pin" \
  --keypairgen --key-type EC:prime256v1 --label "$key_label" --id "$key_id" > /dev/null

keys=$(pkcs11-tool --module "$module" --token-label "$label" --login --pin "$pin" --list-objects --type privkey 2> /dev/null \
  | grep -c "label: *$key_label\$" || true)
if [ "$keys" != 1 ]; then
  echo "demo HSM: expected one private key \"$key_label\" on token \"$label\", found $keys" >&2
  exit 1
fi
echo "token=$label key=$key_label id=$key_id" > "$marker"
echo "demo HSM: token \"$label\" with key \"$key_label\" provisioned in $dir"
