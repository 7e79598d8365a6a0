#!/usr/bin/env bash
# Refresh the browser libraries vendored under static/vendor/ from the npm registry.
# Needs npm only here; running and testing the project never does (README, "The chat page").
# Bump a version below, run this script, look at the diff, commit.
set -euo pipefail

MARKED=18.2.1
DOMPURIFY=3.4.18
# The Django admin's code editor (inline tools' JavaScript): the classic single-file build, no bundler.
CODEMIRROR=5.65.20

root="$(cd "$(dirname "$0")/.." && pwd)"
vendor="$root/static/vendor"
scratch="$(mktemp -d)"
trap 'rm -rf "$scratch"' EXIT

fetch() {  # fetch NAME VERSION: the package's tarball unpacked in $scratch/NAME
  (cd "$scratch" && npm pack --silent "$1@$2" >/dev/null)
  mkdir -p "$scratch/$1"
  tar xzf "$scratch/$1-$2.tgz" -C "$scratch/$1" --strip-components=1
}

# Copy an ES module without its source-map comment: the map is not vendored, and Django's
# manifest storage would refuse a reference to a missing file at collectstatic.
module() {  # module SOURCE DESTINATION
  sed -e '/^\/\/# sourceMappingURL=/d' "$1" >"$2"
}

fetch marked "$MARKED"
fetch dompurify "$DOMPURIFY"
fetch codemirror "$CODEMIRROR"

rm -rf "$vendor/marked" "$vendor/dompurify" "$vendor/codemirror"
mkdir -p "$vendor/marked" "$vendor/dompurify" "$vendor/codemirror"
module "$scratch/marked/lib/marked.esm.js" "$vendor/marked/marked.esm.js"
cp "$scratch/marked/LICENSE" "$vendor/marked/LICENSE"
module "$scratch/dompurify/dist/purify.es.mjs" "$vendor/dompurify/purify.es.mjs"
cp "$scratch/dompurify/LICENSE" "$vendor/dompurify/LICENSE"
cp "$scratch/dompurify/LICENSE-MPL" "$vendor/dompurify/LICENSE-MPL"
cp "$scratch/codemirror/lib/codemirror.js" "$scratch/codemirror/lib/codemirror.css" "$vendor/codemirror/"
cp "$scratch/codemirror/mode/javascript/javascript.js" "$vendor/codemirror/mode-javascript.js"
cp "$scratch/codemirror/LICENSE" "$vendor/codemirror/LICENSE"

cat >"$vendor/VERSIONS" <<VERSIONS
# Written by scripts/refresh-vendor.sh from the npm registry; edit the versions there.
marked $MARKED (MIT) marked/marked.esm.js
dompurify $DOMPURIFY (Apache-2.0 or MPL-2.0) dompurify/purify.es.mjs
codemirror $CODEMIRROR (MIT) codemirror/codemirror.js, codemirror.css, mode-javascript.js (mode/javascript/javascript.js)
VERSIONS
echo "vendored: marked $MARKED, dompurify $DOMPURIFY, codemirror $CODEMIRROR into $vendor"
