#!/usr/bin/env bash
# Checks the deployment files that can be checked without a container
# engine: the systemd unit (systemd-analyze verify, against a built binary)
# and the compose file (against the Compose Specification's JSON schema,
# from the compose-go module). Each check says when it cannot run.
set -euo pipefail
cd "$(dirname "$0")/.."
tmp="$(mktemp -d)"; trap 'rm -rf "$tmp"' EXIT

if command -v systemd-analyze >/dev/null; then
  go build -o "$tmp/mailroom" ./cmd/mailroom
  sed "s#/usr/local/bin/mailroom#$tmp/mailroom#" deploy/mailroom.service > "$tmp/mailroom.service"
  out="$(systemd-analyze verify "$tmp/mailroom.service" 2>&1 || true)"
  # Only lines about our unit count (verify also reports on units it pulls in).
  if echo "$out" | grep -q "mailroom.service"; then echo "$out"; exit 1; fi
  echo "deploy/mailroom.service: systemd-analyze verify passed"
else
  echo "deploy/mailroom.service: no systemd-analyze here, not checked"
fi

if python3 -c 'import yaml, jsonschema' 2>/dev/null; then
  dir="$(cd "$tmp" && go mod download -json github.com/compose-spec/compose-go/v2@v2.16.2 | sed -n 's/.*"Dir": "\(.*\)",/\1/p')"
  python3 - "$dir/schema/compose-spec.json" deploy/docker-compose.yml <<'PY'
import json, sys, yaml, jsonschema
schema = json.load(open(sys.argv[1]))
doc = yaml.safe_load(open(sys.argv[2]))
jsonschema.validate(doc, schema)
need = {"mailroom-1", "mailroom-2", "postgres", "redis", "proxy"}
missing = need - set(doc["services"])
assert not missing, f"services missing: {missing}"
print(f"{sys.argv[2]}: valid against the Compose Specification schema")
PY
else
  echo "deploy/docker-compose.yml: no python3 yaml/jsonschema here, not checked"
fi
