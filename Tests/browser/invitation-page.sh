#!/usr/bin/env bash
# Opens a pairing invitation's URL in headless Chromium, as a phone that scanned the
# code would, inside a network namespace of its own (loopback only: neither the
# browser nor the listener can reach anything else).
# Usage: unshare --net invitation-page.sh SYNCD OUTPUT-DIRECTORY
# Writes to OUTPUT-DIRECTORY: url (the invitation URL syncd pair printed),
# command (the command text in the page's DOM), page.png (a screenshot) and
# crafted-command (the same for the URL with a shell command in its fragment).
set -euo pipefail
syncd=$1 out=$2
ip link set lo up
data=$(mktemp -d)
# The pair process and the browser's helpers are gone before their directory is removed:
# a removal racing their last writes failed this script under load ("Directory not empty").
stop() { kill "${pair:-}" 2>/dev/null || true; wait "${pair:-}" 2>/dev/null || true; rm -rf "$data" || true; }
trap stop EXIT
trap 'echo "invitation-page.sh: line $LINENO failed with status $?" >&2' ERR
"$syncd" pair --data "$data" --address 127.0.0.1 --port 0 --name 'kitchen <&>' > "$out/pair.out" 2>&1 &
pair=$!
for _ in $(seq 1 600); do grep -q '^https://' "$out/pair.out" && break; sleep 0.1; done
url=$(grep -m1 '^https://' "$out/pair.out")
printf '%s' "$url" > "$out/url"
browser=(chromium --headless --no-sandbox --ignore-certificate-errors --disable-gpu --disable-dev-shm-usage --no-first-run
         --disable-extensions --user-data-dir="$data/browser")
timeout 60 "${browser[@]}" --dump-dom "$url" 2> "$out/browser.err" > "$out/dom.html"
sed -n 's|.*<pre id="command">\([^<]*\)</pre>.*|\1|p' "$out/dom.html" | sed 's/&amp;/\&/g; s/&lt;/</g; s/&gt;/>/g; s/&#39;/'"'"'/g' > "$out/command"
timeout 60 "${browser[@]}" --screenshot="$out/page.png" --window-size=500,900 "$url" 2>> "$out/browser.err" > /dev/null
crafted="${url%%#*}#${url#*#}';echo\${IFS}pwned;'"
timeout 60 "${browser[@]}" --dump-dom "$crafted" 2>> "$out/browser.err" > "$out/crafted.html"
sed -n 's|.*<pre id="command">\([^<]*\)</pre>.*|\1|p' "$out/crafted.html" > "$out/crafted-command"
