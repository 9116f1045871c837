#!/bin/sh
# Writes the secrets of docker-compose.yml, random, into deploy/compose/secrets/ (or the folder given
# as the first argument), which git ignores. Existing secrets are never overwritten: the database
# and the HSM token are made with them. Needs only od, head and base64.
#
#   postgres_password          PostgreSQL's password (the postgres image reads POSTGRES_PASSWORD_FILE)
#   pkcs11_pin, pkcs11_so_pin  the demo token's user and SO PINs (the service reads PKCS11_PIN_FILE)
#   platform.env               DATABASE_URL, SECRET_PEPPER, DATA_ENCRYPTION_KEYS, PLATFORM_ADMIN_SECRET
set -eu

dir=${1:-$(dirname "$0")/secrets}
if [ -e "$dir/platform.env" ]; then
  echo "$dir/platform.env exists; secrets are never overwritten (remove the folder and the compose volumes to start over)"
  exit 0
fi
mkdir -p "$dir"
# The folder is the owner's only. The PIN and password files are mounted into containers whose users
# differ from the host's, so they stay readable inside that folder; platform.env is read by compose.
chmod 0700 "$dir"
hex() { od -An -N"$1" -tx1 /dev/urandom | tr -d ' \n'; }
b64() { head -c "$1" /dev/urandom | base64 | tr -d '\n'; }

postgres_password=$(hex 24)
printf '%s' "$postgres_password" > "$dir/postgres_password"
hex 12 > "$dir/pkcs11_pin"
hex 12 > "$dir/pkcs11_so_pin"
chmod 0644 "$dir/postgres_password" "$dir/pkcs11_pin" "$dir/pkcs11_so_pin"
umask 077
cat > "$dir/platform.env" <<ENV
DATABASE_URL=postgresql://platform:$postgres_password@postgres:5432/platform
SECRET_PEPPER=$(b64 32)
DATA_ENCRYPTION_KEYS=k1:$(b64 32)
PLATFORM_ADMIN_SECRET=$(hex 32)
ENV
echo "secrets written to $dir"
