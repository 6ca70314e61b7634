#!/usr/bin/env bash
# Builds the release binaries: static (CGO_ENABLED=0) linux/amd64 and
# linux/arm64, reproducibly (-trimpath, no build id, the version and commit
# stamped, the commit's time as the build time), into dist/ with
# SHA256SUMS. Two runs on one commit give the same bytes.
#   scripts/release.sh v1.2.3
set -euo pipefail
cd "$(dirname "$0")/.."
version="${1:?usage: scripts/release.sh VERSION}"
commit="$(git rev-parse HEAD 2>/dev/null || echo unknown)"
built="$(git log -1 --format=%cI 2>/dev/null || echo unknown)"
if [ -n "$(git status --porcelain 2>/dev/null)" ]; then commit="$commit+dirty"; fi
out="${DIST:-dist}"
rm -rf "$out" && mkdir -p "$out"
ldflags="-s -w -buildid= -X mailroom/internal/version.Version=$version -X mailroom/internal/version.Commit=$commit -X mailroom/internal/version.BuildTime=$built"
for arch in amd64 arm64; do
  name="mailroom-$version-linux-$arch"
  CGO_ENABLED=0 GOOS=linux GOARCH=$arch go build -trimpath -buildvcs=false -ldflags "$ldflags" -o "$out/$name" ./cmd/mailroom
done
cp LICENSE NOTICE "$out/"
(cd "$out" && sha256sum mailroom-* > SHA256SUMS)
cat "$out/SHA256SUMS"
