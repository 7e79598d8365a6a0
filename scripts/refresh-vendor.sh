#!/usr/bin/env bash
# Refresh the browser libraries vendored under static/vendor/ from the npm registry.
# Needs npm only here; running and testing the project never does (README, "The chat page").
# Bump a version below, run this script, look at the diff, commit.
set -euo pipefail

MARKED=18.2.1
DOMPURIFY=3.4.18
# The Django admin's code editor (inline tools' JavaScript): the classic single-file build, no bundler.
CODEMIRROR=5.65.20
UPLOT=1.6.32
LUCIDE=1.62.0
# Code blocks in answers: the ES build with the common languages, loaded by the page when a code block first shows.
HIGHLIGHT=11.12.0

root="$(cd "$(dirname "$0")/.." && pwd)"
vendor="$root/static/vendor"
scratch="$(mktemp -d)"
trap 'rm -rf "$scratch"' EXIT

fetch() {  # fetch NAME VERSION: the package's tarball unpacked in $scratch/NAME
  local tarball  # npm names a scoped package's tarball without its @ and slash: take the name it prints
  tarball="$(cd "$scratch" && npm pack --silent "$1@$2" | tail -n 1)"
  mkdir -p "$scratch/$1"
  tar xzf "$scratch/$tarball" -C "$scratch/$1" --strip-components=1
}

# Copy an ES module without its source-map comment: the map is not vendored, and Django's
# manifest storage would refuse a reference to a missing file at collectstatic.
module() {  # module SOURCE DESTINATION
  sed -e '/^\/\/# sourceMappingURL=/d' "$1" >"$2"
}

fetch marked "$MARKED"
fetch dompurify "$DOMPURIFY"
fetch codemirror "$CODEMIRROR"
fetch uplot "$UPLOT"
fetch lucide-static "$LUCIDE"
fetch @highlightjs/cdn-assets "$HIGHLIGHT"

rm -rf "$vendor/marked" "$vendor/dompurify" "$vendor/codemirror" "$vendor/uplot" "$vendor/lucide" "$vendor/highlight"
mkdir -p "$vendor/marked" "$vendor/dompurify" "$vendor/codemirror" "$vendor/uplot" "$vendor/lucide" "$vendor/highlight"
module "$scratch/marked/lib/marked.esm.js" "$vendor/marked/marked.esm.js"
cp "$scratch/marked/LICENSE" "$vendor/marked/LICENSE"
module "$scratch/dompurify/dist/purify.es.mjs" "$vendor/dompurify/purify.es.mjs"
cp "$scratch/dompurify/LICENSE" "$vendor/dompurify/LICENSE"
cp "$scratch/dompurify/LICENSE-MPL" "$vendor/dompurify/LICENSE-MPL"
cp "$scratch/codemirror/lib/codemirror.js" "$scratch/codemirror/lib/codemirror.css" "$vendor/codemirror/"
cp "$scratch/codemirror/mode/javascript/javascript.js" "$vendor/codemirror/mode-javascript.js"
cp "$scratch/codemirror/LICENSE" "$vendor/codemirror/LICENSE"
# uPlot draws the built-in chart widget; lucide's icon nodes (name -> SVG elements, compacted) give
# the widget chrome its `lucideIconName` icons, built with createElementNS, never parsed as HTML.
module "$scratch/uplot/dist/uPlot.esm.js" "$vendor/uplot/uPlot.esm.js"
cp "$scratch/uplot/dist/uPlot.min.css" "$vendor/uplot/uPlot.min.css"
cp "$scratch/uplot/LICENSE" "$vendor/uplot/LICENSE"
node -e 'const fs=require("fs");fs.writeFileSync(process.argv[2],JSON.stringify(JSON.parse(fs.readFileSync(process.argv[1],"utf8"))))' \
  "$scratch/lucide-static/icon-nodes.json" "$vendor/lucide/icon-nodes.json"
cp "$scratch/lucide-static/LICENSE" "$vendor/lucide/LICENSE"
module "$scratch/@highlightjs/cdn-assets/es/highlight.min.js" "$vendor/highlight/highlight.min.js"
cp "$scratch/@highlightjs/cdn-assets/LICENSE" "$vendor/highlight/LICENSE"

cat >"$vendor/VERSIONS" <<VERSIONS
# Written by scripts/refresh-vendor.sh from the npm registry; edit the versions there.
marked $MARKED (MIT) marked/marked.esm.js
dompurify $DOMPURIFY (Apache-2.0 or MPL-2.0) dompurify/purify.es.mjs
codemirror $CODEMIRROR (MIT) codemirror/codemirror.js, codemirror.css, mode-javascript.js (mode/javascript/javascript.js)
uplot $UPLOT (MIT) uplot/uPlot.esm.js uplot/uPlot.min.css
lucide-static $LUCIDE (ISC) lucide/icon-nodes.json
@highlightjs/cdn-assets $HIGHLIGHT (BSD-3-Clause) highlight/highlight.min.js (es/highlight.min.js, the common languages)
VERSIONS
echo "vendored: marked $MARKED, dompurify $DOMPURIFY, codemirror $CODEMIRROR, uplot $UPLOT, lucide-static $LUCIDE, highlight.js $HIGHLIGHT into $vendor"
